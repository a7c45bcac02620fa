"""Run one daemon of the local cluster as a child and start it again whenever it exits, as systemd's
Restart=always (or the kubelet, for static pods) does on a real host: kube-scheduler exits on purpose when
its cache is corrupt, and kube-controller-manager and kube-scheduler when they lose their lease, counting
on exactly that.

    supervise.py --name=NAME --pidfile=PATH --log=PATH -- COMMAND...

The CHILD's pid goes to PIDFILE after every start, so whoever reads it finds the daemon's own command line
in /proc. The child's stdout and stderr are appended to LOG; one line there tells of each start and exit.
Restarts back off from 1 s, doubling, to 30 s; a run of 60 s or more starts the backoff afresh. SIGTERM or
SIGINT is passed on to the child, which gets STOP_TIMEOUT seconds before SIGKILL; then the supervisor exits
and nothing is restarted. Standard library only: cluster.sh runs it with the host's python3.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT})
# Blocked in the supervisor and taken with sigtimedwait: a signal that comes between two checks waits
# for the next one instead of being lost.
WAITED = frozenset({*STOP_SIGNALS, signal.SIGCHLD})


@dataclass(frozen=True)
class Backoff:
    """How long to wait before the next start, from how long the last run lasted."""

    first: float = 1.0
    cap: float = 30.0
    reset_after: float = 60.0

    def next_delay(self, previous: float | None, uptime: float) -> float:
        """`previous` is the delay before the run that just ended (None: no restart yet)."""
        if previous is None or uptime >= self.reset_after:
            return self.first
        return min(previous * 2, self.cap)


# Waits for one of WAITED for at most `timeout` seconds (None: no limit); the signal, or None on timeout.
WaitSignal = Callable[[float | None], "signal.Signals | None"]


def wait_signal(timeout: float | None) -> signal.Signals | None:
    if timeout is None:
        return signal.Signals(signal.sigwaitinfo(WAITED).si_signo)
    info = signal.sigtimedwait(WAITED, max(timeout, 0.0))
    return None if info is None else signal.Signals(info.si_signo)


def _unblock() -> None:
    # Runs in the child before exec: a blocked mask would be inherited and the daemon deaf to SIGTERM,
    # and so would an ignored SIGINT or SIGTERM (a shell's background job ignores SIGINT). systemd too
    # starts a service with the default dispositions.
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)


def describe(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


class Supervisor:
    def __init__(self, name: str, argv: Sequence[str], pidfile: Path, log: IO[bytes], *,
                 backoff: Backoff = Backoff(), stop_timeout: float = 10.0,
                 clock: Callable[[], float] = time.monotonic, wait: WaitSignal = wait_signal) -> None:
        self.name, self.argv, self.pidfile, self.log = name, list(argv), pidfile, log
        self.backoff, self.stop_timeout, self.clock, self.wait = backoff, stop_timeout, clock, wait
        self.delays: list[float] = []  # every backoff taken, for the tests

    def say(self, message: str) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.log.write(f"{stamp} supervise {self.name}: {message}\n".encode())
        self.log.flush()

    def spawn(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
                                preexec_fn=_unblock)

    def record(self, child: subprocess.Popen[bytes]) -> None:
        tmp = self.pidfile.with_name(self.pidfile.name + ".tmp")
        tmp.write_text(f"{child.pid}\n")
        tmp.replace(self.pidfile)
        self.say(f"started pid {child.pid}")

    def stop(self, child: subprocess.Popen[bytes], sig: signal.Signals) -> None:
        """Pass SIG on, give the child stop_timeout seconds, then SIGKILL it."""
        self.say(f"got {sig.name}: passing it to pid {child.pid}; it is not restarted")
        child.send_signal(sig)
        deadline = self.clock() + self.stop_timeout
        while child.poll() is None:
            left = deadline - self.clock()
            if left <= 0:
                self.say(f"pid {child.pid} still runs {self.stop_timeout:g} s after {sig.name}: SIGKILL")
                child.kill()
                child.wait()
                break
            self.wait(left)
        self.say(f"pid {child.pid} {describe(child.returncode)}; stopped")

    def run(self) -> int:
        delay: float | None = None
        while True:
            started = self.clock()
            try:
                child = self.spawn()
            except OSError as err:
                # Like systemd's exec failure: an exit as any other, retried with the same backoff.
                delay = self.backoff.next_delay(delay, 0.0)
                self.delays.append(delay)
                self.say(f"could not start {self.argv[0]}: {err.strerror}; restarting in {delay:g} s")
                pid = None
            else:
                self.record(child)
                pid = child.pid
                # Wait first, then look: a child that is gone already left its SIGCHLD pending.
                while True:
                    sig = self.wait(None)
                    if sig in STOP_SIGNALS:
                        assert sig is not None
                        self.stop(child, sig)
                        self._forget(pid)
                        return 0
                    if child.poll() is not None:
                        break
                uptime = self.clock() - started
                delay = self.backoff.next_delay(delay, uptime)
                self.delays.append(delay)
                self.say(f"pid {pid} {describe(child.returncode)} after {uptime:.1f} s; restarting in {delay:g} s")
            # A stop signal during the backoff ends it: nothing runs, nothing to pass on.
            deadline = self.clock() + delay
            while (left := deadline - self.clock()) > 0:
                sig = self.wait(left)
                if sig in STOP_SIGNALS:
                    assert sig is not None
                    self.say(f"got {sig.name} while waiting to restart; stopped")
                    self._forget(pid)
                    return 0

    def _forget(self, pid: int | None) -> None:
        # Only our own child's pid: a newer supervisor may have written the file since.
        if pid is None:
            return
        try:
            if self.pidfile.read_text().strip() == str(pid):
                self.pidfile.unlink()
        except OSError:
            pass


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="supervise.py", description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True, help="the daemon's name, in the log's lines")
    parser.add_argument("--pidfile", required=True, type=Path, help="where the child's pid goes")
    parser.add_argument("--log", required=True, type=Path, help="appended: the child's output and ours")
    parser.add_argument("--stop-timeout", type=float, default=10.0, help="seconds from SIGTERM to SIGKILL")
    parser.add_argument("command", nargs="+", help="the daemon's command line, after --")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    signal.pthread_sigmask(signal.SIG_BLOCK, WAITED)
    fd = os.open(args.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "ab", buffering=0) as log:
        supervisor = Supervisor(args.name, args.command, args.pidfile, log, stop_timeout=args.stop_timeout)
        return supervisor.run()


if __name__ == "__main__":
    sys.exit(main())
