"""The run guard with real processes: the node's run lock (here a local file, held by
the same script the node runs), runs that never overlap, a guard that outlives a
killed `pulumi up`, and every way a run ends."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.ansible_runner import runguard
from components.ansible_runner.runguard import split_result
from tests.unit.runlock import lock_is_free

ROOT = Path(__file__).resolve().parents[2]


def guard_workdir(tmp_path: Path, name: str, command: list[str], lock: Path, *, wait: int = 30, run: int = 60,
                  lock_argv: list[str] | None = None, check: bool = False, events: bool = False) -> Path:
    """A run's private directory with the guard's spec: the lock is `lock`, taken locally;
    with `events`, the run's events file is there too, as PlaybookRun has it."""
    workdir = tmp_path / name
    workdir.mkdir(mode=0o700)
    (workdir / "secret").write_text("the run's key\n")
    spec = {"node": "edpm-compute-1", "playbook": f"{name}.yml", "check": check,
            "lock": lock_argv or runguard.lock_command(wait, run, check=check, path=str(lock)), "command": command,
            "cwd": str(tmp_path), "limits": {"connect": 5, "run": run, "lock": wait},
            **({"events": str(workdir / "events.jsonl")} if events else {})}
    (workdir / runguard.SPEC).write_text(json.dumps(spec))
    return workdir


def start(workdir: Path, **env: str) -> subprocess.Popen[str]:
    """A guard as PlaybookRun starts it: a session of its own."""
    return subprocess.Popen([sys.executable, "-m", "components.ansible_runner.runguard", str(workdir)], cwd=ROOT,
                            env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)


def finish(guard: subprocess.Popen[str], timeout: int = 60) -> tuple[str, dict[str, Any]]:
    out, _ = guard.communicate(timeout=timeout)
    output, result = split_result(out)
    assert result is not None, out
    return output, result


def eventually(check: Any, seconds: float = 20) -> None:
    deadline = time.time() + seconds
    while not check():
        assert time.time() < deadline, check
        time.sleep(0.1)


def logged_run(log: Path, seconds: float) -> list[str]:
    """A run that logs its start and end (and its process), taking `seconds`."""
    return ["sh", "-c", f'echo "start $$" >> {log}; sleep {seconds}; echo "end $$" >> {log}; echo ran']


def test_runs_on_one_node_never_overlap(tmp_path: Path) -> None:
    lock, log = tmp_path / "run.lock", tmp_path / "runs.log"
    first = start(guard_workdir(tmp_path, "first", logged_run(log, 1.5), lock))
    eventually(lambda: log.exists())
    second = start(guard_workdir(tmp_path, "second", logged_run(log, 0.1), lock))
    out1, result1 = finish(first)
    out2, result2 = finish(second)
    assert result1 == result2 == {"outcome": "done", "exit": 0}
    events = [line.split()[0] for line in log.read_text().splitlines()]
    assert events == ["start", "end", "start", "end"]
    # the second one said whom it waited for
    assert re.search(r"openstack-nova: edpm-compute-1 is busy with another run \(first\.yml, run by pid "
                     rf"{first.pid} on {re.escape(socket.gethostname())}, started \S+Z, ends by \S+Z at the "
                     r"latest\); waiting up to 30s for it to end", out2), out2
    assert "busy" not in out1 and out1.endswith("ran\n")
    assert lock_is_free(lock)


def test_checks_share_the_node_and_changes_have_it_alone(tmp_path: Path) -> None:
    """`pulumi refresh` checks a node's services at once; a run that changes it waits for them."""
    lock, log = tmp_path / "run.lock", tmp_path / "runs.log"
    checks = [start(guard_workdir(tmp_path, f"check{i}", logged_run(log, 1.5), lock, check=True)) for i in (1, 2)]
    eventually(lambda: log.exists() and log.read_text().count("start") == 2, seconds=10)
    change = start(guard_workdir(tmp_path, "change", logged_run(log, 0.1), lock))
    for guard in (*checks, change):
        assert finish(guard)[1] == {"outcome": "done", "exit": 0}
    events = [line.split()[0] for line in log.read_text().splitlines()]
    assert events == ["start", "start", "end", "end", "start", "end"]


PROVIDER = """
import subprocess, sys
guard = subprocess.Popen([sys.executable, "-m", "components.ansible_runner.runguard", sys.argv[1]],
                         start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
print(guard.pid, flush=True)
guard.wait()
"""


