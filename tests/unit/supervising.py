"""Helpers for the tests of devenv/supervise.py: a fake clock whose waits only move it on, and the
supervisor run as its own process, as cluster.sh runs it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

SUPERVISE = Path(__file__).resolve().parents[2] / "devenv" / "supervise.py"


class FakeTime:
    """clock() and wait() for a Supervisor: a wait for a child's exit polls for real (the children are real
    processes) and lets `run_for` seconds pass; a timed wait lets its timeout pass at once. After `stop_after`
    timed waits, or the first untimed one when `stop_at_start`, the next wait returns `stop_with`."""

    def __init__(self, *, run_for: float = 0.0, stop_after: int | None = None,
                 stop_at_start: bool = False, stop_with: signal.Signals = signal.SIGTERM) -> None:
        self.now = 1000.0
        self.run_for, self.stop_after = run_for, stop_after
        self.stop_at_start, self.stop_with = stop_at_start, stop_with
        self.timed: list[float] = []
        self.on_child_wait: Callable[[], None] = lambda: None

    def clock(self) -> float:
        return self.now

    def wait(self, timeout: float | None) -> signal.Signals | None:
        if timeout is None:
            self.on_child_wait()
            if self.stop_at_start:
                self.stop_at_start = False
                return self.stop_with
            time.sleep(0.01)
            self.now += self.run_for
            return signal.SIGCHLD
        if self.stop_after is not None and len(self.timed) >= self.stop_after:
            return self.stop_with
        self.timed.append(timeout)
        self.now += timeout
        return None


def pid_in(pidfile: Path) -> int | None:
    try:
        return int(pidfile.read_text())
    except (OSError, ValueError):
        return None


def alive(pid: int) -> bool:
    """Running and not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def log_of(tmp_path: Path) -> str:
    try:
        return (tmp_path / "d.log").read_text()
    except FileNotFoundError:
        return ""


def wait_for(what: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if what():
            return True
        time.sleep(0.02)
    return what()


@contextmanager
def supervising(tmp_path: Path, *command: str, stop_timeout: float = 10.0,
                ignoring_sigint: bool = False) -> Iterator[subprocess.Popen[bytes]]:
    """supervise.py running COMMAND (pid file tmp_path/d.pid, log tmp_path/d.log), killed at the end
    with whatever it still runs. `ignoring_sigint`: started as a shell's background job is."""
    def ignore_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    proc = subprocess.Popen([sys.executable, str(SUPERVISE), "--name=d", f"--pidfile={tmp_path / 'd.pid'}",
                             f"--log={tmp_path / 'd.log'}", f"--stop-timeout={stop_timeout:g}", "--", *command],
                            start_new_session=True, preexec_fn=ignore_sigint if ignoring_sigint else None)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        child = pid_in(tmp_path / "d.pid")
        if child is not None and alive(child):
            os.kill(child, signal.SIGKILL)
