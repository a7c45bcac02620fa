"""The EDPM data plane on the test nodes: what lands where, with which modes,
only on the nodes a change concerns, and what a node may not do."""

from __future__ import annotations

import base64
import configparser
import json
import os
import re
import signal
import socket
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest
import yaml

from components.ansible_runner.playbook import TYPE as PLAYBOOK_RUN
from components.ansible_runner.playbook import run_playbook
from components.render import LIBVIRT_DAEMONS, AgentLayout, libvirt_config_files, neutron_metadata_agent_files
from components.settings import Ovn
from tests.integration.local_env import (
    ENV,
    NODES,
    ROOT,
    kubectl_json,
    node,
    node_unit_pids,
    pulumi,
    revealed,
    run,
    stack_output,
    up,
)
from tests.integration.nova_compute import eventually, in_compute
from tests.integration.stacks import Stack

NODE0_PATH = "dataplane.nodeSets.edpm-compute.nodes.edpm-compute-0"


def nova_conf(name: str, option: str) -> str:
    """What nova-compute on the node loads for `option` (first line of make nova-conf)."""
    proc = run(str(ROOT / "devenv" / "nova-conf.sh"), name, option)
    return proc.stdout.splitlines()[0].split(" = ", 1)[1]


def stat(name: str, pattern: str, where: Callable[[str, str], CompletedProcess[str]] = node,
         owner: str = "%U") -> dict[str, str]:
    """name -> "mode owner" of the files of `pattern` on the node (or, with where=in_compute, in its
    nova_compute container); owner="%u" gives the owner's uid (for users that only the image has)."""
    out = where(name, f"stat -c '%n %a {owner}' {pattern}").stdout
    return {line.split()[0].rsplit("/", 1)[-1]: " ".join(line.split()[1:]) for line in out.splitlines()}


def test_nodes_of_two_cells_talk_to_their_cells_bus(dev_stack: str) -> None:
    urls = {n: in_compute(n, "grep ^transport_url /etc/nova/nova.conf.d/01-nova.conf").stdout for n in NODES}
    assert "@rabbitmq-cell1.openstack.svc:5672/" in urls["edpm-compute-0"]
    assert "@rabbitmq-cell2.openstack.svc:5672/" in urls["edpm-compute-1"]


def test_node_files_have_their_modes_and_owners(dev_stack: str) -> None:
    src = stat("edpm-compute-0", "/var/lib/openstack/nova/*")
    assert src["01-nova.conf"] == "600 root" and src["ssh-privatekey"] == "600 root"
    assert src["02-nova-host-specific.conf"] == "644 root"
    loaded = stat("edpm-compute-0", "/etc/nova/nova.conf.d/*", where=in_compute)
    assert set(loaded) >= {"01-nova.conf", "02-nova-host-specific.conf"}
    assert set(loaded.values()) == {"600 nova"}
    metadata = stat("edpm-compute-0", "/var/lib/openstack/neutron-ovn-metadata-agent/*")
    assert metadata["05-nova-metadata.conf"] == "600 root"
    assert stat("edpm-compute-0", "/var/lib/nova/compute_id")["compute_id"] == "400 nova"


