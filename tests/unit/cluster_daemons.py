"""Helpers for the tests of devenv/cluster.sh's daemon functions: its `--- daemons` section (function
definitions only) sourced with devenv/lib.sh into bash, KUBE_DIR a temporary directory, and a stand-in
daemon that carries kube-scheduler's marker and sleeps (the cluster's daemons have absolute paths too)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

DEVENV = Path(__file__).resolve().parents[2] / "devenv"
NAME = "kube-scheduler"
# The interpreter itself, not a launcher that runs it under another argv[0] (pyenv's shims do).
PYTHON = os.path.realpath(sys.executable)
PRELUDE = f"""set -euo pipefail
here={DEVENV}
. "$here/lib.sh"
eval "$(sed -n '/^# --- daemons/,/^# --- credentials/p' "$here/cluster.sh")"
ARGV=({PYTHON} -c 'import time; time.sleep(60)' "$(marker_of {NAME})")
"""


def bash(kube_dir: Path, script: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(kube_dir), "KUBE_DIR": str(kube_dir)}
    return subprocess.run(["bash", "-c", PRELUDE + script], capture_output=True, text=True, check=False,
                          timeout=60, env=env)


def ours(kube_dir: Path) -> list[int]:
    """Every process whose command line names KUBE_DIR: the stand-in daemons and their supervisors."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(kube_dir).encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def kill_ours(kube_dir: Path) -> None:
    for pid in ours(kube_dir):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


# ensure_daemon with the stand-in: always healthy, its command line the stand-in's; what it started in STARTED.
ENSURE = f"""healthy() {{ true; }}
argv_of() {{ ARGV=({PYTHON} -c 'import time; time.sleep(60)' "$(marker_of {NAME})"); }}
CHANGED="" STARTED="" READY_TIMEOUT=10
ensure_daemon {NAME}
echo "started:$STARTED"
"""
