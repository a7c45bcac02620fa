"""Fixtures shared by the unit tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from components.settings import OptionCatalog

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def nova_catalog(tmp_path_factory: pytest.TempPathFactory) -> OptionCatalog:
    """The real catalog, generated from the installed nova (a few seconds)."""
    pytest.importorskip("nova")
    out = tmp_path_factory.mktemp("catalog") / "nova-opts.json"
    subprocess.run(
        [sys.executable, "-m", "components.settings.catalog", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return OptionCatalog.from_file(out)
