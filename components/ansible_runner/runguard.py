"""The run guard: one Ansible run on one node, from taking the node's run lock to
releasing it.

`python -m components.ansible_runner.runguard WORKDIR` is what PlaybookRun starts, in a
session of its own, for every run. A killed or interrupted `pulumi up` leaves
the guard going: it finishes the run (or stops it at its time limit), frees the
node and removes WORKDIR, which holds the run's secrets. So no run is left
unguarded, and the next run on the node waits for it instead of overlapping it.

The lock is on the node (a `flock` on LOCK_PATH), so runs from any machine
exclude each other. A process on the node holds it for as long as the guard's
connection to it stays open, and never longer than the run's limit: when the
guard ends, even killed, its connection closes and the node is free again.

The guard prints the run's output as it comes, then one last line: RESULT and
a JSON object (`outcome`: done, busy, nolock, unreachable, timeout, stopped or
lost; `exit`, `holder`, `detail`; `run`, once Ansible reported anything: where
it got to, what failed, its recap, from the run's events, `events.summarize`).
While it runs, it appends the run's progress (`events.Progress`) to the file
that PROGRESS names, when set.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from components.ansible_runner import events

LOCK_PATH = "/var/lib/openstack/ansible-run.lock"
SPEC = "guard.json"
SSH_FAILED = 255  # ssh's own exit status when it did not get to run the command
RESULT = "@@openstack-nova-run-result "
STOP_GRACE = 10  # seconds between asking a run to stop and killing it
LOG_DIR = "OPENSTACK_NOVA_ANSIBLE_LOG_DIR"  # where each node's runs are logged, when set
# The holder of the lock on the node waits for the run's lock wait, then holds it while
# the guard's connection is open, at most this long past the run's limit.
HOLD_MARGIN = 3 * STOP_GRACE + 30

# Runs on the node with the wait and hold times in seconds and the lock's mode (-x: a run
# that changes the node; -s: a check, which others may make at the same time); reads the
# holder's record (one line) on stdin, then holds the lock until stdin closes. Answers
# WAITING/BUSY <record of the holder>, NOLOCK <why> or LOCKED.
LOCK_SCRIPT = r"""
set -u
lock=$1 wait=$2 hold=$3 mode=$4
IFS= read -r holder || exit 71
for tool in flock timeout; do
  command -v "$tool" >/dev/null || { echo "NOLOCK the node has no $tool (util-linux, coreutils)"; exit 70; }
done
mkdir -p "$(dirname "$lock")" 2>/dev/null
if ! ( : >>"$lock" ) 2>/dev/null; then echo "NOLOCK $(id -un) cannot write $lock"; exit 70; fi
exec 9>>"$lock"
if ! flock "$mode" -n 9; then
  echo "WAITING $(head -n 1 "$lock")"
  if [ "$wait" -eq 0 ] || ! flock "$mode" -w "$wait" 9; then echo "BUSY $(head -n 1 "$lock")"; exit 75; fi
fi
printf '%s\n' "$holder" >"$lock"
echo LOCKED
exec timeout "$hold" cat >/dev/null
"""


def lock_command(wait: int, run_limit: int, *, check: bool = False, path: str | None = None) -> list[str]:
    """The command that takes and holds the run lock at `path` (LOCK_PATH: run on the node).
    Checks (drift, check mode) share it with each other; a run that changes the node has it alone."""
    return ["sh", "-c", LOCK_SCRIPT, "openstack-nova-lock", path or LOCK_PATH, str(wait),
            str(run_limit + HOLD_MARGIN), "-s" if check else "-x"]


def split_result(output: str) -> tuple[str, dict[str, Any] | None]:
    """A guard's output without its result line, and the result (None if it printed none)."""
    head, marker, tail = output.rpartition(RESULT)
    if not marker:
        return output, None
    try:
        return head.rstrip("\n") + "\n" if head else "", json.loads(tail.strip())
    except ValueError:
        return output, None


