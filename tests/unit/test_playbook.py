"""PlaybookRun's decisions, without running Ansible: when a node is configured
again, and what may never change."""

from __future__ import annotations

import os
import time
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
    script = f'sleep 300 & echo $! > {child}; echo "PLAY [p] ***"; wait'
    # the limit falls once the child runs, however slow the machine
    status, output = _run_bounded(["sh", "-c", f"{script} & while [ ! -s {child} ]; do sleep 0.1; done; wait"],
                                  tmp_path, dict(os.environ), limit=5)
    assert status is None and "PLAY [p]" in output
    # gone, or dead and not yet reaped by whoever inherited it; a killed process may still be
    # exiting for a moment on a loaded machine
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