def test_a_guard_outlives_a_killed_pulumi_and_the_next_run_waits_for_it(tmp_path: Path) -> None:
    """kill -9 of whatever started the run (pulumi, its provider): the run goes on to its end,
    removes its secrets and frees the node; the next run starts only then."""
    lock, log, logs = tmp_path / "run.lock", tmp_path / "runs.log", tmp_path / "ansible-logs"
    workdir = guard_workdir(tmp_path, "orphan", logged_run(log, 2), lock)
    provider = subprocess.Popen([sys.executable, "-c", PROVIDER, str(workdir)], cwd=ROOT, stdout=subprocess.PIPE,
                                text=True, env={**os.environ, "OPENSTACK_NOVA_ANSIBLE_LOG_DIR": str(logs)})
    assert provider.stdout is not None
    orphan = int(provider.stdout.readline())
    eventually(lambda: log.exists())
    provider.kill()
    provider.wait()
    # its reader is gone; the run is not
    nxt = start(guard_workdir(tmp_path, "next", logged_run(log, 0.1), lock))
    output, result = finish(nxt)
    assert result == {"outcome": "done", "exit": 0}
    assert f"run by pid {orphan} on" in output
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["start", "end", "start", "end"]
    eventually(lambda: not Path(f"/proc/{orphan}").exists() or _zombie(orphan))
    assert not workdir.exists()  # its key and files went with it
    # what nobody read is in the node's log
    assert "ran" in (logs / "edpm-compute-1-orphan.log").read_text()
    assert lock_is_free(lock)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.fixture()
def held(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """The node's lock, held by a run that takes a while."""
    lock = tmp_path / "run.lock"
    holder = start(guard_workdir(tmp_path, "holder", ["sleep", "30"], lock))
    eventually(lambda: lock.exists() and "holder.yml" in lock.read_text())
    yield lock, holder
    holder.terminate()
    holder.communicate(timeout=30)


def test_a_busy_node_fails_after_the_lock_wait_naming_the_holder(tmp_path: Path, held: Any) -> None:
    lock, holder = held
    started = time.time()
    _, result = finish(start(guard_workdir(tmp_path, "late", ["true"], lock, wait=1)))
    assert time.time() - started < 15
    assert result["outcome"] == "busy"
    assert re.fullmatch(rf"holder\.yml, run by pid {holder.pid} on {re.escape(socket.gethostname())}, "
                        r"started \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ, ends by \S+ at the latest", result["holder"])


def test_no_lock_wait_means_fail_at_once(tmp_path: Path, held: Any) -> None:
    lock, _ = held
    started = time.time()
    _, result = finish(start(guard_workdir(tmp_path, "late", ["true"], lock, wait=0)))
    assert result["outcome"] == "busy" and time.time() - started < 10


def _group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return all(_zombie(int(p)) for p in os.listdir("/proc") if p.isdigit() and _pgid(int(p)) == pgid)


def _pgid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[3])
    except (OSError, IndexError, ValueError):
        return -1


def test_a_stopped_guard_stops_its_run_and_frees_the_node(tmp_path: Path) -> None:
    lock, child = tmp_path / "run.lock", tmp_path / "child.pid"
    workdir = guard_workdir(tmp_path, "run", ["sh", "-c", f"sleep 300 & echo $! > {child}; wait"], lock)
    guard = start(workdir)
    eventually(child.exists)
    pgid = _pgid(int(child.read_text()))
    guard.send_signal(signal.SIGTERM)
    _, result = finish(guard)
    assert result == {"outcome": "stopped", "detail": "SIGTERM"}
    eventually(lambda: _group_gone(pgid), seconds=10)  # exiting processes may take a moment
    assert lock_is_free(lock) and not workdir.exists()


def test_a_run_past_its_limit_is_stopped_and_frees_the_node(tmp_path: Path) -> None:
    lock = tmp_path / "run.lock"
    _, result = finish(start(guard_workdir(tmp_path, "slow", ["sleep", "300"], lock, run=1)))
    assert result == {"outcome": "timeout"}
    assert lock_is_free(lock)


