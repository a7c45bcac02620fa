"""PlaybookRun's decisions (when a node is configured again, what may never
change) and its runs with real processes: time limits, and over real SSH to a
stand-in node, the run lock, host key checks and what a failed delete says."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from components.ansible_runner import playbook, runguard
from components.ansible_runner.events import summarize
from components.ansible_runner.failures import failure as _failure
from components.ansible_runner.failures import where as _where
from components.ansible_runner.playbook import (
    DEFAULT_TIMEOUTS,
    FORGET_NODES,
    PlaybookError,
    UnreachableNodeError,
    _ansible_env,
    _PlaybookProvider,
    _run_bounded,
    run_playbook,
)
from components.render import config_hash
from tests.unit.runlock import lock_is_free
from tests.unit.sshnode import Node, free_port, keygen, needs_sshd, ssh_node

KEY_1 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFqzRVBUVYMKXFBkmsIdL+HBiltEeUZqK8HEogdpCv/t"
KEY_0 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBpI9FkhIsmqf12ccKFbhSnH4F/3Xd8/FDlIylOeF1U0"
PROPS: dict[str, Any] = {
    "playbook": "nova.yml",
    "host": {"name": "edpm-compute-1", "address": "192.168.122.101", "port": 22, "user": "root"},
    "host_vars": {}, "ssh_private_key": "key", "known_hosts": f"192.168.122.101 {KEY_1}\n", "vars": {},
    "files": {"01-nova.conf": "[DEFAULT]\n"}, "public_files": {"25-nova-extra.conf": "[libvirt]\n"},
    "pinned": {"cell": "cell2"}, "pinned_reason": "remove the node first.", "in_sync": True,
}


def diff(olds: dict[str, Any], news: dict[str, Any]) -> bool:
    return bool(_PlaybookProvider().diff("id", olds, news).changes)


def test_nothing_changed_means_no_run() -> None:
    assert diff(PROPS, dict(PROPS)) is False


@pytest.mark.parametrize("key", ["public_files", "files", "host_vars", "ssh_private_key"])
def test_a_changed_input_means_a_run(key: str) -> None:
    assert diff(PROPS, {**PROPS, key: {"other": "value"}}) is True


def test_known_hosts_count_by_the_keys_trusted_for_the_node() -> None:
    """Trusting another node (or the file given whole, as before) re-runs nothing here;
    a new key for this node does."""
    whole_file = f"# the node set's file\n192.168.122.100 {KEY_0}\n192.168.122.101,edpm-compute-1 {KEY_1}\n"
    assert diff({**PROPS, "known_hosts": whole_file}, PROPS) is False
    assert diff(PROPS, {**PROPS, "known_hosts": f"192.168.122.101 {KEY_1}\n192.168.122.109 {KEY_0}\n"}) is False
    assert diff(PROPS, {**PROPS, "known_hosts": f"192.168.122.101 {KEY_0}\n"}) is True
    assert diff(PROPS, {**PROPS, "known_hosts": f"192.168.122.101 {KEY_1}\n192.168.122.101 {KEY_0}\n"}) is True


def test_what_the_runner_records_changes_the_state_without_a_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """E.g. the resource's URN, kept for its delete's message: recorded, nothing runs."""
    olds = {**PROPS, "deployed_hash": "abc", "last_run": "nova.yml on edpm-compute-1: ok=9 changed=0",
            "changed": 0, "in_sync": True}
    news = {**PROPS, "state_urn": "urn:pulumi:dev::openstack-nova::t::edpm-compute-1-nova",
            "known_hosts_file": "/etc/edpm/known_hosts", "node_set": "edpm-compute"}
    assert diff(olds, news) is True

    def no_run(*_: Any, **__: Any) -> None:
        raise AssertionError("ran Ansible")

    monkeypatch.setattr(playbook, "run_playbook", no_run)
    outs = _PlaybookProvider().update("id", olds, news).outs
    assert outs == {**news, "deployed_hash": "abc", "last_run": olds["last_run"], "changed": 0, "in_sync": True}


def test_drift_found_by_refresh_means_a_run() -> None:
    assert diff({**PROPS, "in_sync": False}, dict(PROPS)) is True


def test_a_pinned_value_cannot_change() -> None:
    with pytest.raises(PlaybookError) as err:
        diff(PROPS, {**PROPS, "pinned": {"cell": "cell1"}})
    assert str(err.value) == (
        "edpm-compute-1: cell is 'cell2' on the node and cannot become 'cell1'. remove the node first.")


def test_outputs_alone_do_not_mean_a_run() -> None:
    assert diff({**PROPS, "deployed_hash": "a", "last_run": "x"}, {**PROPS, "deployed_hash": None}) is False


def test_a_new_time_limit_alone_does_not_mean_a_run() -> None:
    assert diff({**PROPS, "timeouts": {"connect": 30, "task": 600, "run": 1800}},
                {**PROPS, "timeouts": {"connect": 5, "task": 60, "run": 120}}) is False


# A run's events up to a handler of its play (events.summarize reads them).
EVENTS: list[dict[str, Any]] = [
    {"event": "play", "name": "Deploy nova-compute"},
    {"event": "task", "name": "edpm_nova : Copy the files", "handler": False},
    {"event": "result", "status": "changed", "host": "edpm-compute-1", "task": "edpm_nova : Copy the files"},
    {"event": "task", "name": "edpm_nova : Restart nova", "handler": True},
]


def test_where_the_known_hosts_come_from_is_no_reason_to_update() -> None:
    """The file's path may differ from one machine to the next: it follows with the next run."""
    assert diff(PROPS, {**PROPS, "known_hosts_file": "/home/ci/known_hosts", "node_set": "edpm-compute"}) is False


