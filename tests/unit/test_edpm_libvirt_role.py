"""edpm_libvirt's tasks as written, without a node: where each file goes, with
which owner and mode, that secrets are never logged, and that the role takes
exactly the files the program renders."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jinja2
import yaml

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
    raw = _yaml("vars/main.yml")
    rendered = yaml.safe_load(env.from_string(yaml.safe_dump(raw)).render(**variables))
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


def test_ceph_secrets_are_kept_where_libvirts_secret_daemon_loads_them() -> None:
    tasks = _tasks("tasks/ceph_secrets.yml")
    assert _role_vars()["edpm_libvirt_secrets_dir"] == "/etc/libvirt/secrets"
    directory = tasks["Create libvirt's secrets directory"]["ansible.builtin.file"]
    assert (directory["owner"], directory["mode"]) == ("root", "0700")
    for name, suffix in (("Copy the Ceph secrets' definitions", "xml"), ("Copy the Ceph secrets' values", "base64")):
        copy = tasks[name]["ansible.builtin.copy"]
        assert (copy["src"], copy["dest"], copy["mode"]) == (
            f"{{{{ edpm_libvirt_config_src }}}}/secret-{{{{ item }}}}.{suffix}",
            f"{{{{ edpm_libvirt_secrets_dir }}}}/{{{{ item }}}}.{suffix}", "0600")
        assert tasks[name]["notify"] == "Restart libvirt"
    assert tasks["Copy the Ceph secrets' values"]["no_log"] is True
    # only Ceph's secrets are ever removed
    assert tasks["Find the Ceph secrets libvirt keeps"]["ansible.builtin.find"]["contains"] == ".*<usage type=.ceph.>"
    env = jinja2.Environment()  # with Ansible's test and filter the expression uses
    env.tests["match"] = lambda value, pattern: re.match(pattern, value) is not None
    env.filters["regex_replace"] = lambda value, pattern, replacement: re.sub(pattern, replacement, value)
    fsids = env.from_string(tasks["Read the Ceph secrets to keep"]["ansible.builtin.set_fact"][
        "edpm_libvirt_ceph_fsids"].strip()).render(
        edpm_libvirt_src_files=["secret-b.xml", "secret-b.base64", "secret-a.xml", "qemu.conf"])
    assert fsids == "['a', 'b']"


def test_with_tls_systemd_mode_opens_libvirts_tls_listener() -> None:
    tasks = _tasks("tasks/install.yml")
    socket = tasks["Enable or disable libvirt's TLS listener"]["ansible.builtin.systemd_service"]
    assert (socket["name"], socket["enabled"]) == ("virtproxyd-tls.socket",
                                                   "{{ edpm_libvirt_tls_certs_enabled | bool }}")
    assert _yaml("tasks/main.yml")[1]["when"] == "edpm_libvirt_start_mode == 'systemd'"


def test_by_default_the_daemons_run_from_host_packages_with_the_monolithic_libvirtd_masked() -> None:
    defaults = _yaml("defaults/main.yml")
    assert defaults["edpm_libvirt_start_mode"] == "systemd"
    assert defaults["edpm_libvirt_services"] == ["virtlogd", "virtnodedevd", "virtproxyd", "virtqemud", "virtsecretd"]
    assert _yaml("tasks/main.yml")[1]["when"] == "edpm_libvirt_start_mode == 'systemd'"
    tasks = _tasks("tasks/install.yml")
    assert tasks["Install libvirt and qemu"]["ansible.builtin.package"]["state"] == "present"
    mask = tasks["Mask the monolithic libvirtd"]
    assert mask["ansible.builtin.systemd_service"]["masked"] is True
    assert mask["loop"] == ["libvirtd.service", "libvirtd.socket", "libvirtd-ro.socket", "libvirtd-admin.socket"]
    assert tasks["Enable the daemons"]["loop"] == "{{ edpm_libvirt_services }}"
