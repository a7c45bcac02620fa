"""Fixtures of the integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.local_env import ROOT, pulumi, run
from tests.integration.stacks import Stack, copy_of


@pytest.fixture(scope="session")
def dev_neighbours() -> str:
    """The dev stack's neighbours (devenv/neighbours.sh), deployed or converged once for the
    session, without the program; their namespace."""
    run(str(ROOT / "devenv" / "neighbours.sh"), "dev")
    return "openstack"


@pytest.fixture(scope="session")
def dev_stack(dev_neighbours: str) -> Iterator[str]:
    """The dev stack with its neighbours, brought up once for the session."""
    pulumi("stack", "select", "--create", "dev")
    # --refresh: the nodes lose their processes when the environment restarts, and
    # refresh finds a node whose nova-compute is not running (drift), so up starts it
    pulumi("up", "--yes", "--skip-preview", "--refresh", "-s", "dev")
    yield "dev"


@pytest.fixture()
def dev_copy(tmp_path: Path, dev_stack: str) -> Iterator[Stack]:
    """The dev stack driven from a copy of the project whose stack config the test edits;
    afterwards the checkout's config is applied again."""
    with copy_of(dev_stack, tmp_path) as stack:
        yield stack
