"""edpm_libvirt's tasks as written, without a node: where each file goes, with
which owner and mode, that secrets are never logged, and that the role takes
exactly the files the program renders."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml
from ansible.plugins.filter import core, mathstuff

from components.render import LIBVIRT_DAEMONS, libvirt_config_files, libvirt_secret_files

ROLE = Path(__file__).resolve().parents[2] / "ansible" / "roles" / "edpm_libvirt"


def _yaml(path: str) -> Any:
    return yaml.safe_load((ROLE / path).read_text())


def _tasks(path: str) -> dict[str, Any]:
    """Tasks by name, those of blocks included."""
    found: dict[str, Any] = {}
    for task in _yaml(path):
        found[task["name"]] = task
        for inner in task.get("block", []):
            found[inner["name"]] = inner
    return found


def _role_vars(**overrides: Any) -> dict[str, Any]:
    """The role's variables, as Ansible resolves those of vars/main.yml."""
    variables = {**_yaml("defaults/main.yml"), **overrides}
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    for plugin in (core, mathstuff):  # Ansible's own filters (product, difference, ...)
        env.filters.update(plugin.FilterModule().filters())
    raw = _yaml("vars/main.yml")
    # vars/main.yml's own constants are there for its templates too
    rendered = yaml.safe_load(env.from_string(yaml.safe_dump(raw)).render(**{**raw, **variables}))
    return {**variables, **rendered}


def test_the_role_takes_exactly_the_files_the_program_renders() -> None:
    role = _role_vars()
    for tls in (False, True):
        rendered = {**libvirt_config_files(tls=tls), **libvirt_secret_files("pw", tls=tls)}
        required = ([f"{d}.conf" for d in role["edpm_libvirt_services"]] + role["edpm_libvirt_required_files"]
                    + (role["edpm_libvirt_tls_required_files"] if tls else []))
        # the node's certificate comes from the stack's CA, next to the rendered files
        assert set(rendered) | ({"tls.crt", "tls.key", "ca.crt"} if tls else set()) == set(required), tls
    assert role["edpm_libvirt_services"] == list(LIBVIRT_DAEMONS)


def test_the_node_certificate_goes_where_libvirt_and_qemu_look_for_it() -> None:
    role = _role_vars()
    assert [(f["src"], f["dest"], f["group"], f["mode"]) for f in role["edpm_libvirt_tls_files"]] == [
        ("tls.crt", "/etc/pki/libvirt/servercert.pem", "root", "0644"),
        ("tls.key", "/etc/pki/libvirt/private/serverkey.pem", "root", "0600"),
        ("tls.crt", "/etc/pki/libvirt/clientcert.pem", "root", "0644"),
        ("tls.key", "/etc/pki/libvirt/private/clientkey.pem", "root", "0600"),
        ("ca.crt", "/etc/pki/CA/cacert.pem", "root", "0644"),
        ("tls.crt", "/etc/pki/qemu/server-cert.pem", "qemu", "0640"),
        ("tls.key", "/etc/pki/qemu/server-key.pem", "qemu", "0640"),
        ("tls.crt", "/etc/pki/qemu/client-cert.pem", "qemu", "0640"),
        ("tls.key", "/etc/pki/qemu/client-key.pem", "qemu", "0640"),
        ("ca.crt", "/etc/pki/qemu/ca-cert.pem", "qemu", "0640"),
    ]
    assert (role["edpm_libvirt_qemu_group"], role["edpm_libvirt_qemu_group_id"]) == ("qemu", 107)
    tasks = _tasks("tasks/tls.yml")
    key = tasks["Copy the certificates' key"]
    assert key["no_log"] is True and key["diff"] is False
    assert "selectattr('src', 'equalto', 'tls.key')" in key["loop"]
    assert "rejectattr('src', 'equalto', 'tls.key')" in tasks["Copy the certificates"]["loop"]
    assert tasks["Lay out libvirt's and qemu's certificates"]["when"] == "edpm_libvirt_tls_certs_enabled | bool"
    # without TLS no key stays behind
    removed = tasks["Remove libvirt's and qemu's certificates"]
    assert (removed["ansible.builtin.file"]["state"], removed["loop"], removed["when"]) == (
        "absent", "{{ edpm_libvirt_tls_files }}", "not edpm_libvirt_tls_certs_enabled | bool")