def test_libvirt_config_is_laid_out_for_its_daemons(dev_stack: str) -> None:
    # the dev stack keeps libvirt's TLS off and QEMU's inherited limits (qemuMaxProcesses, qemuMaxFiles: 0)
    rendered = libvirt_config_files(tls=False, qemu_max_processes=0, qemu_max_files=0)
    for name in NODES:
        # the program's files among those libvirt's packages put in /etc/libvirt
        ours = " ".join(f"/etc/libvirt/{d}.conf" for d in (*LIBVIRT_DAEMONS, "qemu", "auth"))
        owners = node(name, f"stat -c '%n %a %U:%G' {ours} /etc/sasl2/libvirt.conf "
                            "/var/lib/edpm-config/firewall/libvirt.yaml").stdout.splitlines()
        assert sorted(owners) == sorted(
            [f"/etc/libvirt/{d}.conf 640 root:libvirt" for d in (*LIBVIRT_DAEMONS, "qemu")]
            + ["/etc/libvirt/auth.conf 600 libvirt:libvirt", "/etc/sasl2/libvirt.conf 640 root:libvirt",
               "/var/lib/edpm-config/firewall/libvirt.yaml 640 root:root"])
        assert node(name, "cat /etc/libvirt/virtqemud.conf").stdout == rendered["virtqemud.conf"]
        assert node(name, "cat /etc/sasl2/libvirt.conf").stdout == rendered["sasl2-libvirt.conf"]
        # the rules for VNC and migration, where edpm_nftables reads them; no TLS rule
        rules = yaml.safe_load(node(name, "cat /var/lib/edpm-config/firewall/libvirt.yaml").stdout)
        assert [(r["rule_name"], r["rule"]["dport"]) for r in rules] == [
            ("005 Allow vnc access on all networks.", ["5900-6923"]),
            ("006 Allow libvirt live migration traffic", ["61152-61215"])], name
        # without TLS: no credentials, no SASL database, no certificates
        assert "password" not in node(name, "cat /etc/libvirt/auth.conf").stdout, name
        assert node(name, "ls /etc/libvirt/passwd.db /etc/pki/libvirt/private/serverkey.pem "
                          "/etc/pki/qemu/server-key.pem").stdout == "", name
    # each node's rules are its own (the directory is private to the node)
    assert node(NODES[0], "stat -c %i /var/lib/edpm-config").stdout != node(NODES[1], "stat -c %i "
                                                                                  "/var/lib/edpm-config").stdout


AGENT_DIR = "/var/lib/openstack/neutron-ovn-metadata-agent"


def _agent_image() -> str:
    """The locally built agent image the dev stack names (its haproxy containers run it too)."""
    return str(yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())["config"][
        "openstack-nova:images"]["neutronMetadataAgent"])


def _neutron_uid(name: str) -> str:
    """The uid of the agent image's neutron user, which kolla gives /var/lib/neutron at each start
    of the agent's container (the host has no such user)."""
    neutron = node(name, f"podman run --rm --network none --entrypoint id {_agent_image()} -u neutron").stdout.strip()
    assert neutron.isdigit() and neutron != "0", (name, neutron)
    return neutron


def test_the_metadata_agent_is_laid_out_as_upstream(dev_stack: str) -> None:
    image = _agent_image()
    rendered = neutron_metadata_agent_files(
        AgentLayout(image=image, sidecar_image=image, sidecar_debug=False, config_dir=AGENT_DIR,
                    lib_dir="/var/lib/neutron"),
        Ovn(sb_connection="tcp:ovsdbserver-sb.openstack.svc:6642"))
    secret = base64.b64decode(kubectl_json("get", "secret", "-n", "openstack", "nova-metadata-neutron-config")
                              ["data"]["05-nova-metadata.conf"]).decode()
    for name in NODES:
        assert stat(name, f"{AGENT_DIR}/*") == {
            "01-neutron-ovn-metadata-agent.conf": "644 root", "01-rootwrap.conf": "644 root",
            "05-nova-metadata.conf": "600 root", "10-neutron-metadata.conf": "644 root"}, name
        for conf in ("01-neutron-ovn-metadata-agent.conf", "01-rootwrap.conf", "10-neutron-metadata.conf"):
            assert node(name, f"cat {AGENT_DIR}/{conf}").stdout == rendered[conf], (name, conf)
        assert node(name, f"cat {AGENT_DIR}/05-nova-metadata.conf").stdout == secret, name
        kolla = "/var/lib/kolla/config_files/ovn_metadata_agent.json"
        assert stat(name, kolla) == {"ovn_metadata_agent.json": "600 root"}, name
        assert node(name, f"cat {kolla}").stdout == rendered["ovn_metadata_agent.json"], name
        # kolla gives /var/lib/neutron to the image's neutron user at each start; the agent's own
        # proxy socket is there once it runs
        neutron = _neutron_uid(name)
        assert stat(name, "/var/lib/neutron/*", owner="%u") == {
            "external": f"755 {neutron}", "kill_scripts": f"755 {neutron}", "ovn-metadata-proxy": f"755 {neutron}",
            "ovn_metadata_haproxy_wrapper": f"755 {neutron}", "metadata_proxy": "755 0"}, name
        assert stat(name, "/var/lib/neutron/kill_scripts/* /var/lib/neutron/external/pids", owner="%u") == {
            "haproxy-kill": f"755 {neutron}", "pids": f"755 {neutron}"}, name
        for script, path in (("ovn_metadata_haproxy_wrapper", "/var/lib/neutron/ovn_metadata_haproxy_wrapper"),
                             ("haproxy-kill", "/var/lib/neutron/kill_scripts/haproxy-kill")):
            assert node(name, f"cat {path}").stdout == rendered[script], (name, script)
            assert node(name, f"bash -n {path}").returncode == 0, (name, script)


