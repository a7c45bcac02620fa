"""Operations under faults, on the dev stack and its test nodes: a `pulumi up`
killed or interrupted in the middle of Ansible runs, the API server or kubelet
restarted in the middle of a rollout, a node removed while it is unreachable,
and a node whose host key changed. Each case follows what the README's
"Operations" section tells a user to do, and checks what they see."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from components.k8s import CONFIG_HASH_ANNOTATION
from tests.integration.local_env import ENV, NODES, ROOT, cluster, kubectl_json, node, openstack, run, up
from tests.integration.nova_compute import eventually
from tests.integration.stacks import Stack

# Longer than CI's budget allows: `make test-long` runs these (README, "The two commands").
pytestmark = pytest.mark.long

RUNS_LOG = "/var/lib/openstack/slow-runs.log"
# A custom service that takes a while and logs on the node when each run starts and ends.
SLOW_PLAYBOOK = f"""\
- name: A slow run that logs its start and end
  hosts: all
  gather_facts: false
  tasks:
    - name: Log the start
      ansible.builtin.shell: echo "start $PPID" >> {RUNS_LOG}
      changed_when: true
    - name: Take a while
      ansible.builtin.command: sleep 25
      changed_when: false
    - name: Log the end
      ansible.builtin.shell: echo "end $PPID" >> {RUNS_LOG}
      changed_when: true
"""


def _config(stack: Stack) -> dict[str, Any]:
    return cast(dict[str, Any], yaml.safe_load(stack.file.read_text()))


def _dataplane(config: dict[str, Any]) -> dict[str, Any]:
    """The dataplane key of `config`, itself: changes to it are changes to `config`."""
    return cast(dict[str, Any], config["config"]["openstack-nova:dataplane"])


def _pulumi(stack: Stack, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["pulumi", "--non-interactive", *args, "-s", stack.name], cwd=stack.project,
                          env={**ENV, **(env or {})}, capture_output=True, text=True, check=False)


def _with_slow_service(stack: Stack) -> None:
    stack.with_custom_service("slow", {"playbook": "slow-marker.yml", "files": {"marker": "slow\n"}},
                              playbook=SLOW_PLAYBOOK)


def _runs_on(name: str) -> list[str]:
    return node(name, f"cat {RUNS_LOG} 2>/dev/null").stdout.split("\n")


def _guards_of(project: Path) -> list[int]:
    """Run guards started from `project` that still run."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if (b"components.ansible_runner.runguard" in cmdline
                    and Path(f"/proc/{pid}/cwd").resolve() == project.resolve()):
                found.append(int(pid))
        except OSError:
            continue
    return found


def _pending_operations(stack: Stack) -> list[Any]:
    state = json.loads(_pulumi(stack, "stack", "export").stdout)
    return list(state["deployment"].get("pending_operations") or [])


def _interrupt_mid_ansible(stack: Stack, sig: signal.Signals) -> None:
    """`pulumi up`, interrupted with `sig` once a slow run has started on the first node. SIGINT
    goes to the whole process group, as a terminal's Ctrl-C does; SIGKILL to the CLI alone."""
    for name in NODES:
        node(name, f"rm -f {RUNS_LOG}")
    up = subprocess.Popen(["pulumi", "--non-interactive", "up", "--yes", "--skip-preview", "-s", stack.name],
                          cwd=stack.project, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          start_new_session=True)
    try:
        started = eventually(lambda: _runs_on(NODES[0]), lambda lines: lines[0].startswith("start"), seconds=300)
        assert started[0].startswith("start"), started
    finally:
        if sig == signal.SIGINT:
            os.killpg(up.pid, sig)
        else:
            up.send_signal(sig)
        up.wait(timeout=300)


def _recover(stack: Stack, logs: Path) -> None:
    """What the README says to do after an interrupted `pulumi up`."""
    env = {"OPENSTACK_NOVA_ANSIBLE_LOG_DIR": str(logs)}
    _pulumi(stack, "cancel", "--yes")  # the CLI is gone: its state lock with it (no lock left is fine too)
    refresh = _pulumi(stack, "refresh", "--yes", "--skip-preview", "--clear-pending-creates", env=env)
    assert refresh.returncode == 0, refresh.stdout[-3000:] + refresh.stderr[-3000:]
    again = _pulumi(stack, "up", "--yes", "--skip-preview", env=env)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["kill -9", "Ctrl-C"])