def test_the_migration_users_password_is_written_as_upstreams_and_never_logged() -> None:
    tasks = _tasks("tasks/sasl.yml")
    auth = tasks["Copy libvirt's client credentials"]
    assert auth["no_log"] is True and auth["diff"] is False
    copy = auth["ansible.builtin.copy"]
    assert (copy["dest"], copy["owner"], copy["group"], copy["mode"]) == (
        "{{ edpm_libvirt_config_dest }}/auth.conf", "libvirt", "libvirt", "0600")
    write = tasks["Write the migration user's password into libvirt's SASL database"]
    role = _role_vars()
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    argv = [env.from_string(a).render(**role) for a in write["ansible.builtin.command"]["argv"]]
    # upstream: saslpasswd2 -f /etc/libvirt/passwd.db -p -a libvirt -u openstack migration
    assert argv == ["/usr/sbin/saslpasswd2", "-f", "/etc/libvirt/passwd.db", "-p", "-a", "libvirt", "-u",
                    "openstack", "migration"]
    # the password on stdin, read on the controller: never in argv, on the node's disk or in a log
    assert write["ansible.builtin.command"]["stdin"] == (
        "{{ lookup('ansible.builtin.file', edpm_libvirt_config_src ~ '/LibvirtPassword') }}")
    assert write["no_log"] is True
    assert write["when"] == "edpm_libvirt_sasl_stale | bool and not ansible_check_mode"
    # a drift check says what the command would change
    report = tasks["Report that libvirt's SASL database lacks the migration user's password"]
    assert (report["changed_when"], report["when"]) == (True, "edpm_libvirt_sasl_stale | bool and ansible_check_mode")
    listing = tasks["List the users of libvirt's SASL database"]
    assert (listing["check_mode"], listing["changed_when"]) == (False, False)
    private = tasks["Keep libvirt's SASL database readable by root only"]["ansible.builtin.file"]
    assert (private["owner"], private["mode"]) == ("root", "0600")
    assert tasks["Remove libvirt's SASL database"]["when"] == "not edpm_libvirt_tls_certs_enabled | bool"


def test_the_firewall_rules_go_where_edpm_nftables_reads_them() -> None:
    copy = _tasks("tasks/firewall.yml")["Copy libvirt's firewall rules"]["ansible.builtin.copy"]
    assert (copy["src"], copy["dest"], copy["mode"]) == (
        "{{ edpm_libvirt_config_src }}/libvirt-firewall.yaml", "{{ edpm_libvirt_firewall_dir }}/libvirt.yaml", "0640")
    assert _role_vars()["edpm_libvirt_firewall_dir"] == "/var/lib/edpm-config/firewall"


def test_ceph_secrets_go_through_the_running_secret_daemon_and_the_key_is_never_logged() -> None:
    """test_libvirt_ceph_secrets.py runs these tasks against a stand-in virsh."""
    tasks = _tasks("tasks/ceph_secrets.yml")
    # after the daemons run: after the handlers that restart them
    main = [t["name"] for t in _yaml("tasks/main.yml")]
    assert main[-2:] == ["Restart libvirt's daemons if anything changed",
                         "Keep the Ceph clusters' keys as libvirt secrets"]
    assert _role_vars()["edpm_libvirt_secret_definitions_dir"] == "/var/lib/openstack/config/libvirt-secrets"
    for name in ("Read the values libvirt holds for the Ceph secrets", "Find the secrets whose value libvirt lacks",
                 "Write each key into its file"):
        assert tasks[name]["no_log"] is True, name
    assert tasks["Write each key into its file"]["ansible.builtin.copy"]["mode"] == "0600"
    assert "--file" in tasks["Set the secrets' values from the files"]["ansible.builtin.command"]["argv"]
    block = tasks["Give libvirt the Ceph secrets' values"]
    assert [t["name"] for t in block["always"]] == ["Remove the keys' files"]
    assert "Restart libvirt" not in str(_yaml("tasks/ceph_secrets.yml"))  # no restart: the daemon takes them live
    env = jinja2.Environment()  # with Ansible's test and filter the expression uses
    env.tests["match"] = lambda value, pattern: re.match(pattern, value) is not None
    env.filters["regex_replace"] = lambda value, pattern, replacement: re.sub(pattern, replacement, value)
    fsids = env.from_string(tasks["Read the Ceph secrets to keep"]["ansible.builtin.set_fact"][
        "edpm_libvirt_ceph_fsids"].strip()).render(
        edpm_libvirt_src_files=["secret-b.xml", "secret-b.base64", "secret-a.xml", "qemu.conf"])
    assert fsids == "['a', 'b']"


