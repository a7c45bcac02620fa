"""The local environment's commands run as programs: each is committed executable."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_command_of_devenv_is_committed_executable() -> None:
    listed = subprocess.run(["git", "ls-files", "-s", "devenv/*.sh"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.splitlines()
    modes = {line.split()[3]: line.split()[0] for line in listed if line.split()[3].count("/") == 1}
    assert "devenv/start.sh" in modes
    assert {path for path, mode in modes.items() if mode != "100755"} == set()
