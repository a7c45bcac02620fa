"""The host's child processes: programs, plugins, and what ends them."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
from collections.abc import Iterator, Sequence
from typing import Literal

Stream = Literal["stdout", "stderr"]
# How long a child has to leave after SIGTERM before it is killed.
TERM_GRACE = 5.0


class Children:
    """Every child still running, so that Cancel and shutdown can end them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen[bytes]] = set()
        self.cancelled = threading.Event()

    def start(self, argv: Sequence[str], env: dict[str, str], cwd: str | None,
              capture: bool) -> subprocess.Popen[bytes]:
        if self.cancelled.is_set():
            raise RuntimeError("the language host was cancelled")
        pipe = subprocess.PIPE if capture else None
        # Its own process group: ending it ends what it started (pip, ansible...).
        proc = subprocess.Popen(list(argv), env=env, cwd=cwd or None, stdout=pipe, stderr=pipe,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        with self._lock:
            self._procs.add(proc)
        return proc

    def forget(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._procs.discard(proc)

    def end_all(self) -> None:
        self.cancelled.set()
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            end(proc)


def end(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the child's process group, SIGKILL if it is still there after TERM_GRACE."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(TERM_GRACE)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def stream_output(proc: subprocess.Popen[bytes]) -> Iterator[tuple[Stream, bytes]]:
    """The child's output as it comes (a plugin prints its port first and then waits,
    so nothing may wait for a line or for the end)."""
    chunks: queue.Queue[tuple[Stream, bytes] | None] = queue.Queue()
    pipes = {"stdout": proc.stdout, "stderr": proc.stderr}

    def pump(name: Stream) -> None:
        pipe = pipes[name]
        assert pipe is not None
        fd = pipe.fileno()
        while chunk := os.read(fd, 65536):
            chunks.put((name, chunk))
        chunks.put(None)

    readers = [threading.Thread(target=pump, args=(name,), daemon=True) for name in ("stdout", "stderr")]
    for reader in readers:
        reader.start()
    open_pipes = len(readers)
    while open_pipes:
        item = chunks.get()
        if item is None:
            open_pipes -= 1
            continue
        yield item