def test_with_tls_the_role_opens_libvirts_tls_listener() -> None:
    tasks = _tasks("tasks/install.yml")
    socket = tasks["Enable or disable libvirt's TLS listener"]["ansible.builtin.systemd_service"]
    assert (socket["name"], socket["enabled"]) == ("virtproxyd-tls.socket",
                                                   "{{ edpm_libvirt_tls_certs_enabled | bool }}")
    # every node runs the daemons: no start mode lays out files only
    assert "when" not in _yaml("tasks/main.yml")[1]


def test_a_running_virtproxyd_is_stopped_before_its_tls_listener_first_starts() -> None:
    """systemd refuses to start a socket whose service runs: the role stops virtproxyd first, only
    while the TLS listener is not active yet (a node whose listener runs keeps its daemon)."""
    names = [t["name"] for t in _yaml("tasks/install.yml")]
    read, stop, start = ("Read whether libvirt's TLS listener is active",
                         "Stop virtproxyd so that systemd takes its new TLS listener",
                         "Enable or disable libvirt's TLS listener")
    assert names.index(read) < names.index(stop) < names.index(start)
    tasks = _tasks("tasks/install.yml")
    assert tasks[read]["ansible.builtin.systemd_service"] == {"name": "virtproxyd-tls.socket"}
    assert tasks[stop]["ansible.builtin.systemd_service"] == {"name": "virtproxyd.service", "state": "stopped"}
    when = tasks[stop]["when"]

    def stops(tls: bool, listener: str) -> bool:
        state = {"status": {"ActiveState": listener}} if tls else {"skipped": True}
        # Ansible stops at the first false condition: the skipped read has no status
        return all(_condition(c, edpm_libvirt_tls_certs_enabled=tls, edpm_libvirt_tls_listener_state=state)
                   for c in when)

    assert [stops(True, "inactive"), stops(True, "failed"), stops(True, "active")] == [True, True, False]
    assert not stops(False, "inactive")


def _ansible_env(*, strict: bool = True) -> jinja2.Environment:
    """Jinja with Ansible's filters and tests, as its templates and conditions see them; not
    strict where an expression reads a missing key through Ansible's `default`."""
    from ansible.plugins.test import core as core_tests

    env = jinja2.Environment(undefined=jinja2.StrictUndefined if strict else jinja2.Undefined)
    for plugin in (core, mathstuff):
        env.filters.update(plugin.FilterModule().filters())
    env.tests.update(core_tests.TestModule().tests())
    return env


def _condition(expression: str, **variables: Any) -> bool:
    return _ansible_env().from_string("{{ (" + expression + ") | bool }}").render(**variables) == "True"


