"""Runs a play of the project's roles on this machine (connection local), with stand-in
commands first on PATH: the roles' tasks as Ansible runs them, without a node."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ANSIBLE = Path(__file__).resolve().parents[2] / "ansible"


def run_play(tmp_path: Path, play: str, *, extra: dict[str, Any], stubs: dict[str, str],
             env: dict[str, str] | None = None, check: bool = False) -> subprocess.CompletedProcess[str]:
    """`play` (YAML) with `extra` as extra vars (they win over every role variable) and each
    stub (name -> shell script) as a command on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, script in stubs.items():
        (bin_dir / name).write_text(script)
        (bin_dir / name).chmod(0o755)
    (tmp_path / "play.yml").write_text(play)
    environ = {**os.environ, **(env or {}), "PATH": f"{bin_dir}:{os.environ['PATH']}",
               "ANSIBLE_CONFIG": str(ANSIBLE / "ansible.cfg"), "ANSIBLE_ROLES_PATH": str(ANSIBLE / "roles"),
               "ANSIBLE_HOME": str(tmp_path / "home"), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"),
               "ANSIBLE_REMOTE_TEMP": str(tmp_path / "remote-tmp"), "ANSIBLE_NOCOLOR": "1"}
    args = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
            "-e", json.dumps({"ansible_python_interpreter": sys.executable, **extra}), str(tmp_path / "play.yml")]
    return subprocess.run(args + (["--check"] if check else []), env=environ, capture_output=True, text=True,
                          check=False, timeout=300)


def role_play(role: str, tasks_from: str) -> str:
    return f"""\
- name: Run {role}'s {tasks_from} as a node's run does
  hosts: all
  gather_facts: false
  tasks:
    - name: Run {role}
      ansible.builtin.import_role:
        name: {role}
        tasks_from: {tasks_from}
"""