HEALTHCHECK_DIR = "/var/lib/openstack/healthchecks/ovn_metadata_agent"


def test_the_metadata_agents_health_check_is_in_place_and_runs_on_the_node(dev_stack: str) -> None:
    """The script podman runs in the agent's container; run on the node itself (the container
    shares its PID and network namespaces) it finds the agent serving and connected too."""
    script = (ROOT / "ansible" / "roles" / "edpm_neutron_metadata" / "files"
              / "ovn_metadata_agent_healthcheck.py").read_text()
    for name in NODES:
        assert stat(name, f"{HEALTHCHECK_DIR} {HEALTHCHECK_DIR}/healthcheck") == {
            "ovn_metadata_agent": "700 root", "healthcheck": "700 root"}, name
        assert node(name, f"cat {HEALTHCHECK_DIR}/healthcheck").stdout == script, name
        check = eventually(lambda: node(name, f"{HEALTHCHECK_DIR}/healthcheck --config-dir {AGENT_DIR}"),  # noqa: B023
                           lambda c: c.returncode == 0, seconds=120)
        assert check.returncode == 0 and check.stdout.startswith(
            "healthy: neutron-ovn-metadata-agent (pid "), (name, check.stdout)


def test_the_metadata_agent_would_reach_nova_and_ovn(dev_stack: str) -> None:
    """The agent's options as it loads them: its config directory's *.conf in name order, later wins."""
    for name in NODES:
        loaded = sorted(node(name, f"ls {AGENT_DIR}").stdout.split())
        merged = configparser.ConfigParser(interpolation=None, strict=False)
        for conf in (c for c in loaded if c.endswith(".conf")):
            merged.read_string(node(name, f"cat {AGENT_DIR}/{conf}").stdout)
        assert merged["DEFAULT"]["nova_metadata_host"] == "nova-metadata-internal.openstack.svc", name
        assert (merged["DEFAULT"]["nova_metadata_port"], merged["DEFAULT"]["nova_metadata_protocol"]) == (
            "8775", "http"), name
        assert merged["DEFAULT"]["metadata_proxy_shared_secret"], name
        assert merged["ovn"]["ovn_sb_connection"] == "tcp:ovsdbserver-sb.openstack.svc:6642", name
        assert merged["agent"]["root_helper"] == "sudo neutron-rootwrap /etc/neutron/rootwrap.conf", name
        assert merged["ovs"]["ovsdb_connection"] == "tcp:127.0.0.1:6640", name


def _state_props(stack: str, resource: str) -> dict[str, Any]:
    state = json.loads(pulumi("stack", "export", "--show-secrets", "-s", stack).stdout)
    found = next(r for r in state["deployment"]["resources"] if r["urn"].endswith(f"::{resource}"))
    return {k: revealed(v) for k, v in found["inputs"].items()}


def _listening(address: str, port: int) -> bool:
    try:
        socket.create_connection((address, port), timeout=1).close()
    except OSError:
        return False
    return True