class _Output:
    """The guard's stdout, which may go away with whoever reads it: the run goes on, and its
    output still reaches the log."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream: IO[str] | None = stream
        self.text: list[str] = []
        self._lock = threading.Lock()

    def write(self, text: str) -> None:
        with self._lock:
            self.text.append(text)
            if self._stream is None:
                return
            try:
                self._stream.write(text)
                self._stream.flush()
            except (BrokenPipeError, OSError):
                self._stream = None  # the reader is gone: keep the run going


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def log_path(node: str, playbook: str) -> Path | None:
    """The private log that keeps the whole output of a node's runs of `playbook`, if asked for."""
    log_dir = os.environ.get(LOG_DIR)
    return Path(log_dir) / f"{node}-{Path(playbook).stem}.log" if log_dir else None


def keep_log(node: str, playbook: str, check: bool, output: str) -> None:
    """Appends the run's whole output to a private per-node log, when asked to."""
    path = log_path(node, playbook)
    if path is None:
        return
    os.makedirs(path.parent, mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a") as handle:
        handle.write(f"== {time.strftime('%Y-%m-%dT%H:%M:%S')} {playbook}{' (check)' if check else ''}\n{output}\n")


def _lines(stream: IO[str], into: queue.Queue[str | None]) -> None:
    for line in stream:
        into.put(line)
    into.put(None)


class Guard:
    """One run: spec keys `node`, `playbook`, `check`, `lock` (argv that holds the node's
    lock: lock_command, run there), `command` (the run's argv), `cwd`, `limits`
    (`connect`, `run`, `lock` seconds), `events` (the file Ansible's callback writes the
    run's events to, when it has one)."""

    def __init__(self, spec: Mapping[str, Any], out: _Output) -> None:
        self.spec, self.out = spec, out
        self.limits: Mapping[str, int] = spec["limits"]
        self.stop_signal: str | None = None
        self.started = time.time()
        self.events = events.EventFile(Path(spec["events"])) if spec.get("events") else None
        self.seen: list[dict[str, Any]] = []
        self.progress = events.Progress(spec["node"], spec["playbook"], bool(spec.get("check")))
        self.progress_file = os.environ.get(events.PROGRESS) or None

    def on_signal(self, signum: int, _frame: Any) -> None:
        self.stop_signal = signal.Signals(signum).name

    def note(self, text: str) -> None:
        self.out.write(f"openstack-nova: {text}\n")

    def show(self, *lines: str) -> None:
        """Appends progress lines to the progress file, if any (one write each: the runs of a
        stack share the file); a file that cannot be written costs the run nothing."""
        if not self.progress_file:
            return
        try:
            fd = os.open(self.progress_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError:
            return
        try:
            for line in lines:
                os.write(fd, line.encode())
        except OSError:
            pass
        finally:
            os.close(fd)

    def read_events(self) -> None:
        """Takes in the events written since the last call: progress lines for each."""
        if self.events is None:
            return
        for event in self.events.new():
            self.seen.append(event)
            self.show(*self.progress.of(event))

    def with_run(self, outcome: dict[str, Any]) -> dict[str, Any]:
        """The outcome with what the run's events say of it, once there are any."""
        self.read_events()
        return {**outcome, "run": events.summarize(self.seen)} if self.seen else outcome

    def holder_record(self) -> str:
        """Who holds the node: what the next run reports while it waits."""
        ends = self.started + self.limits["lock"] + self.limits["run"] + HOLD_MARGIN
        check = " (check mode)" if self.spec.get("check") else ""
        return (f"{self.spec['playbook']}{check}, run by pid {os.getpid()} on {socket.gethostname()}, "
                f"started {_iso(self.started)}, ends by {_iso(ends)} at the latest")

    def run(self) -> dict[str, Any]:
        self.show(self.progress.start())
        lock = subprocess.Popen(self.spec["lock"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, process_group=0)
        errors: list[str] = []
        err_reader = threading.Thread(target=lambda: errors.extend(lock.stderr or []), daemon=True)
        err_reader.start()
        try:
            failure = self._take(lock, errors, err_reader)
            if failure is not None:
                return failure
            return self._run_locked(lock, errors, err_reader)
        finally:
            self._release(lock)

    def _take(self, lock: subprocess.Popen[str], errors: list[str],
              err_reader: threading.Thread) -> dict[str, Any] | None:
        """None once the node is ours, else the result that says why not."""
        assert lock.stdin is not None and lock.stdout is not None
        try:
            lock.stdin.write(self.holder_record() + "\n")
            lock.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # it failed to start or to connect: its exit says why
        answers: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=_lines, args=(lock.stdout, answers), daemon=True).start()
        deadline = time.time() + self.limits["connect"] + self.limits["lock"] + 15
        while time.time() < deadline and self.stop_signal is None:
            try:
                line = answers.get(timeout=0.2)
            except queue.Empty:
                continue
            if line is None:  # it ended without the lock: SSH failed (255), or the node refused it
                lock.wait()
                err_reader.join(timeout=5)
                detail = "".join(errors).strip()
                if lock.returncode == SSH_FAILED:
                    return {"outcome": "unreachable", "exit": lock.returncode, "detail": detail}
                return {"outcome": "nolock", "detail": detail or f"exit {lock.returncode}"}
            word, _, rest = line.rstrip("\n").partition(" ")
            if word == "LOCKED":
                return None
            if word == "WAITING":
                self.note(f"{self.spec['node']} is busy with another run ({rest}); waiting up to "
                          f"{self.limits['lock']}s for it to end")
                self.show(self.progress.line(f"waiting up to {self.limits['lock']}s for another run: {rest}"))
            elif word == "BUSY":
                return {"outcome": "busy", "holder": rest}
            elif word == "NOLOCK":
                return {"outcome": "nolock", "detail": rest}
        if self.stop_signal is not None:
            return {"outcome": "stopped", "detail": self.stop_signal}
        return {"outcome": "unreachable", "detail": f"no answer from the node within "
                                                    f"{self.limits['connect'] + self.limits['lock'] + 15}s"}

    def _run_locked(self, lock: subprocess.Popen[str], errors: list[str],
                    err_reader: threading.Thread) -> dict[str, Any]:
        # its own process group: stopping it reaches everything it started, and not the guard
        env = {**os.environ, events.EVENTS: self.spec["events"]} if self.spec.get("events") else None
        proc = subprocess.Popen(self.spec["command"], cwd=self.spec["cwd"], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, process_group=0, env=env)
        assert proc.stdout is not None
        pump = threading.Thread(target=self._forward, args=(proc.stdout,), daemon=True)
        pump.start()
        deadline = time.time() + self.limits["run"]
        outcome: dict[str, Any] | None = None
        while proc.poll() is None:
            if self.stop_signal is not None:
                outcome = {"outcome": "stopped", "detail": self.stop_signal}
            elif time.time() > deadline:
                outcome = {"outcome": "timeout"}
            elif lock.poll() is not None:
                err_reader.join(timeout=5)
                outcome = {"outcome": "lost", "detail": "".join(errors).strip() or f"exit {lock.returncode}"}
            if outcome is not None:
                self._stop(proc)
                break
            self.read_events()
            time.sleep(0.2)
        pump.join(timeout=10)
        return self.with_run(outcome or {"outcome": "done", "exit": proc.returncode})

    def _forward(self, stream: IO[str]) -> None:
        for line in stream:
            self.out.write(line)

    @staticmethod
    def _stop(proc: subprocess.Popen[str]) -> None:
        """Stops a run and everything it started: asked first, then killed."""
        for sig, wait in ((signal.SIGTERM, STOP_GRACE), (signal.SIGKILL, None)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue

    @staticmethod
    def _release(lock: subprocess.Popen[str]) -> None:
        """Closes the connection that holds the lock: the node is free."""
        try:
            if lock.stdin is not None:
                lock.stdin.close()
        except OSError:
            pass
        try:
            lock.wait(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            lock.kill()
            lock.wait()


def main(argv: list[str]) -> int:
    workdir = Path(argv[1])
    out = _Output(sys.stdout)
    try:
        spec = json.loads((workdir / SPEC).read_text())
        guard = Guard(spec, out)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, guard.on_signal)
        result = guard.run()
        guard.show(guard.progress.end(result))
        keep_log(spec["node"], spec["playbook"], bool(spec.get("check")), "".join(out.text))
    finally:
        # the run's key, files and known hosts go, whoever is still listening
        shutil.rmtree(workdir, ignore_errors=True)
    out.write(f"\n{RESULT}{json.dumps(result)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