def _holders_of(lock: Path) -> list[int]:
    """The processes with `lock` open: those that hold it."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(lock) for fd in os.listdir(f"/proc/{pid}/fd")):
                pids.append(int(pid))
        except OSError:
            continue
    return pids


def test_a_run_that_loses_its_lock_is_stopped(tmp_path: Path) -> None:
    """E.g. the node rebooted under the run: it no longer excludes other runs, so it stops."""
    lock = tmp_path / "run.lock"
    guard = start(guard_workdir(tmp_path, "run", ["sleep", "300"], lock))
    eventually(lambda: lock.exists() and "run.yml" in lock.read_text() and bool(_holders_of(lock)))
    for pid in _holders_of(lock):
        os.kill(pid, signal.SIGKILL)
    _, result = finish(guard)
    assert result["outcome"] == "lost"


def test_an_unreachable_node_runs_nothing(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    ssh = ["sh", "-c", "echo 'ssh: connect to host 192.0.2.7 port 22: No route to host' >&2; exit 255"]
    _, result = finish(start(guard_workdir(tmp_path, "run", ["touch", str(ran)], tmp_path / "x", lock_argv=ssh)))
    assert result == {"outcome": "unreachable", "exit": 255,
                      "detail": "ssh: connect to host 192.0.2.7 port 22: No route to host"}
    assert not ran.exists()


def test_a_lock_that_cannot_be_written_runs_nothing(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    _, result = finish(start(guard_workdir(tmp_path, "run", ["touch", str(ran)], Path("/dev/null/run.lock"))))
    assert result["outcome"] == "nolock" and "cannot write /dev/null/run.lock" in result["detail"]
    assert not ran.exists()


def test_a_node_without_flock_runs_nothing(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    without = ["env", "PATH=/nonexistent", "/bin/sh", *runguard.lock_command(5, 60, path=str(tmp_path / "l"))[1:]]
    _, result = finish(start(guard_workdir(tmp_path, "run", ["touch", str(ran)], tmp_path / "l", lock_argv=without)))
    assert result == {"outcome": "nolock", "detail": "the node has no flock (util-linux, coreutils)"}
    assert not ran.exists()


def test_the_run_reports_its_exit_status(tmp_path: Path) -> None:
    output, result = finish(start(guard_workdir(tmp_path, "run", ["sh", "-c", "echo out; exit 3"],
                                                tmp_path / "run.lock")))
    assert result == {"outcome": "done", "exit": 3}
    assert output == "out\n"


# Stands in for ansible-playbook: writes its events as the project's callback does, and goes
# on past its first task only once that task shows in the progress file ($1).
WITH_EVENTS = """
say() { echo "$1" >>"$OPENSTACK_NOVA_EVENTS"; }
say '{"event": "play", "name": "Deploy nova-compute"}'
say '{"event": "task", "name": "edpm_nova : Copy the files", "handler": false}'
i=0
until grep -q "task 'edpm_nova : Copy the files' [.][.][.]" "$1" 2>/dev/null; do
  i=$((i + 1)); [ "$i" -lt 200 ] || exit 9; sleep 0.1
done
say '{"event": "result", "status": "changed", "host": "edpm-compute-1", "task": "edpm_nova : Copy the files"}'
say '{"event": "stats", "hosts": {"edpm-compute-1": {"ok": 1, "changed": 1, "unreachable": 0}}}'
"""


def test_a_run_shows_its_progress_while_it_goes_and_sums_up_its_events(tmp_path: Path) -> None:
    progress = tmp_path / "progress-dev.log"
    workdir = guard_workdir(tmp_path, "nova", ["sh", "-c", WITH_EVENTS, "ansible", str(progress)],
                            tmp_path / "run.lock", events=True)
    _, result = finish(start(workdir, OPENSTACK_NOVA_PROGRESS=str(progress)))
    assert result == {"outcome": "done", "exit": 0, "run": {
        "play": "Deploy nova-compute", "task": "edpm_nova : Copy the files", "failure": None,
        "stats": {"ok": 1, "changed": 1, "unreachable": 0, "failures": 0, "skipped": 0, "rescued": 0, "ignored": 0}}}
    lines = [line.split(" ", 1)[1] for line in progress.read_text().splitlines()]
    expected = [r"edpm-compute-1 nova: started",
                r"edpm-compute-1 nova: play 'Deploy nova-compute'",
                r"edpm-compute-1 nova: task 'edpm_nova : Copy the files' \.\.\.",
                r"edpm-compute-1 nova: task 'edpm_nova : Copy the files': changed \(\d+\.\ds\)",
                r"edpm-compute-1 nova: play 'Deploy nova-compute' done \(\d+\.\ds\)",
                r"edpm-compute-1 nova: done in \d+\.\ds: ok=1 changed=1"]
    assert len(lines) == len(expected) and all(map(re.fullmatch, expected, lines)), lines


def test_a_run_without_events_has_no_summary(tmp_path: Path) -> None:
    _, result = finish(start(guard_workdir(tmp_path, "run", ["true"], tmp_path / "run.lock", events=True)))
    assert result == {"outcome": "done", "exit": 0}


def test_a_result_line_is_found_after_the_output() -> None:
    assert split_result(f"a\nb\n\n{runguard.RESULT}{{\"outcome\": \"done\", \"exit\": 0}}\n") == (
        "a\nb\n", {"outcome": "done", "exit": 0})
    assert split_result("Traceback ...\n") == ("Traceback ...\n", None)