@contextmanager
def stranger_sshd(workdir: Path) -> Iterator[str]:
    """An SSH server on the nodes' network that is no node of the stack: its address."""
    key = workdir / "stranger_host_key"
    run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key))
    address, port = "192.168.122.1", 2222
    server = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", "/dev/null", "-h", str(key), "-p", str(port),
                               "-o", f"ListenAddress={address}", "-o", "PidFile=none"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        eventually(lambda: _listening(address, port), bool, seconds=10)
        yield f"-p {port} {address}"
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_computes_verify_each_others_host_keys_when_they_migrate(dev_stack: str, tmp_path: Path) -> None:
    # as nova in its container, where libvirt's qemu+ssh runs it: the migration key and nova's
    # ssh config (StrictHostKeyChecking yes), the node's known hosts mounted
    as_nova = "ssh -o BatchMode=yes"
    assert in_compute(NODES[0], "id -un").stdout.strip() == "nova"
    peer = in_compute(NODES[0], f"{as_nova} 192.168.122.101 hostname")
    assert (peer.returncode, peer.stdout.strip()) == (0, NODES[1]), peer.stderr
    back = in_compute(NODES[1], f"{as_nova} 192.168.122.100 hostname")
    assert (back.returncode, back.stdout.strip()) == (0, NODES[0]), back.stderr
    with stranger_sshd(tmp_path) as stranger:
        refused = in_compute(NODES[0], f"{as_nova} {stranger} hostname")
    assert refused.returncode == 255
    assert "Host key verification failed." in refused.stderr
    known = node(NODES[0], "cat /etc/ssh/ssh_known_hosts").stdout
    assert "# BEGIN ANSIBLE MANAGED BLOCK" in known and "edpm-compute-1,192.168.122.101 ssh-ed25519 " in known


