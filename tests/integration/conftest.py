"""Fixtures of the integration tests."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.local_env import ROOT, pulumi


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
