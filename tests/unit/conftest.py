"""Fixtures shared by the unit tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.settings import SHIPPED_CATALOGS, OptionCatalog
from tests.unit import LOCAL_IMAGES_RELEASE

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def nova_catalog() -> OptionCatalog:
    """The shipped catalog of the nova of the images built here (equal to what the generator writes:
    test_catalogs.py::test_committed_catalog_is_what_the_generator_writes)."""
    return SHIPPED_CATALOGS.load(LOCAL_IMAGES_RELEASE)
