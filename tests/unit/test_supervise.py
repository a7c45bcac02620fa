"""devenv/supervise.py: the local cluster's daemons start again when they exit, as under systemd's
Restart=always, and stop for good when told to."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from devenv.supervise import Backoff, Supervisor, describe
from tests.unit.supervising import FakeTime, alive, log_of, pid_in, supervising, wait_for


def _delays(runs: list[float]) -> list[float]:
    backoff, delay, out = Backoff(), None, []
    for uptime in runs:
        delay = backoff.next_delay(delay, uptime)
        out.append(delay)
    return out


def test_the_backoff_doubles_from_one_second_to_thirty() -> None:
    assert _delays([0.1] * 8) == [1, 2, 4, 8, 16, 30, 30, 30]


@pytest.mark.parametrize(("uptime", "after"), [(59.9, 4), (60.0, 1), (3600.0, 1)])
def test_a_run_of_a_minute_starts_the_backoff_afresh(uptime: float, after: float) -> None:
    assert _delays([0.1, 0.1, uptime]) == [1, 2, after]


def test_the_first_restart_waits_one_second_even_after_a_long_run() -> None:
    assert _delays([3600.0]) == [1]


def test_an_exit_is_described_by_status_or_signal() -> None:
    assert [describe(3), describe(-9), describe(-200)] == \
        ["exited with status 3", "was killed by SIGKILL", "was killed by signal 200"]


def _supervisor(tmp_path: Path, fake: FakeTime, *argv: str) -> tuple[Supervisor, Path]:
    log = (tmp_path / "d.log").open("ab", buffering=0)
    return Supervisor("d", argv, tmp_path / "d.pid", log, stop_timeout=5, clock=fake.clock, wait=fake.wait), \
        tmp_path / "d.log"


def test_a_daemon_that_keeps_exiting_is_restarted_with_growing_waits(tmp_path: Path) -> None:
    fake = FakeTime(stop_after=7)
    pids: list[int | None] = []
    fake.on_child_wait = lambda: pids.append(pid_in(tmp_path / "d.pid"))
    supervisor, log = _supervisor(tmp_path, fake, "sh", "-c", "echo from the child; exit 3")
    assert supervisor.run() == 0
    assert supervisor.delays == [*fake.timed, 30] == [1, 2, 4, 8, 16, 30, 30, 30]
    # the pid file follows every start: eight children, eight pids (read at each wait for a child's exit)
    assert len(dict.fromkeys(pids)) == 8 and None not in pids
    lines = log.read_text().splitlines()
    assert lines.count("from the child") == 8
    exits = [line.split(": ", 1)[1] for line in lines if "exited" in line]
    assert exits[0] == f"pid {pids[0]} exited with status 3 after 0.0 s; restarting in 1 s"
    assert exits[-1].endswith("restarting in 30 s")
    assert lines[-1].endswith("supervise d: got SIGTERM while waiting to restart; stopped")
    assert not (tmp_path / "d.pid").exists()


def test_a_daemon_up_for_a_minute_is_restarted_after_one_second(tmp_path: Path) -> None:
    fake = FakeTime(run_for=61, stop_after=3)
    supervisor, _ = _supervisor(tmp_path, fake, "sh", "-c", "exit 1")
    supervisor.run()
    assert supervisor.delays == [1, 1, 1, 1]


def test_a_command_that_cannot_start_is_tried_again_with_the_same_backoff(tmp_path: Path) -> None:
    fake = FakeTime(stop_after=2)
    supervisor, log = _supervisor(tmp_path, fake, str(tmp_path / "missing"))
    assert supervisor.run() == 0
    assert supervisor.delays == [1, 2, 4]
    lines = log.read_text().splitlines()
    assert lines[0].endswith(f"supervise d: could not start {tmp_path / 'missing'}: No such file or directory; "
                             "restarting in 1 s")
    assert lines[-1].endswith("got SIGTERM while waiting to restart; stopped")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_goes_to_the_daemon_which_is_not_restarted(tmp_path: Path, sig: signal.Signals) -> None:
    fake = FakeTime(stop_at_start=True, stop_with=sig)
    supervisor, log = _supervisor(tmp_path, fake, "sleep", "60")
    assert supervisor.run() == 0
    assert supervisor.delays == []
    text = log.read_text()
    assert text.count("started pid") == 1
    assert f"was killed by {sig.name}; stopped" in text
    assert not (tmp_path / "d.pid").exists()


def test_a_daemon_deaf_to_sigterm_is_killed_after_the_stop_timeout(tmp_path: Path) -> None:
    fake = FakeTime(stop_at_start=True)
    fake.on_child_wait = lambda: wait_for(lambda: "deaf" in log_of(tmp_path)) and None
    supervisor, log = _supervisor(tmp_path, fake, "sh", "-c", "trap '' TERM; echo deaf; exec sleep 60")
    supervisor.run()
    text = log.read_text()
    assert "still runs 5 s after SIGTERM: SIGKILL" in text
    assert "was killed by SIGKILL; stopped" in text


# --- the supervisor as cluster.sh runs it: its own process, real signals ----------------------------------


def test_the_pid_file_names_the_daemon_itself_and_follows_a_restart(tmp_path: Path) -> None:
    pidfile = tmp_path / "d.pid"
    with supervising(tmp_path, "sleep", "60") as sup:
        assert wait_for(lambda: pid_in(pidfile) is not None)
        first = pid_in(pidfile)
        assert first is not None
        assert Path(f"/proc/{first}/cmdline").read_bytes() == b"sleep\x0060\x00"
        os.kill(first, signal.SIGKILL)  # a crash
        assert wait_for(lambda: pid_in(pidfile) not in (None, first), 5)
        second = pid_in(pidfile)
        assert second is not None and alive(second)
        assert sup.poll() is None
    log = (tmp_path / "d.log").read_text()
    assert f"pid {first} was killed by SIGKILL after" in log
    assert "restarting in 1 s" in log


def test_sigterm_stops_the_daemon_and_the_supervisor_for_good(tmp_path: Path) -> None:
    pidfile = tmp_path / "d.pid"
    with supervising(tmp_path, "sleep", "60") as sup:
        assert wait_for(lambda: pid_in(pidfile) is not None)
        child = pid_in(pidfile)
        assert child is not None
        sup.terminate()
        assert sup.wait(5) == 0
        assert not alive(child)
        assert not pidfile.exists()
    assert "got SIGTERM: passing it to pid" in (tmp_path / "d.log").read_text()


def test_sigterm_during_the_backoff_ends_it_at_once(tmp_path: Path) -> None:
    with supervising(tmp_path, "sh", "-c", "exit 3") as sup:
        assert wait_for(lambda: "restarting in" in log_of(tmp_path))
        began = time.monotonic()
        sup.terminate()
        assert sup.wait(5) == 0
        assert time.monotonic() - began < 0.9
    log = (tmp_path / "d.log").read_text()
    assert log.count("started pid") == 1
    assert log.splitlines()[-1].endswith("got SIGTERM while waiting to restart; stopped")


def test_the_daemon_does_not_inherit_blocked_or_ignored_stop_signals(tmp_path: Path) -> None:
    with supervising(tmp_path, "sleep", "60", ignoring_sigint=True) as sup:
        assert wait_for(lambda: pid_in(tmp_path / "d.pid") is not None)
        status = Path(f"/proc/{pid_in(tmp_path / 'd.pid')}/status").read_text()
        masks = {line.split(":")[0]: int(line.split()[1], 16) for line in status.splitlines()
                 if line.startswith(("SigBlk:", "SigIgn:"))}
        assert masks["SigBlk"] == 0
        assert masks["SigIgn"] & (1 << (signal.SIGINT - 1) | 1 << (signal.SIGTERM - 1)) == 0
        # and SIGINT still stops the supervisor that ignored it: it is blocked and waited for
        sup.send_signal(signal.SIGINT)
        assert sup.wait(5) == 0
    assert "was killed by SIGINT; stopped" in log_of(tmp_path)
