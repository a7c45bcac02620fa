"""An existing dev stack previews with no changes after a change of the program's structure (its
EDPM services made one unit each, the data plane a component of its own): nothing is replaced,
renamed or re-run. Run it before any `pulumi up` of the changed program: the stack in state is the
one the program before the change made (`make up` on the commit before, then this test after).
tests/unit/test_program_shape.py proves the same under mocks against a recording."""

from __future__ import annotations

import json

import pytest

from tests.integration.local_env import pulumi

STACK = "dev"


def test_the_dev_stack_made_before_the_change_previews_with_no_changes() -> None:
    if pulumi("stack", "ls", "--json", check=False).stdout.find(f'"name": "{STACK}"') < 0:
        pytest.skip("no dev stack in state: `make up` on the commit before the change first")
    preview = pulumi("preview", "--json", "--diff", "-s", STACK)
    steps = json.loads(preview.stdout).get("steps", [])
    changed = [(s.get("op"), s.get("urn")) for s in steps if s.get("op") not in ("same", "read")]
    assert changed == []
