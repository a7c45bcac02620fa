"""Removes Pulumi state locks left behind by a run that was killed.

A lock is stale when it was taken on this host by a process that no longer
exists; a live run's lock is left alone.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path


def stale_locks(state_dir: Path) -> list[Path]:
    found = []
    for lock in sorted((state_dir / ".pulumi" / "locks").glob("**/*.json")):
        try:
            info = json.loads(lock.read_text())
        except (OSError, ValueError):
            continue
        if info.get("hostname") != socket.gethostname():
            continue
        pid = int(info.get("pid", 0))
        if pid <= 0 or not Path(f"/proc/{pid}").exists():
            found.append(lock)
    return found


def main() -> int:
    state_dir = Path(sys.argv[1])
    for lock in stale_locks(state_dir):
        stack = lock.parent.name
        lock.unlink()
        print(f"start: removed the stale Pulumi lock of stack {stack} (its run was killed)")
    return 0


if __name__ == "__main__":
    os.umask(0o077)
    sys.exit(main())