def _ended(*stream: dict[str, Any], exit_status: int) -> dict[str, Any]:
    return {"outcome": "done", "exit": exit_status, "run": summarize([*EVENTS, *stream])}


def test_a_node_lost_in_the_middle_of_a_run_is_unreachable_there(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(runguard.LOG_DIR, raising=False)
    lost = {"event": "result", "status": "unreachable", "host": "edpm-compute-1", "task": "edpm_nova : Restart nova",
            "msg": "Failed to connect to the host via ssh: ssh: connect to host 192.168.122.101 port 22: No route to "
                   "host"}
    error = _failure(PROPS, "nova.yml", DEFAULT_TIMEOUTS, "", _ended(lost, exit_status=4), 0)
    assert isinstance(error, UnreachableNodeError)
    assert str(error) == (
        "ansible-playbook nova.yml failed on edpm-compute-1 in play 'Deploy nova-compute', task 'edpm_nova : "
        "Restart nova': edpm-compute-1 (192.168.122.101:22) is unreachable (ssh: connect to host 192.168.122.101 "
        "port 22: No route to host). Check the node and its network, then run `pulumi up` again.")


def test_a_task_that_fails_is_no_ssh_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(runguard.LOG_DIR, raising=False)
    denied = {"event": "result", "status": "failed", "host": "edpm-compute-1", "task": "edpm_nova : Restart nova",
              "msg": "Permission denied (os error 13)"}
    error = _failure(PROPS, "nova.yml", DEFAULT_TIMEOUTS, "", _ended(denied, exit_status=2), 0)
    assert type(error) is PlaybookError
    assert str(error) == ("ansible-playbook nova.yml failed on edpm-compute-1 in play 'Deploy nova-compute', "
                          "task 'edpm_nova : Restart nova' (exit 2): Permission denied (os error 13)")


def test_a_run_that_reports_no_recap_is_no_success() -> None:
    """Without the callback's events, what a run did (and a check, what it would change) is unknown."""
    error = _failure(PROPS, "nova.yml", DEFAULT_TIMEOUTS, "PLAY RECAP ***\n", {"outcome": "done", "exit": 0}, 0)
    assert str(error) == (
        "ansible-playbook nova.yml on edpm-compute-1 ended without its recap: Ansible did not load the runner's "
        "callback openstack_nova_events (ansible/callback_plugins/), whose events say what a run did. Check that "
        "the file is there, then run `pulumi up` again:\nPLAY RECAP ***")
    assert _failure(PROPS, "nova.yml", DEFAULT_TIMEOUTS, "", _ended({"event": "stats", "hosts": {}}, exit_status=0),
                    0) is None


def test_a_failure_names_the_play_and_task_it_happened_in() -> None:
    assert _where(summarize(EVENTS)) == "play 'Deploy nova-compute', task 'edpm_nova : Restart nova'"
    assert _where(summarize(EVENTS[:1])) == "play 'Deploy nova-compute'"
    assert _where(None) == "before its first play"
    # the task that failed, not the one started last (another node's, with strategy free)
    failed = {"event": "result", "status": "failed", "task": "edpm_nova : Copy the files", "msg": "no space"}
    assert _where(summarize([*EVENTS, failed])) == "play 'Deploy nova-compute', task 'edpm_nova : Copy the files'"
    assert _where(summarize([*EVENTS, failed]), failed=False) == (
        "play 'Deploy nova-compute', task 'edpm_nova : Restart nova'")


def test_a_run_past_its_limit_is_stopped_with_all_it_started(tmp_path: Path) -> None:
    child = tmp_path / "child.pid"
    script = f'sleep 300 & echo $! > {child}; echo "PLAY [p] ***"; wait'
    # the limit falls once the child runs, however slow the machine
    status, output = _run_bounded(["sh", "-c", f"{script} & while [ ! -s {child} ]; do sleep 0.1; done; wait"],
                                  tmp_path, dict(os.environ), limit=5)
    assert status is None and "PLAY [p]" in output
    # gone, or dead and not yet reaped by whoever inherited it; a process that has closed its
    # output may still be exiting for a moment on a loaded machine
    pid = int(child.read_text())
    deadline = time.time() + 10
    while (state := _state(pid)) not in ("gone", "Z") and time.time() < deadline:
        time.sleep(0.1)
    assert state in ("gone", "Z")


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return "gone"


def test_a_run_within_its_limit_reports_its_exit_status(tmp_path: Path) -> None:
    assert _run_bounded(["sh", "-c", "echo out; echo err >&2; exit 3"], tmp_path, dict(os.environ), limit=30) == (
        3, "out\nerr\n")


def test_a_run_keeps_its_ssh_connections_and_limits_to_itself(tmp_path: Path) -> None:
    env = _ansible_env(tmp_path, {"connect": 5, "task": 60, "run": 120})
    assert (env["ANSIBLE_TIMEOUT"], env["ANSIBLE_TASK_TIMEOUT"]) == ("5", "60")
    # no connection of another run (another known_hosts, a node since hung) is reused
    assert env["ANSIBLE_SSH_CONTROL_PATH_DIR"] == str(tmp_path / "cp")
    assert all(env[k].startswith(str(tmp_path)) for k in ("ANSIBLE_HOME", "ANSIBLE_LOCAL_TEMP"))


# --- over real SSH, to a stand-in node ---------------------------------------------------

PROBE = """\
- name: Probe the node
  hosts: all
  gather_facts: false
  tasks:
    - name: Read the run lock
      ansible.builtin.command:
        argv: [cat, "{{ probe_lock }}"]
      register: probe
      changed_when: false
    - name: Show who holds it
      ansible.builtin.debug:
        msg: "held by: {{ probe.stdout }}"
"""


@pytest.fixture()
def node(tmp_path: Path) -> Any:
    with ssh_node(tmp_path / "node") as served:
        yield served


@pytest.fixture()
def lock_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The node's run lock: the stand-in node is this machine, so it lives here."""
    path = tmp_path / "node-root" / "ansible-run.lock"
    monkeypatch.setattr(runguard, "LOCK_PATH", str(path))
    return path


def node_props(node: Node, known_hosts: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "playbook": "nova.yml", "stop_playbook": "nova-stop.yml",
        "host": {"name": "edpm-compute-1", "address": "127.0.0.1", "port": node.port, "user": "root"},
        "host_vars": {"ansible_python_interpreter": sys.executable},
        "ssh_private_key": node.client_key.read_text(),
        "known_hosts": node.known_hosts() if known_hosts is None else known_hosts,
        "known_hosts_file": "/etc/edpm/known_hosts", "node_set": "edpm-compute",
        "state_urn": "urn:pulumi:dev::openstack-nova::openstack-nova:dataplane:EdpmNodeSet"
                     "$pulumi-python:dynamic/ansible:PlaybookRun::edpm-compute-1-nova",
        "files": {}, "public_files": {}, "vars": {}, "timeouts": {"connect": 5, "task": 60, "run": 120, "lock": 5},
        **extra,
    }


@needs_sshd
def test_a_run_holds_the_nodes_lock_over_ssh(node: Node, lock_path: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    ansible = tmp_path / "ansible"
    (ansible / "playbooks").mkdir(parents=True)
    shutil.copy(playbook.ROOT / "ansible" / "ansible.cfg", ansible / "ansible.cfg")
    (ansible / "callback_plugins").symlink_to(playbook.ANSIBLE_DIR / "callback_plugins")
    (ansible / "playbooks" / "probe.yml").write_text(PROBE)
    monkeypatch.setattr(playbook, "ANSIBLE_DIR", ansible)
    monkeypatch.setenv("OPENSTACK_NOVA_ANSIBLE_LOG_DIR", str(tmp_path / "logs"))
    result = run_playbook(node_props(node, playbook="probe.yml", vars={"probe_lock": str(lock_path)}))
    assert result["last_run"] == "probe.yml on edpm-compute-1: ok=2 changed=0"
    log = (tmp_path / "logs" / "edpm-compute-1-probe.log").read_text()
    # while Ansible ran, the node's lock named this run
    assert "held by: probe.yml, run by pid " in log, log
    assert lock_is_free(lock_path)


@needs_sshd
def test_a_changed_host_key_runs_nothing_and_says_what_to_do(node: Node, lock_path: Path, tmp_path: Path) -> None:
    other = keygen(tmp_path / "other_key")
    with pytest.raises(PlaybookError) as err:
        run_playbook(node_props(node, known_hosts=f"[127.0.0.1]:{node.port} {other}\n"))
    message = str(err.value)
    assert message.startswith(
        f"ansible-playbook nova.yml failed on edpm-compute-1 before its first play: edpm-compute-1 "
        f"(127.0.0.1:{node.port}) showed the host key ED25519 {node.fingerprint}, which is not the one "
        f"/etc/edpm/known_hosts (nodeTemplate.knownHostsFile of node set edpm-compute) trusts for "
        f"[127.0.0.1]:{node.port} (REMOTE HOST IDENTIFICATION HAS CHANGED): nothing ran on it. If the node "
        "was reinstalled or its key was replaced, check that fingerprint on the node itself"), message
    assert (f"`.venv/bin/python -m tools.known_hosts trust /etc/edpm/known_hosts 127.0.0.1 --port {node.port} "
            "--fingerprint <SHA256:...>`") in message
    assert "Traceback" not in message and not isinstance(err.value, UnreachableNodeError)
    assert not lock_path.exists()  # not even the lock was taken


@needs_sshd
def test_a_node_with_no_trusted_key_runs_nothing(node: Node, lock_path: Path) -> None:
    with pytest.raises(PlaybookError) as err:
        run_playbook(node_props(node, known_hosts=f"127.0.0.9 {node.host_key_line}\n"))
    assert (f"/etc/edpm/known_hosts (nodeTemplate.knownHostsFile of node set edpm-compute) has no host key "
            f"for [127.0.0.1]:{node.port}, so edpm-compute-1 (127.0.0.1:{node.port}) cannot be trusted (No "
            f"ED25519 host key is known for [127.0.0.1]:{node.port}): add the node's key (docs/operations.md, "
            "\"Trusting a node\") and run `pulumi up` again.") in str(err.value)
    assert not lock_path.exists()


@needs_sshd
def test_a_refused_login_says_whose_key(node: Node, lock_path: Path, tmp_path: Path) -> None:
    keygen(tmp_path / "stranger")
    with pytest.raises(PlaybookError) as err:
        run_playbook({**node_props(node), "ssh_private_key": (tmp_path / "stranger").read_text()})
    assert (f"edpm-compute-1 (127.0.0.1:{node.port}) refused root's key (Permission denied (publickey"
            ) in str(err.value)
    assert "its public key must be in root's authorized_keys on the node" in str(err.value)


@pytest.mark.skipif(not shutil.which("ssh"), reason="needs OpenSSH's ssh")
def test_deleting_from_an_unreachable_node_says_how_to_go_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()  # nothing listens there
    gone = Node(port, tmp_path / "key", "ssh-ed25519 AAAA", "")
    keygen(tmp_path / "key")
    props = node_props(gone)
    monkeypatch.delenv(FORGET_NODES, raising=False)
    with pytest.raises(PlaybookError) as err:
        _PlaybookProvider().delete("edpm-compute-1:nova.yml", props)
    assert str(err.value) == (
        f"ansible-playbook nova-stop.yml failed on edpm-compute-1 before its first play: edpm-compute-1 "
        f"(127.0.0.1:{port}) is unreachable (ssh: connect to host 127.0.0.1 port {port}: Connection refused). "
        "Check the node and its network, then run `pulumi up` again.\n"
        "The resource stays in the stack until its stop step has run on edpm-compute-1. Either bring "
        "edpm-compute-1 back and run `pulumi up` again, or, if it is gone for good, forget it knowingly (nothing "
        "is stopped on it; docs/operations.md, \"A node that is gone\"): run "
        "`OPENSTACK_NOVA_FORGET_NODES=edpm-compute-1 pulumi up`, or drop this resource from the state and run "
        "`pulumi up` again:\n"
        "    pulumi state delete 'urn:pulumi:dev::openstack-nova::openstack-nova:dataplane:EdpmNodeSet"
        "$pulumi-python:dynamic/ansible:PlaybookRun::edpm-compute-1-nova'")
    # forgotten knowingly: its delete passes; another node's would not
    monkeypatch.setenv(FORGET_NODES, "edpm-compute-7, edpm-compute-1")
    _PlaybookProvider().delete("edpm-compute-1:nova.yml", props)
    monkeypatch.setenv(FORGET_NODES, "edpm-compute-7")
    with pytest.raises(PlaybookError):
        _PlaybookProvider().delete("edpm-compute-1:nova.yml", props)


@pytest.mark.parametrize(("detail", "root"), [
    ("cloud-admin cannot write /var/lib/openstack/ansible-run.lock", True),
    ("sudo: a password is required", True),
    ("the node has no flock (util-linux, coreutils)", False),
])
def test_a_lock_the_run_cannot_take_says_why(detail: str, root: bool) -> None:
    error = _failure(PROPS, "nova.yml", DEFAULT_TIMEOUTS, "", {"outcome": "nolock", "detail": detail}, 0)
    assert str(error).startswith(
        "ansible-playbook nova.yml failed on edpm-compute-1 before its first play: cannot take the run lock "
        f"/var/lib/openstack/ansible-run.lock on edpm-compute-1 (192.168.122.101:22) ({detail}).")
    assert ("ansible_become: true" in str(error)) is root


def test_a_busy_node_names_the_run_that_holds_it() -> None:
    holder = ("nova.yml, run by pid 48213 on ci-runner-3, started 2026-05-04T10:12:09Z, ends by "
              "2026-05-04T11:14:09Z at the latest")
    error = _failure(PROPS, "nova.yml", DEFAULT_TIMEOUTS, "", {"outcome": "busy", "holder": holder}, 0)
    assert str(error) == (
        f"edpm-compute-1 is busy: another run on it did not end within 600s (nodeTemplate.timeouts.lock): {holder}. "
        "It ends by itself within its own time limit: run `pulumi up` again then, or stop it now with `kill <pid>` "
        "on the machine named (it stops Ansible and frees the node).")


def _ansible_tree(root: Path) -> Path:
    for rel, text in {"ansible.cfg": "[defaults]\n", "playbooks/nova.yml": "- import_role: {name: edpm_nova}\n",
                      "playbooks/libvirt.yml": "- import_role: {name: edpm_libvirt}\n",
                      "roles/edpm_nova/tasks/main.yml": "- import_role: {name: edpm_common}\n",
                      "roles/edpm_common/tasks/main.yml": "- debug: {}\n",
                      "roles/edpm_libvirt/tasks/main.yml": "- debug: {}\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.mark.parametrize("edited, reruns_nova", [
    ("roles/edpm_nova/tasks/main.yml", True),
    ("roles/edpm_common/tasks/main.yml", True),  # named by a role the playbook runs
    ("playbooks/nova.yml", True),
    ("ansible.cfg", True),
    ("roles/edpm_libvirt/tasks/main.yml", False),
])
def test_the_roles_a_playbook_runs_are_a_run_input(tmp_path: Path, edited: str, reruns_nova: bool) -> None:
    before = playbook.roles_fingerprint("nova.yml", _ansible_tree(tmp_path / "a"))
    tree = _ansible_tree(tmp_path / "b")
    (tree / edited).write_text((tree / edited).read_text() + "# edited\n")
    after = playbook.roles_fingerprint("nova.yml", tree)
    assert (before != after) is reruns_nova
    assert diff({**PROPS, "roles": before}, {**PROPS, "roles": after}) is reruns_nova


def test_a_run_recorded_before_roles_were_an_input_runs_again() -> None:
    assert diff(PROPS, {**PROPS, "roles": playbook.roles_fingerprint("nova.yml")}) is True


def test_a_refresh_of_a_node_deployed_with_other_roles_says_out_of_sync_without_a_check(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The checkout's roles may expect files the recorded run never had: no check-mode run."""
    def no_run(*_: Any, **__: Any) -> dict[str, Any]:
        raise AssertionError("ran the playbook")

    monkeypatch.setattr(playbook, "run_playbook", no_run)
    result = _PlaybookProvider().read("id", {**PROPS, "roles": "recorded-by-other-roles"})
    assert result.outs is not None and result.outs["in_sync"] is False
    monkeypatch.setattr(playbook, "run_playbook", lambda *_, **__: {"changed": 0})
    result = _PlaybookProvider().read("id", {**PROPS, "roles": playbook.roles_fingerprint("nova.yml")})
    assert result.outs is not None and result.outs["in_sync"] is True


@pytest.mark.parametrize(("changed", "in_sync"), [(0, True), (3, False)])
def test_a_refresh_finds_a_node_drifted_when_its_check_would_change_something(
        monkeypatch: pytest.MonkeyPatch, changed: int, in_sync: bool) -> None:
    checks: list[bool] = []

    def check_run(_props: Any, check: bool = False) -> dict[str, Any]:
        checks.append(check)
        return {"changed": changed}

    monkeypatch.setattr(playbook, "run_playbook", check_run)
    result = _PlaybookProvider().read("id", {**PROPS, "roles": playbook.roles_fingerprint("nova.yml")})
    assert result.outs is not None and result.outs["in_sync"] is in_sync
    assert checks == [True]  # in check mode: a refresh changes nothing on the node
    # and the next `up` configures a drifted node again
    assert diff(result.outs, {**result.outs, "in_sync": None}) is not in_sync


def test_the_deployed_hash_covers_every_file_the_run_deployed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The files shown in preview count as much as the secret ones (deployedHashes)."""
    recap = {"event": "stats", "hosts": {"edpm-compute-1": {"ok": 3, "changed": 1, "unreachable": 0}}}
    result = {"outcome": "done", "exit": 0, "run": summarize([*EVENTS, recap])}
    done = f"PLAY RECAP ***\n{runguard.RESULT}{json.dumps(result)}\n"
    monkeypatch.setattr(playbook, "_run_bounded", lambda *_, **__: (0, done))
    result = run_playbook(PROPS)
    assert result["deployed_hash"] == config_hash({**PROPS["public_files"], **PROPS["files"]})
    assert (result["changed"], result["last_run"]) == (1, "nova.yml on edpm-compute-1: ok=3 changed=1")


# --- real Ansible on this machine, only the run lock's ssh stood in for ----------------------

SAMPLE = Path(__file__).parent / "data" / "events" / "ansible"


@pytest.fixture()
def local_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Runs of the sample role (data/events/) on this machine: real ansible-playbook with the
    project's ansible.cfg and callback, the bench's stand-in for the ssh that takes the run lock."""
    from tools.bench import offline, workspace

    venv = workspace.shim_venv(tmp_path / "venv", scripts={"ssh": offline.STUB_SSH})
    monkeypatch.setenv("PATH", f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(sys, "executable", str(venv / "bin" / "python"))
    ansible = tmp_path / "ansible"
    shutil.copytree(SAMPLE, ansible)
    shutil.copy(playbook.ANSIBLE_DIR / "ansible.cfg", ansible / "ansible.cfg")
    (ansible / "callback_plugins").symlink_to(playbook.ANSIBLE_DIR / "callback_plugins")
    monkeypatch.setattr(playbook, "ANSIBLE_DIR", ansible)
    monkeypatch.setenv("OPENSTACK_NOVA_PROGRESS", str(tmp_path / "progress.log"))
    monkeypatch.delenv(runguard.LOG_DIR, raising=False)
    return tmp_path


def local_props(tmp_path: Path, **sample_vars: Any) -> dict[str, Any]:
    return {
        "playbook": "sample.yml", "host": {"name": "edpm-compute-1", "address": "127.0.0.1", "port": 22,
                                           "user": "root"},
        "host_vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
        "ssh_private_key": "not a key: the stand-in ssh never reads it\n", "known_hosts": f"127.0.0.1 {KEY_1}\n",
        "files": {}, "public_files": {}, "timeouts": {"connect": 5, "task": 60, "run": 300, "lock": 5},
        "vars": {"sample_dir": str(tmp_path), "sample_check": "true", "sample_no_log": False, "sample_broken": [],
                 **sample_vars},
    }


def test_a_real_run_reports_its_recap_and_its_progress(local_runs: Path) -> None:
    result = run_playbook(local_props(local_runs))
    assert result["last_run"] == "sample.yml on edpm-compute-1: ok=3 changed=1" and result["changed"] == 1
    progress = (local_runs / "progress.log").read_text()
    assert "edpm-compute-1 sample: task 'edpm_sample : Lay out the sample's config': changed (" in progress
    assert re.search(r"edpm-compute-1 sample: done in \d+\.\ds: ok=3 changed=1\n$", progress), progress


def test_a_check_stopped_after_a_change_it_would_make_finds_drift_and_a_failure_elsewhere_still_fails(
        local_runs: Path) -> None:
    """Check mode cannot go past a change it does not make (here a config it would lay out; on a node,
    files owned by a user it would create): such a node is drifted, not broken."""
    broken = local_props(local_runs, sample_broken=["b"])
    assert run_playbook(broken, check=True)["changed"] == 1
    assert not (local_runs / "sample.conf").exists()
    # a run that applies stops there as before
    with pytest.raises(PlaybookError, match=r"task 'edpm_sample : Check each part'.*\n  item b: part b is broken"):
        run_playbook(broken)
    # nothing left to change before the failure: the failure is the node's, and a refresh says so
    assert (local_runs / "sample.conf").exists()
    with pytest.raises(PlaybookError, match="part b is broken"):
        run_playbook(broken, check=True)


def test_a_real_run_that_fails_in_a_no_log_task_says_where_and_nothing_of_its_output(local_runs: Path) -> None:
    secret = "s3cr3t-db-password"
    with pytest.raises(PlaybookError) as err:
        run_playbook(local_props(local_runs, sample_no_log=True, sample_check=f"echo {secret} >&2; exit 3"))
    assert str(err.value) == (
        "ansible-playbook sample.yml failed on edpm-compute-1 in play 'Deploy the sample', task 'edpm_sample : "
        "Check the sample's config' (exit 2): the output has been hidden due to the fact that 'no_log: true' was "
        "specified for this result")
    assert secret not in (local_runs / "progress.log").read_text()