def test_the_daemons_sockets_belong_to_the_libvirt_group_with_the_modes_the_configs_name() -> None:
    """Under socket activation systemd makes the sockets and ignores unix_sock_*: the drop-ins
    carry them, with the values the rendered configs name, so that the two never disagree."""
    tasks = _tasks("tasks/install.yml")
    role = _role_vars()
    sockets = _ansible_env().from_string(tasks["List the daemons' sockets"]["ansible.builtin.set_fact"][
        "edpm_libvirt_client_sockets"]).render(**role)
    client = yaml.safe_load(sockets.replace("(", "[").replace(")", "]"))
    # every daemon but virtlogd (for the daemons only), read-write and read-only
    assert sorted(f"{d}{kind}" for d, (kind, _) in client) == [
        f"{d}{kind}" for d in ("virtnodedevd", "virtproxyd", "virtqemud", "virtsecretd") for kind in ("", "-ro")]
    drop_in = tasks["Give the daemons' sockets to the libvirt group"]
    assert drop_in["notify"] == "Restart libvirt"
    configs = libvirt_config_files(tls=False)
    for daemon, (kind, mode) in client:
        content = drop_in["ansible.builtin.copy"]["content"]
        text = _ansible_env().from_string(content).render(item=[daemon, [kind, mode]])
        lines = [line for line in text.splitlines() if line and not line.startswith("#")]
        assert lines == ["[Socket]", "SocketGroup=libvirt", f"SocketMode={mode}"], (daemon, kind)
        conf = dict(line.replace(" ", "").split("=", 1) for line in configs[f"{daemon}.conf"].splitlines()
                    if "=" in line and not line.startswith("#"))
        assert conf["unix_sock_group"] == '"libvirt"'
        assert conf["unix_sock_ro_perms" if kind else "unix_sock_rw_perms"] == f'"{mode}"', (daemon, kind)
    # every socket stops (so that no client starts a daemon again), then the daemons; then
    # systemd makes the sockets anew and the daemons start
    handlers = yaml.safe_load((ROLE / "handlers" / "main.yml").read_text())
    assert [h["name"] for h in handlers] == [
        "Stop libvirt's sockets", "Stop libvirt's daemons", "Start libvirt's sockets", "Restart libvirt"]
    assert [h["ansible.builtin.systemd_service"]["state"] for h in handlers] == [
        "stopped", "stopped", "started", "restarted"]
    assert handlers[0]["loop"] == handlers[2]["loop"] == "{{ edpm_libvirt_socket_units }}"
    for tls, extra in ((False, []), (True, ["virtproxyd-tls.socket"])):
        listed = tasks["List the daemons' sockets"]["ansible.builtin.set_fact"]["edpm_libvirt_socket_units"]
        units = yaml.safe_load(_ansible_env().from_string(listed).render(
            **{**role, "edpm_libvirt_tls_certs_enabled": tls}).replace("'", '"'))
        assert sorted(units) == sorted([f"{d}{kind}.socket" for d in role["edpm_libvirt_services"]
                                        for kind in ("", "-ro", "-admin") if (d, kind) != ("virtlogd", "-ro")] + extra)


def test_on_a_reboot_guests_shut_down_after_nova_compute_stops_and_before_libvirt() -> None:
    tasks = _tasks("tasks/guests.yml")
    copy = tasks["Order libvirt-guests between nova_compute and libvirt's daemons"]["ansible.builtin.copy"]
    assert copy["dest"] == "/etc/systemd/system/libvirt-guests.service.d/10-edpm-libvirt.conf"
    text = _ansible_env().from_string(copy["content"]).render(**_role_vars())
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    # systemd stops in the reverse order of start: nova_compute, then the guests, then the daemons
    assert lines == ["[Unit]", "After=virtlogd.service virtnodedevd.service virtproxyd.service virtqemud.service "
                     "virtsecretd.service", "Before=edpm_nova_compute.service", "[Service]",
                     "Environment=ON_BOOT=ignore", "Environment=ON_SHUTDOWN=shutdown",
                     "Environment=SHUTDOWN_TIMEOUT=300"]
    enable = tasks["Enable libvirt-guests"]["ansible.builtin.systemd_service"]
    assert (enable["name"], enable["enabled"], enable["state"], enable["daemon_reload"]) == (
        "libvirt-guests.service", True, "started", True)


def test_libvirts_default_network_does_not_start_and_a_running_one_stops() -> None:
    tasks = _tasks("tasks/network.yml")
    link = tasks["Keep libvirt's default network from starting with the node"]["ansible.builtin.file"]
    assert (link["path"], link["state"]) == ("{{ edpm_libvirt_config_dest }}/qemu/networks/autostart/default.xml",
                                             "absent")
    stop = tasks["Stop libvirt's default network"]
    assert stop["ansible.builtin.command"]["argv"] == ["virsh", "-c", "network:///system", "net-destroy", "default"]
    assert stop["when"] == "edpm_libvirt_default_bridge.stat.exists"


def test_the_daemons_own_log_files_rotate() -> None:
    copy = _tasks("tasks/configure.yml")["Rotate the daemons' own log files"]["ansible.builtin.copy"]
    assert copy["dest"] == "{{ edpm_libvirt_logrotate }}" and _role_vars()["edpm_libvirt_logrotate"] == (
        "/etc/logrotate.d/edpm-libvirt")
    text = _ansible_env().from_string(copy["content"]).render(**_role_vars())
    body = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    # the daemons keep their file open: copied and truncated in place, bounded in size and count
    assert body[0] == "/var/log/libvirt/virt*.log {" and body[-1] == "}"
    assert {"copytruncate", "size 10M", "rotate 4", "compress", "missingok"} <= set(body)


@pytest.mark.parametrize(("status", "labels"), [("enabled", True), ("disabled", False),
                                                 ("Missing selinux Python library", False)])
