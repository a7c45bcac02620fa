"""The node's run lock as the tests see it (runs take it with flock, see components/ansible_runner/runguard.py)."""

from __future__ import annotations

import fcntl
from pathlib import Path


def lock_is_free(lock: Path) -> bool:
    """Whether no run holds `lock`: it can be taken, and is let go again at once."""
    with open(lock, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True
