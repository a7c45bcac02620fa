"""An existing stack previews with no changes after a change of the program's structure: the whole
program under mocks registers the same resources (URN, type, parent, dependencies, provider, aliases)
with the same inputs as the recording in tests/unit/data/program_shape/, made from the program before
its EDPM services became one unit each and recorded again only for changes meant to change the stack
(the Keystone registration script's text, cf4f740; libvirt's daemons' log filters at warning level; the
dev stack's metadata Service a LoadBalancer and its OVN database by its data-plane name;
tests/unit/program_shape.py says how)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.unit.engine import EngineMonitor, name_of
from tests.unit.program_shape import VARIANTS, recorded, shape
from tests.unit.test_components import RecordingMocks
from tests.unit.test_rotation import _dev_config, run_main


def _differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    found = [f"gone: {urn}" for urn in sorted(before.keys() - after.keys())]
    found += [f"new: {urn}" for urn in sorted(after.keys() - before.keys())]
    for urn in sorted(before.keys() & after.keys()):
        found += [f"{urn}: {key} differs" for key in sorted(before[urn]) if before[urn][key] != after[urn].get(key)]
    return found


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_program_registers_what_a_stack_made_by_the_recorded_program_holds(variant: str) -> None:
    assert _differences(recorded(variant), shape(variant)) == []


def test_a_moved_resource_is_a_difference() -> None:
    before = recorded("dev")
    urn = next(u for u in before if u.endswith("::edpm-compute-0-nova"))
    after = {**before, urn.replace("EdpmNodeSet", "EdpmDataPlane$openstack-nova:dataplane:EdpmNodeSet"): before[urn]}
    del after[urn]
    assert len(_differences(before, after)) == 2


def test_main_only_wires_no_loop_no_condition() -> None:
    import ast

    from tests.unit.program_shape import ROOT

    tree = ast.parse((ROOT / "__main__.py").read_text())
    logic = (ast.For, ast.While, ast.If, ast.IfExp, ast.ListComp, ast.DictComp, ast.SetComp, ast.GeneratorExp)
    # the one `except` turns a bad stack config into a message without a traceback
    assert [type(n).__name__ for n in ast.walk(tree) if isinstance(n, logic)] == []


def test_a_stack_without_node_sets_keeps_the_services_secrets(tmp_path: Path) -> None:
    config = _dev_config(tmp_path)
    del config["dataplane"]
    mocks = RecordingMocks()
    monitor = EngineMonitor(mocks)
    run_main(config, mocks, monitor)
    secrets = {name_of(r) for r in monitor.registered.values() if r.type == "kubernetes:core/v1:Secret"}
    # the services' stack parts, made once per stack as before: the migration key, libvirt's password
    assert {"nova-migration-ssh-key", "libvirt-secret"} <= secrets
