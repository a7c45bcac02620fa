"""What a run reports through Ansible's events: the project's callback with real
ansible-playbook runs (the recorded streams under data/events/ are what it writes today),
and from those streams, where a run got to, what a failure says and the progress lines.

Record the streams again after a change of the callback or of the sample role:
    OPENSTACK_NOVA_RECORD_EVENTS=1 .venv/bin/python -m pytest -q tests/unit/test_run_events.py
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from components.ansible_runner import events, runguard
from components.ansible_runner.failures import PlaybookError, UnreachableNodeError, failure, where
from components.ansible_runner.playbook import DEFAULT_TIMEOUTS, _ansible_env
from tests.unit.sshnode import free_port

DATA = Path(__file__).parent / "data" / "events"
SECRET = "s3cr3t-db-password"
CHECK_FAILS = "echo checking sample.conf; echo 'sample.conf: no option [DEFAULT]/bogus' >&2; exit 3"
# What each recorded run is given: the sample role's vars, and whether its node can be reached.
CASES: dict[str, dict[str, Any]] = {
    "deployed": {"sample_check": "true", "sample_no_log": False, "sample_broken": []},
    "failed-command": {"sample_check": CHECK_FAILS, "sample_no_log": False, "sample_broken": []},
    "failed-no-log": {"sample_check": f"echo {SECRET}; echo {SECRET} >&2; exit 3", "sample_no_log": True,
                      "sample_broken": []},
    "failed-loop": {"sample_check": "true", "sample_no_log": False, "sample_broken": ["b", "c"]},
    "unreachable": {"sample_check": "true", "sample_no_log": False, "sample_broken": []},
}
NODE = "edpm-compute-1"
PROPS: dict[str, Any] = {"host": {"name": NODE, "address": "192.168.122.101", "port": 22, "user": "root"},
                         "host_vars": {}}


def recorded(case: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / f"{case}.jsonl").read_text().splitlines()]


def run_sample(case: str, tmp_path: Path) -> tuple[int, list[dict[str, Any]], str]:
    """A real ansible-playbook run of the sample role on this machine (`unreachable`: over SSH
    to a port nothing listens on), with the environment a PlaybookRun gives it."""
    workdir = tmp_path / case
    (workdir / "files").mkdir(parents=True)
    host: dict[str, Any] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    if case == "unreachable":
        host = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": free_port(),
                "ansible_user": "root", "ansible_ssh_common_args": "-o UserKnownHostsFile=/dev/null"}
    (workdir / "inventory.json").write_text(json.dumps({"all": {"hosts": {NODE: host}}}))
    (workdir / "vars.json").write_text(json.dumps({**CASES[case], "sample_dir": str(workdir / "files")}))
    stream = workdir / "events.jsonl"
    env = {**_ansible_env(workdir, DEFAULT_TIMEOUTS), "ANSIBLE_ROLES_PATH": str(DATA / "ansible" / "roles"),
           events.EVENTS: str(stream)}
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(workdir / "inventory.json"),
                           "-e", f"@{workdir / 'vars.json'}", str(DATA / "ansible" / "playbooks" / "sample.yml")],
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, events.EventFile(stream).new(), proc.stdout + proc.stderr


def _comparable(stream: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A stream without what differs from one run to the next: times, the port of `unreachable`."""
    text = json.dumps([{k: v for k, v in e.items() if k != "time"} for e in stream])
    return json.loads(re.sub(r"port \d+", "port PORT", text))


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_recorded_streams_are_what_the_callback_writes(case: str, tmp_path: Path) -> None:
    status, stream, output = run_sample(case, tmp_path)
    assert (status == 0) is (case == "deployed"), output
    if os.environ.get("OPENSTACK_NOVA_RECORD_EVENTS"):
        (DATA / f"{case}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in stream))
    assert _comparable(stream) == _comparable(recorded(case)), (
        "the callback writes another stream than the recorded one: record it again (this module's docstring)")


def test_a_task_with_no_log_leaves_nothing_of_its_output_in_the_events(tmp_path: Path) -> None:
    status, stream, output = run_sample("failed-no-log", tmp_path)
    assert status != 0 and SECRET in json.dumps(CASES["failed-no-log"])
    assert SECRET not in (tmp_path / "failed-no-log" / "events.jsonl").read_text()
    assert SECRET not in output  # nor in Ansible's own output
    censored = [e for e in stream if e.get("censored")]
    assert [e["task"] for e in censored] == ["edpm_sample : Check the sample's config"]


def test_a_run_that_went_well_sums_up_its_recap() -> None:
    summary = events.summarize(recorded("deployed"))
    assert summary == {"play": "Deploy the sample", "task": "edpm_sample : Restart the sample", "failure": None,
                       "stats": {"ok": 3, "changed": 1, "unreachable": 0, "failures": 0, "skipped": 2,
                                 "rescued": 0, "ignored": 0}}


def _failed(case: str, exit_status: int = 2) -> PlaybookError | None:
    result = {"outcome": "done", "exit": exit_status, "run": events.summarize(recorded(case))}
    return failure(PROPS, "sample.yml", DEFAULT_TIMEOUTS, "PLAY RECAP ***\n", result, 0)


def test_a_failed_command_names_its_task_and_says_what_the_command_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(runguard.LOG_DIR, raising=False)
    error = _failed("failed-command")
    assert type(error) is PlaybookError
    assert str(error) == (
        "ansible-playbook sample.yml failed on edpm-compute-1 in play 'Deploy the sample', task 'edpm_sample : "
        "Check the sample's config' (exit 2): non-zero return code\n"
        "  exit status 3\n"
        "  sample.conf: no option [DEFAULT]/bogus")


def test_a_failure_names_where_the_whole_output_is(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(runguard.LOG_DIR, str(tmp_path))
    assert str(_failed("failed-command")).endswith(
        f"\n(the run's whole output: {tmp_path}/edpm-compute-1-sample.log)")


def test_a_failed_task_with_no_log_shows_as_censored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(runguard.LOG_DIR, raising=False)
    assert str(_failed("failed-no-log")) == (
        "ansible-playbook sample.yml failed on edpm-compute-1 in play 'Deploy the sample', task 'edpm_sample : "
        "Check the sample's config' (exit 2): the output has been hidden due to the fact that 'no_log: true' was "
        "specified for this result")


def test_a_failed_loop_names_each_failed_item(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(runguard.LOG_DIR, raising=False)
    assert str(_failed("failed-loop")) == (
        "ansible-playbook sample.yml failed on edpm-compute-1 in play 'Deploy the sample', task 'edpm_sample : "
        "Check each part' (exit 2): One or more items failed\n"
        "  item b: part b is broken\n"
        "  item c: part c is broken")


def test_a_node_that_cannot_be_reached_is_unreachable_in_its_first_task() -> None:
    error = _failed("unreachable", exit_status=4)
    assert isinstance(error, UnreachableNodeError)
    assert re.match(
        r"ansible-playbook sample\.yml failed on edpm-compute-1 in play 'Deploy the sample', task 'edpm_sample : "
        r"Lay out the sample's config': edpm-compute-1 \(192\.168\.122\.101:22\) is unreachable \(ssh: connect to "
        r"host 127\.0\.0\.1 port \d+: Connection refused\)\. Check the node and its network, then run `pulumi up` "
        r"again\.", str(error)), str(error)


def test_an_ignored_failure_is_no_failure_of_the_run() -> None:
    stream = [{"event": "play", "name": "p"}, {"event": "task", "name": "t1"},
              {"event": "result", "status": "failed", "task": "t1", "ignored": True, "msg": "ignored"},
              {"event": "task", "name": "t2"}, {"event": "result", "status": "ok", "task": "t2"}]
    assert events.summarize(stream)["failure"] is None
    assert where(events.summarize(stream)) == "play 'p', task 't2'"


def test_a_run_stopped_at_its_limit_names_the_task_it_was_in() -> None:
    stream = recorded("deployed")[:4]  # stopped while its second task ran
    error = failure(PROPS, "sample.yml", {**DEFAULT_TIMEOUTS, "run": 120}, "",
                    {"outcome": "timeout", "run": events.summarize(stream)}, 0)
    assert str(error).startswith(
        "ansible-playbook sample.yml on edpm-compute-1 did not finish within 120s (its node set's "
        "nodeTemplate.timeouts.run) and was stopped in play 'Deploy the sample', task 'edpm_sample : Skip what "
        "is not asked for'.")


def test_a_run_without_events_says_what_ansible_printed() -> None:
    output = "ERROR! the playbook: sample.yml could not be found\n"
    error = failure(PROPS, "sample.yml", DEFAULT_TIMEOUTS, output, {"outcome": "done", "exit": 1}, 0)
    assert str(error) == (f"ansible-playbook sample.yml failed on edpm-compute-1 before its first play (exit 1):\n"
                          f"{output.strip()}")


def test_progress_names_the_node_the_service_and_each_play_and_task_with_its_time() -> None:
    progress = events.Progress(NODE, "sample.yml")
    stream = recorded("failed-command")
    lines = [line for event in stream for line in progress.of(event)]
    texts = [line.split(" ", 1)[1] for line in lines]
    assert texts[:3] == ["edpm-compute-1 sample: play 'Deploy the sample'\n",
                         "edpm-compute-1 sample: task 'edpm_sample : Lay out the sample's config' ...\n",
                         f"edpm-compute-1 sample: task 'edpm_sample : Lay out the sample's config': changed "
                         f"({stream[2]['time'] - stream[1]['time']:.1f}s)\n"]
    assert "edpm-compute-1 sample: task 'edpm_sample : Check the sample's config': failed" in texts[-2]
    assert texts[-1].startswith("edpm-compute-1 sample: play 'Deploy the sample' done (")
    assert all(re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ ", line) for line in lines)
    end = progress.end({"outcome": "done", "exit": 2, "run": events.summarize(stream)})
    assert re.search(r"edpm-compute-1 sample: failed in \d+\.\ds \(exit 2\): ok=1 changed=1\n$", end), end


def test_progress_of_a_check_says_so() -> None:
    progress = events.Progress(NODE, "nova.yml", check=True)
    assert progress.start().endswith(" edpm-compute-1 nova (check): started\n")
    assert re.search(r"nova \(check\): done in \d+\.\ds: ok=3 changed=1\n$", progress.end(
        {"outcome": "done", "exit": 0, "run": events.summarize(recorded("deployed"))}))


def test_the_event_file_is_read_as_it_grows(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    reader = events.EventFile(path)
    assert reader.new() == []
    with path.open("a") as handle:
        handle.write('{"event": "play", "name": "p"}\n{"event": "ta')
    assert reader.new() == [{"event": "play", "name": "p"}]
    with path.open("a") as handle:
        handle.write('sk", "name": "t"}\nnot json\n')
    assert reader.new() == [{"event": "task", "name": "t"}]