def test_direct_ansible_rerun_changes_nothing(dev_stack: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    for resource in ("edpm-compute-0-nova", "edpm-compute-0-neutron-metadata"):
        assert run_playbook(_state_props(dev_stack, resource))["changed"] == 0, resource


@pytest.mark.long
def test_one_nodes_custom_config_reaches_that_node_only(dev_copy: Stack) -> None:
    snippet = "[libvirt]\ncpu_mode = custom\ncpu_models = Nehalem\n"
    dev_copy.cli("config", "set", "--path", f"{NODE0_PATH}.customServiceConfig.nova", snippet)
    diff = dev_copy.cli("preview", "--diff")
    assert "edpm-compute-0-nova" in diff.stdout and "cpu_mode = custom" in diff.stdout
    changed = sorted((s["op"], s["urn"].rsplit("::", 1)[-1]) for s in dev_copy.preview_steps())
    assert changed == [("update", "edpm-compute-0-nova")]
    result = up(dev_copy.name, cwd=dev_copy.project)
    ran = sorted(name for op, _, name in result["steps"] if op == "update")
    assert ran == ["edpm-compute-0-nova"], result
    assert nova_conf("edpm-compute-0", "libvirt.cpu_mode") == "'custom'"
    assert nova_conf("edpm-compute-0", "libvirt.cpu_models") == "['Nehalem']"
    assert nova_conf("edpm-compute-1", "libvirt.cpu_mode") == "'host-model'"
    assert dev_copy.cli("preview", "--expect-no-changes", check=False).returncode == 0


def test_a_deployed_nodes_cell_cannot_change(dev_copy: Stack) -> None:
    before = dev_copy.resources()
    dev_copy.cli("config", "set", "--path", "dataplane.nodeSets.edpm-compute.nodes.edpm-compute-1.cell", "cell1")
    preview = dev_copy.cli("preview", check=False)
    output = preview.stdout + preview.stderr
    assert preview.returncode != 0
    assert "edpm-compute-1: cell is 'cell2' on the node and cannot become 'cell1'" in output
    assert "remove the node from the stack config" in output
    assert "Traceback" not in output
    assert dev_copy.resources() == before


@pytest.mark.long
def test_a_hung_node_fails_within_its_limit_and_the_others_go_on(dev_copy: Stack) -> None:
    config = yaml.safe_load(dev_copy.file.read_text())
    node_set = config["config"]["openstack-nova:dataplane"]["nodeSets"]["edpm-compute"]
    node_set["nodeTemplate"]["timeouts"] = {"connect": 5, "task": 60, "run": 120}
    node_set.setdefault("customServiceConfig", {})["neutron-metadata"] = "[DEFAULT]\ndebug = true\n"
    dev_copy.file.write_text(yaml.safe_dump(config))
    extra = "/var/lib/openstack/neutron-ovn-metadata-agent/25-neutron-metadata-extra.conf"
    # edpm-compute-1 accepts TCP connections (the kernel does) but its sshd never answers
    sshd = node_unit_pids(NODES[1], "ssh.service")
    assert sshd, "no sshd found in edpm-compute-1's cgroups"
    for pid in sshd:
        os.kill(pid, signal.SIGSTOP)
    try:
        result = dev_copy.cli("up", "--yes", "--skip-preview", check=False)
    finally:
        for pid in sshd:
            os.kill(pid, signal.SIGCONT)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    # found when the run takes the node's lock, its first contact with the node; in SSH's own
    # words: the node answers TCP but never speaks
    assert ("ansible-playbook neutron-metadata.yml failed on edpm-compute-1 before its first play: edpm-compute-1 "
            "(192.168.122.101:22) is unreachable (Connection timed out during banner exchange)") in output, \
        output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    # the other node went on
    assert node(NODES[0], f"cat {extra}").stdout == "[DEFAULT]\ndebug = true\n"
    assert node(NODES[1], f"test -e {extra}").returncode != 0


@pytest.mark.long
def test_a_custom_service_runs_after_the_node_sets_services(dev_copy: Stack) -> None:
    dev_copy.with_custom_service("motd", {"playbook": "custom-files.yml",
                                          "files": {"motd": "managed by openstack-nova\n"}})
    result = up(dev_copy.name, cwd=dev_copy.project)
    created = sorted(name for op, _, name in result["steps"] if op == "create")
    assert created == ["edpm-compute-0-motd", "edpm-compute-1-motd"], result
    for name in NODES:
        assert node(name, "cat /var/lib/openstack/custom/motd/motd").stdout == "managed by openstack-nova\n"


# A custom service whose one task fails on every node: its command's own words must reach the user.
FAILING_PLAYBOOK = """---
- name: Check the service's file
  hosts: "{{ edpm_override_hosts | default('all', true) }}"
  gather_facts: false
  tasks:
    - name: Read the file the service needs
      ansible.builtin.command: cat /var/lib/openstack/custom/not-there.conf
      changed_when: false
"""


@pytest.mark.long
def test_a_failed_task_names_its_node_play_task_and_what_the_command_said(dev_copy: Stack) -> None:
    """Read from the run's event stream, through the real CLI: which node, play and task failed,
    and what the module said (the command's exit status and its stderr)."""
    dev_copy.with_custom_service("check", {"playbook": "check-file.yml"}, playbook=FAILING_PLAYBOOK)
    result = dev_copy.cli("up", "--yes", "--skip-preview", check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    # the CLI indents a diagnostic's lines after the first: compared word by word
    words = " ".join(output.split())
    for name in NODES:
        said = (f"ansible-playbook check-file.yml failed on {name} in play 'Check the service's file', task "
                f"'Read the file the service needs' (exit 2): non-zero return code exit status 1 "
                f"cat: /var/lib/openstack/custom/not-there.conf: No such file or directory (the run's whole "
                f"output: {ENV['OPENSTACK_NOVA_ANSIBLE_LOG_DIR']}/{name}-check-file.log)")
        assert said in words, output[-3000:]
    assert "Traceback" not in output, output[-3000:]


def _drifted_runs(stack: str) -> list[str]:
    """The node runs whose last refresh found their node drifted (`in_sync` false in the state)."""
    state = json.loads(pulumi("stack", "export", "-s", stack).stdout)
    return sorted(r["urn"].rsplit("::", 1)[-1] for r in state["deployment"]["resources"]
                  if r["type"] == PLAYBOOK_RUN and (r.get("outputs") or {}).get("in_sync") is False)


def test_refresh_finds_drift_and_up_repairs_it(dev_stack: str) -> None:
    # Someone edits a file on a node by hand.
    node("edpm-compute-0", "echo '# edited by hand' >> /var/lib/openstack/nova/02-nova-host-specific.conf")
    pulumi("refresh", "--yes", "--skip-preview", "-s", dev_stack)
    # refresh ran every node's playbooks in check mode: only that node's nova run drifted
    assert _drifted_runs(dev_stack) == ["edpm-compute-0-nova"]
    changes = up(dev_stack)
    repaired = sorted(name for op, _, name in changes["steps"] if op == "update")
    assert repaired == ["edpm-compute-0-nova"]
    host_file = node("edpm-compute-0", "cat /var/lib/openstack/nova/02-nova-host-specific.conf").stdout
    assert "edited by hand" not in host_file
    in_sync = json.loads(pulumi("stack", "output", "inSync", "--json", "-s", dev_stack).stdout)
    assert all(all(v.values()) for v in in_sync["edpm-compute"].values())
    assert _drifted_runs(dev_stack) == []


def out_of_sync(stack: str) -> list[tuple[str, str]]:
    """(node, service) of every run the stack output inSync says is out of sync."""
    return sorted((n, service) for n, runs in stack_output(stack, "inSync")["edpm-compute"].items()
                  for service, ok in runs.items() if ok is not True)


@pytest.mark.long
def test_refresh_run_program_names_the_drifted_node_and_service_and_up_reruns_only_it(dev_stack: str) -> None:
    """README, "In sync, drift": `pulumi refresh --run-program`, then `pulumi stack output inSync`."""
    node(NODES[1], "echo '# edited by hand' >> /var/lib/openstack/nova/02-nova-host-specific.conf")
    refresh = pulumi("refresh", "--run-program", "--yes", "--skip-preview", "-s", dev_stack)
    # what the refresh prints: the one value of its outputs that changed
    flipped = re.findall(r"^\s*~ (\S+)\s*: true => false\s*$", refresh.stdout, re.M)
    assert flipped == ["nova"], refresh.stdout[-3000:]
    # every run was checked and the output recomputed: that node's nova alone, the other node in sync
    in_sync = stack_output(dev_stack, "inSync")["edpm-compute"]
    assert sorted(in_sync) == list(NODES)
    assert out_of_sync(dev_stack) == [(NODES[1], "nova")], in_sync
    hashes = stack_output(dev_stack, "deployedHashes")
    # up runs that node's service again, nothing else, and deploys the same files
    changes = up(dev_stack)
    assert sorted((op, name) for op, _, name in changes["steps"] if op != "same") == [
        ("update", f"{NODES[1]}-nova")], changes
    assert "edited by hand" not in node(NODES[1], "cat /var/lib/openstack/nova/02-nova-host-specific.conf").stdout
    assert out_of_sync(dev_stack) == []
    assert stack_output(dev_stack, "deployedHashes") == hashes


@pytest.mark.long
def test_refresh_finds_a_missing_haproxy_wrapper_and_up_puts_it_back(dev_stack: str) -> None:
    wrapper = "/var/lib/neutron/ovn_metadata_haproxy_wrapper"
    node("edpm-compute-0", f"rm {wrapper}")
    pulumi("refresh", "--yes", "--skip-preview", "-s", dev_stack)
    changes = up(dev_stack)
    repaired = sorted(name for op, _, name in changes["steps"] if op == "update")
    assert repaired == ["edpm-compute-0-neutron-metadata"]
    # written back by the role (as root), then given to neutron by kolla when the handler restarted
    # the agent's container: the owner shows the restart happened too
    neutron = _neutron_uid("edpm-compute-0")
    assert stat("edpm-compute-0", wrapper, owner="%u") == {"ovn_metadata_haproxy_wrapper": f"755 {neutron}"}


def _daemon_started(name: str, daemon: str) -> str:
    """When systemd last started the node's libvirt daemon (empty: never since boot)."""
    return node(name, f"systemctl show -P ActiveEnterTimestampMonotonic {daemon}.service").stdout.strip()


def test_a_change_to_one_nodes_libvirt_files_restarts_its_daemons_only(dev_stack: str) -> None:
    """A changed libvirt file on one node (by hand, then `up` puts the rendered one back) restarts
    that node's daemons; the other node's keep running. virsh reaches qemu through virtqemud,
    libvirt's modular daemon the rendered config is for, with no monolithic libvirtd."""
    changed, other = NODES
    for name in NODES:
        assert node(name, "systemctl is-active virtqemud.socket").stdout.strip() == "active", name
    node(changed, "virsh -c qemu:///system version")  # socket-activated: the daemon runs from here
    before = {name: {d: _daemon_started(name, d) for d in ("virtqemud", "virtlogd")} for name in NODES}
    node(changed, "echo '# edited by hand' >> /etc/libvirt/virtqemud.conf")
    pulumi("refresh", "--yes", "--skip-preview", "-s", dev_stack)
    changes = up(dev_stack)
    assert sorted(name for op, _, name in changes["steps"] if op == "update") == [f"{changed}-libvirt"]
    assert "edited by hand" not in node(changed, "cat /etc/libvirt/virtqemud.conf").stdout
    after = {name: {d: _daemon_started(name, d) for d in ("virtqemud", "virtlogd")} for name in NODES}
    assert all(after[changed][d] and after[changed][d] != before[changed][d] for d in after[changed]), (
        before, after)
    assert after[other] == before[other]
    version = node(changed, "virsh -c qemu:///system version").stdout
    assert "Running hypervisor: QEMU" in version, version
    # qemu:///system is virtqemud's socket, held by virtqemud itself (started by its socket or by
    # the restart), and no libvirtd answers instead: the role masked it
    listening = node(changed, "ss -xlpn src /run/libvirt/virtqemud-sock").stdout
    assert '"virtqemud"' in listening, listening
    masked = node(changed, "systemctl is-enabled libvirtd.service libvirtd.socket").stdout.split()
    assert masked == ["masked", "masked"], masked
    assert node(changed, "systemctl is-active libvirtd.service").stdout.strip() != "active"


def test_the_metadata_agent_runs_on_every_node_and_registers_its_chassis(dev_stack: str) -> None:
    """Each node's edpm_ovn_metadata_agent unit runs the agent, which writes its metadata id on
    its chassis in the OVN southbound database (what neutron's server looks for)."""
    for name in NODES:
        assert node(name, "systemctl is-active edpm_ovn_metadata_agent.service").stdout.strip() == "active", name
    sb = "tcp:ovsdbserver-sb.openstack.svc.cluster.local:6642"

    def registered() -> dict[str, str]:
        listed = run("kubectl", "exec", "-n", "openstack", "ovsdbserver-nb-0", "--", "ovn-sbctl", f"--db={sb}",
                     "--timeout=30", "--format=json", "--columns=name,external_ids", "list", "Chassis_Private").stdout
        found: dict[str, str] = {}
        for chassis, ids in json.loads(listed)["data"]:
            metadata_id = dict(ids[1]).get("neutron:ovn-metadata-id")
            if metadata_id:
                found[chassis] = metadata_id
        return found

    found = eventually(registered, lambda f: set(NODES) <= set(f), seconds=120)
    assert all(found[name] for name in NODES), found
    for name in NODES:
        check = node(name, "podman healthcheck run ovn_metadata_agent")
        assert check.returncode == 0, (name, check.stdout, check.stderr)
