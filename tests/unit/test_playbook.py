"""PlaybookRun's decisions, without running Ansible: when a node is configured
again, and what may never change."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from components.playbook import PlaybookError, _ansible_env, _PlaybookProvider, _run_bounded, _where

PROPS: dict[str, Any] = {
    "playbook": "nova.yml",
    "host": {"name": "edpm-compute-1", "address": "192.168.122.101", "port": 22, "user": "root"},
    "host_vars": {}, "ssh_private_key": "key", "known_hosts": "", "vars": {},
    "files": {"01-nova.conf": "[DEFAULT]\n"}, "public_files": {"25-nova-extra.conf": "[libvirt]\n"},
    "pinned": {"cell": "cell2"}, "pinned_reason": "remove the node first.", "in_sync": True,
}


def diff(olds: dict[str, Any], news: dict[str, Any]) -> bool:
    return bool(_PlaybookProvider().diff("id", olds, news).changes)


def test_nothing_changed_means_no_run() -> None:
    assert diff(PROPS, dict(PROPS)) is False


@pytest.mark.parametrize("key", ["public_files", "files", "host_vars", "ssh_private_key", "known_hosts"])
def test_a_changed_input_means_a_run(key: str) -> None:
    assert diff(PROPS, {**PROPS, key: {"other": "value"}}) is True


def test_drift_found_by_refresh_means_a_run() -> None:
    assert diff({**PROPS, "in_sync": False}, dict(PROPS)) is True


def test_a_pinned_value_cannot_change() -> None:
    with pytest.raises(PlaybookError) as err:
        diff(PROPS, {**PROPS, "pinned": {"cell": "cell1"}})
    assert str(err.value) == (
        "edpm-compute-1: cell is 'cell2' on the node and cannot become 'cell1'. remove the node first.")


def test_outputs_alone_do_not_mean_a_run() -> None:
    assert diff({**PROPS, "deployed_hash": "a", "last_run": "x"}, {**PROPS, "deployed_hash": None}) is False


WHOLE_FILE = ("192.168.122.100 ssh-ed25519 AAAAnode0\n# a comment\n192.168.122.101 ssh-ed25519 AAAAnode1\n"
              "@cert-authority *.example ssh-ed25519 AAAAca\n")
OWN_LINES = "192.168.122.101 ssh-ed25519 AAAAnode1\n@cert-authority *.example ssh-ed25519 AAAAca\n"


def test_a_run_recorded_with_the_whole_known_hosts_file_is_not_run_again_for_its_own_lines() -> None:
    """Runs deployed before each carried only its node's lines: upgrading re-runs nothing."""
    assert diff({**PROPS, "known_hosts": WHOLE_FILE}, {**PROPS, "known_hosts": OWN_LINES}) is False


def test_a_change_of_another_nodes_host_key_means_no_run_here() -> None:
    other = WHOLE_FILE.replace("AAAAnode0", "AAAAnode0-new") + "192.168.122.102 ssh-ed25519 AAAAnode2\n"
    assert diff({**PROPS, "known_hosts": WHOLE_FILE}, {**PROPS, "known_hosts": other}) is False


@pytest.mark.parametrize("own", [
    OWN_LINES.replace("AAAAnode1", "AAAAnode1-new"),  # the node's key changed
    "192.168.122.101 ssh-ed25519 AAAAnode1\n",  # the CA it could be verified by is gone
])
def test_a_change_of_what_verifies_the_node_means_a_run(own: str) -> None:
    assert diff({**PROPS, "known_hosts": WHOLE_FILE}, {**PROPS, "known_hosts": own}) is True


def test_a_new_time_limit_alone_does_not_mean_a_run() -> None:
    assert diff({**PROPS, "timeouts": {"connect": 30, "task": 600, "run": 1800}},
                {**PROPS, "timeouts": {"connect": 5, "task": 60, "run": 120}}) is False


OUTPUT = """
PLAY [Deploy nova-compute] *****************************************************

TASK [edpm_nova : Copy the files] **********************************************
changed: [edpm-compute-1]

RUNNING HANDLER [edpm_nova : Restart nova] *************************************
"""


def test_a_failure_names_the_play_and_task_it_happened_in() -> None:
    assert _where(OUTPUT) == "play 'Deploy nova-compute', task 'edpm_nova : Restart nova'"
    assert _where("PLAY [Stop nova-compute] ***\n") == "play 'Stop nova-compute'"
    assert _where("ERROR! the playbook could not be found\n") == "before its first play"


def test_a_run_past_its_limit_is_stopped_with_all_it_started(tmp_path: Path) -> None:
    child = tmp_path / "child.pid"
    script = f'echo "PLAY [p] ***"; sleep 300 & echo $! > {child}; wait'
    status, output = _run_bounded(["sh", "-c", script], tmp_path, dict(os.environ), limit=1)
    assert status is None and "PLAY [p]" in output
    stat = Path(f"/proc/{int(child.read_text())}/stat")
    # gone, or dead and not yet reaped by whoever inherited it
    assert not stat.exists() or stat.read_text().split(")")[-1].split()[0] == "Z"


def test_a_run_within_its_limit_reports_its_exit_status(tmp_path: Path) -> None:
    assert _run_bounded(["sh", "-c", "echo out; echo err >&2; exit 3"], tmp_path, dict(os.environ), limit=30) == (
        3, "out\nerr\n")


def test_a_run_keeps_its_ssh_connections_and_limits_to_itself(tmp_path: Path) -> None:
    env = _ansible_env(tmp_path, {"connect": 5, "task": 60, "run": 120})
    assert (env["ANSIBLE_TIMEOUT"], env["ANSIBLE_TASK_TIMEOUT"]) == ("5", "60")
    # no connection of another run (another known_hosts, a node since hung) is reused
    assert env["ANSIBLE_SSH_CONTROL_PATH_DIR"] == str(tmp_path / "cp")
    assert all(env[k].startswith(str(tmp_path)) for k in ("ANSIBLE_HOME", "ANSIBLE_LOCAL_TEMP"))