def test_selinux_settings_apply_only_where_selinux_labels_files(status: str, labels: bool) -> None:
    shared = yaml.safe_load((ROLE.parent / "edpm_container_quadlet" / "tasks" / "selinux.yml").read_text())
    fact = shared[1]["ansible.builtin.set_fact"]["edpm_container_quadlet_selinux"]
    selinux = _condition(fact.strip("{} "), ansible_facts={"selinux": {"status": status}})
    assert selinux is labels
    block = _tasks("tasks/selinux.yml")["Set libvirt's SELinux state"]
    assert _condition(block["when"], edpm_container_quadlet_selinux=selinux) is labels
    tasks = _tasks("tasks/selinux.yml")
    vtpm = tasks["Let swtpm run guests' vTPM"]
    assert vtpm["ansible.builtin.command"]["argv"] == ["setsebool", "-P", "os_enable_vtpm", "on"]
    assert _condition(vtpm["when"], edpm_libvirt_vtpm_boolean={"stdout": "os_enable_vtpm --> off"})
    assert not _condition(vtpm["when"], edpm_libvirt_vtpm_boolean={"stdout": "os_enable_vtpm --> on"})
    restore = tasks["Give /run/libvirt back its own label"]
    assert _condition(restore["when"], edpm_libvirt_run_labels={"stdout": "/run/libvirt/virtqemud-sock"})
    assert not _condition(restore["when"], edpm_libvirt_run_labels={"stdout": ""})
    # the directories nova's containers mount: container_file_t only where SELinux labels files
    start = yaml.safe_load((ROLE.parent / "edpm_container_quadlet" / "tasks" / "start.yml").read_text())[0]
    setype = start["ansible.builtin.file"]["setype"]
    label = _ansible_env(strict=False).from_string(setype.replace("omit", "'-'"))
    rendered = label.render(edpm_container_quadlet_selinux=selinux,
                            item={"host": "/etc/iscsi", "setype": "container_file_t"})
    assert rendered == ("container_file_t" if labels else "-")
    assert label.render(
        edpm_container_quadlet_selinux=selinux, item={"host": "/run/libvirt"}) == "-"


def test_image_mode_hosts_install_nothing() -> None:
    """A bootc host's /usr is read-only: every package task of every role skips it."""
    roles = ROLE.parent
    found = []
    for path in sorted(roles.glob("*/tasks/*.yml")):
        for task in yaml.safe_load(path.read_text()) or []:
            for inner in [task, *task.get("block", [])]:
                if "ansible.builtin.package" in inner:
                    when = inner["when"] if isinstance(inner["when"], list) else [inner["when"]]
                    found.append(str(path.relative_to(roles)))
                    assert any("ostree_booted.stat.exists" in w and w.startswith("not ") for w in when), path
    assert found == ["edpm_container_quadlet/tasks/podman.yml", "edpm_libvirt/tasks/install.yml"]
    # nor does any role write below /usr
    for path in sorted(roles.glob("*/*/*.yml")):
        assert not re.search(r"dest: /usr/|path: /usr/", path.read_text()), path


def test_the_daemons_run_from_host_packages_with_the_monolithic_libvirtd_masked() -> None:
    defaults = _yaml("defaults/main.yml")
    assert defaults["edpm_libvirt_services"] == ["virtlogd", "virtnodedevd", "virtproxyd", "virtqemud", "virtsecretd"]
    tasks = _tasks("tasks/install.yml")
    assert tasks["Install libvirt and qemu"]["ansible.builtin.package"]["state"] == "present"
    mask = tasks["Mask the monolithic libvirtd"]
    assert mask["ansible.builtin.systemd_service"]["masked"] is True
    assert mask["loop"] == ["libvirtd.service", "libvirtd.socket", "libvirtd-ro.socket", "libvirtd-admin.socket"]
    assert tasks["Enable the daemons"]["loop"] == "{{ edpm_libvirt_services }}"
    # enabled for boot, but not wanted running: an idle daemon exits (--timeout 120) and its socket
    # starts it again, so a refresh of an idle node finds no drift
    assert tasks["Enable the daemons"]["ansible.builtin.systemd_service"] == {
        "name": "{{ item }}.service", "enabled": True}
    assert tasks["Enable the daemons' sockets"]["ansible.builtin.systemd_service"]["state"] == "started"
