"""Integration tests drive the real Pulumi CLI, API server and test nodes of
the local environment (`make environment` starts them)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _local_env() -> dict[str, str]:
    out = subprocess.run([str(ROOT / "devenv" / "env.sh")], capture_output=True, text=True, check=True).stdout
    env = dict(os.environ)
    env.pop("PULUMI_CONFIG", None)
    for line in out.splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        value = value.strip("'")
        if name == "PATH":
            value = value.replace("'\"$PATH\"", "").replace("\"$PATH\"", "").rstrip(":") + ":" + os.environ["PATH"]
        env[name] = value
    return env


ENV = _local_env()


def run(*args: str, check: bool = True, cwd: Path | None = None, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Runs a command in the local environment and returns what it printed."""
    proc = subprocess.run(list(args), cwd=cwd or ROOT, env=ENV, capture_output=True, text=True, input=input,
                          check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def pulumi(*args: str, check: bool = True, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run("pulumi", "--non-interactive", *args, check=check, cwd=cwd)


def node(name: str, command: str) -> subprocess.CompletedProcess[str]:
    return run(str(ROOT / "devenv" / "ssh.sh"), name, command, check=False)


def kubectl_json(*args: str) -> dict:
    return json.loads(run("kubectl", *args, "-o", "json").stdout)


@pytest.fixture(scope="session")
def dev_stack() -> Iterator[str]:
    """The dev stack, brought up once for the session."""
    pulumi("stack", "select", "--create", "dev")
    pulumi("up", "--yes", "--skip-preview", "-s", "dev")
    yield "dev"


@pytest.fixture()
def project_copy(tmp_path: Path) -> Path:
    """A copy of the project (sharing the venv) for stacks a test may change."""
    dest = tmp_path / "project"
    shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", ".*_cache"))
    (dest / ".venv").symlink_to(os.readlink(ROOT / ".venv") if (ROOT / ".venv").is_symlink() else ROOT / ".venv")
    return dest