def test_an_interrupted_up_is_never_overlapped_and_the_next_one_converges(
        dev_copy: Stack, tmp_path: Path, sig: signal.Signals) -> None:
    _with_slow_service(dev_copy)
    _interrupt_mid_ansible(dev_copy, sig)
    orphans = _guards_of(dev_copy.project)
    _recover(dev_copy, tmp_path / "logs")
    for name in NODES:
        events = [line.split()[0] for line in _runs_on(name) if line]
        # each run ran whole, one after the other: never two at once on a node
        assert events and events == ["start", "end"] * (len(events) // 2), (name, events)
    if sig == signal.SIGKILL:
        # the killed run's guard finished its run while the next one waited for the node
        assert orphans, "the killed up left no run going"
        waited = "".join(p.read_text() for p in (tmp_path / "logs").glob("edpm-compute-0-*.log"))
        assert re.search(r"edpm-compute-0 is busy with another run \(slow-marker\.yml, run by pid \d+", waited)
    assert _guards_of(dev_copy.project) == []
    assert _pending_operations(dev_copy) == []
    # converged: nothing left to do, no run twice
    assert dev_copy.cli("preview", "--expect-no-changes", check=False).returncode == 0
    ran = up(dev_copy.name, cwd=dev_copy.project)
    assert {op for op, _, _ in ran["steps"]} <= {"same", "read"}, ran["steps"]


def _pod_template_hash(statefulset: str) -> str:
    """The config hash on the pod template of one of the stack's StatefulSets."""
    found = kubectl_json("get", "statefulset", statefulset, "-n", "openstack")
    return str(found["spec"]["template"]["metadata"]["annotations"][CONFIG_HASH_ANNOTATION])


def _errors(output: str) -> list[tuple[str, str, str]]:
    """(type, name, first line) of each error under the CLI's Diagnostics."""
    return re.findall(r"^  (\S+) \((\S+)\):\n    error: (.*)$", output, re.M)


@pytest.mark.parametrize("daemon", ["kube-apiserver", "kubelet"])
def test_a_cluster_daemon_restarted_mid_rollout_fails_cleanly_or_not_at_all_and_up_converges(
        dev_copy: Stack, tmp_path: Path, daemon: str) -> None:
    """The API's config changes, and `daemon` restarts while `pulumi up` waits for the API's pods to roll."""
    dev_copy.cli("config", "set", "--path", "nova.apiServiceTemplate.customServiceConfig", "[DEFAULT]\ndebug = true\n")
    before = _pod_template_hash("nova-api")
    printed = tmp_path / "up.out"
    with printed.open("w") as sink:
        running = subprocess.Popen(
            ["pulumi", "--non-interactive", "up", "--yes", "--skip-preview", "-s", dev_copy.name],
            cwd=dev_copy.project, env=ENV, stdout=sink, stderr=subprocess.STDOUT)
    try:
        rolling = eventually(lambda: _pod_template_hash("nova-api"), lambda h: h != before, seconds=600, interval=0.5)
        assert rolling != before, "the up never changed the API's pod template"
        assert running.poll() is None, "the up ended before the restart: nothing was tested"
        restarted = cluster("restart", daemon, check=False)
        status = running.wait(timeout=1800)
    finally:
        if running.poll() is None:
            running.kill()
            running.wait()
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr
    assert restarted.stdout.startswith(f"cluster.sh: restarted {daemon} (pid "), restarted.stdout
    output = printed.read_text()
    assert "Traceback" not in output, output[-3000:]
    if status != 0:
        # a clean failure: the Kubernetes object the provider could not finish, and why
        failed = [e for e in _errors(output) if e[0] != "pulumi:pulumi:Stack"]
        assert failed and all(kind.startswith("kubernetes:") for kind, _, _ in failed), output[-3000:]
    again = up(dev_copy.name, cwd=dev_copy.project)
    if status == 0:
        assert {op for op, _, _ in again["steps"]} <= {"same"}, again["steps"]
    assert dev_copy.cli("preview", "--expect-no-changes", check=False).returncode == 0
    # the API rolled to its new config and answers (through Keystone's catalog)
    assert _pod_template_hash("nova-api") == rolling
    run("kubectl", "rollout", "status", "statefulset/nova-api", "-n", "openstack", "--timeout=120s")
    assert openstack("compute", "service", "list", "--service", "nova-scheduler")


@contextmanager
def link_down(name: str) -> Iterator[None]:
    """The node's network link down (the host end of its veth), as a node that went away."""
    index = name.rsplit("-", 1)[1]
    run("ip", "link", "set", f"ve-edpm-{index}", "down")
    try:
        yield
    finally:
        run("ip", "link", "set", f"ve-edpm-{index}", "up")
        eventually(lambda: node(name, "true").returncode, lambda rc: rc == 0, seconds=60)


def _states(stack: Stack) -> list[str]:
    return [r["urn"].rsplit("::", 1)[-1] for r in stack.resources()]


def test_removing_an_unreachable_node_fails_its_stop_step_and_says_how_to_go_on(dev_copy: Stack) -> None:
    config = _config(dev_copy)
    node_set = _dataplane(config)["nodeSets"]["edpm-compute"]
    node_set["nodeTemplate"]["timeouts"] = {"connect": 5, "lock": 30}
    del node_set["nodes"]["edpm-compute-1"]
    dev_copy.file.write_text(yaml.safe_dump(config))
    urn = ("urn:pulumi:dev::openstack-nova::openstack-nova:dataplane:EdpmNodeSet"
           "$pulumi-python:dynamic/ansible:PlaybookRun::edpm-compute-1-nova")
    with link_down("edpm-compute-1"):
        failed = _pulumi(dev_copy, "up", "--yes", "--skip-preview")
        output = failed.stdout + failed.stderr
        assert failed.returncode != 0
        assert ("ansible-playbook nova-stop.yml failed on edpm-compute-1 before its first play: edpm-compute-1 "
                "(192.168.122.101:22) is unreachable (") in output, output[-3000:]
        assert "OPENSTACK_NOVA_FORGET_NODES=edpm-compute-1 pulumi up" in output
        assert f"pulumi state delete '{urn}'" in output and "Traceback" not in output
        assert "edpm-compute-1-nova" in _states(dev_copy)
        # forget it knowingly: the URN the message names, then the node's other stop steps
        dropped = _pulumi(dev_copy, "state", "delete", "--yes", urn)
        assert dropped.returncode == 0, dropped.stderr
        forgot = _pulumi(dev_copy, "up", "--yes", "--skip-preview",
                         env={"OPENSTACK_NOVA_FORGET_NODES": "edpm-compute-1"})
        assert forgot.returncode == 0, forgot.stdout[-3000:] + forgot.stderr[-3000:]
        assert not [name for name in _states(dev_copy) if name.startswith("edpm-compute-1-")]
    # the other node was not touched
    assert node("edpm-compute-0", "test -e /var/lib/openstack/nova/01-nova.conf").returncode == 0


def _with_known_hosts(stack: Stack, path: Path) -> None:
    config = _config(stack)
    _dataplane(config)["nodeSets"]["edpm-compute"]["nodeTemplate"]["knownHostsFile"] = str(path)
    stack.file.write_text(yaml.safe_dump(config))


def test_a_changed_host_key_is_refused_and_trusted_again_once_checked(dev_copy: Stack, tmp_path: Path) -> None:
    env_dir = Path(ENV["OPENSTACK_NOVA_ENV"])
    real = run("ssh-keygen", "-lf", str(env_dir / "nodes" / "edpm-compute-1" / "ssh_host_ed25519_key.pub")
               ).stdout.split()[1]
    run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "impostor"))
    impostor = " ".join((tmp_path / "impostor.pub").read_text().split()[:2])
    known_hosts = tmp_path / "known_hosts"
    lines = (env_dir / "ssh" / "known_hosts").read_text().splitlines()
    known_hosts.write_text("".join(f"{ln.split()[0]} {impostor}\n" if "edpm-compute-1" in ln else f"{ln}\n"
                                   for ln in lines))
    _with_known_hosts(dev_copy, known_hosts)
    failed = _pulumi(dev_copy, "up", "--yes", "--skip-preview")
    output = failed.stdout + failed.stderr
    assert failed.returncode != 0
    assert (f"failed on edpm-compute-1 before its first play: edpm-compute-1 (192.168.122.101:22) showed the host "
            f"key ED25519 {real}, which is not the one {known_hosts} (nodeTemplate.knownHostsFile of node set "
            "edpm-compute) trusts for 192.168.122.101 (REMOTE HOST IDENTIFICATION HAS CHANGED): nothing ran on it."
            ) in output, output[-3000:]
    assert "Traceback" not in output
    # the way back: check the fingerprint on the node, trust it, run again
    trusted = run(str(ROOT / ".venv" / "bin" / "python"), "-m", "tools.known_hosts", "trust", str(known_hosts),
                  "192.168.122.101", "--name", "edpm-compute-1", "--fingerprint", real, cwd=dev_copy.project)
    assert "in place of 1 line it had for them" in trusted.stdout
    ok = _pulumi(dev_copy, "up", "--yes", "--skip-preview")
    assert ok.returncode == 0, ok.stdout[-3000:] + ok.stderr[-3000:]
    assert impostor.split()[1] not in node("edpm-compute-0", "cat /etc/ssh/ssh_known_hosts").stdout
