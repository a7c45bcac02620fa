"""The orderings upstream's controllers keep, read from the dev stack's resource
graph (`pulumi stack export`): what the engine really waited for."""

from __future__ import annotations

import json
from functools import cache

import pytest

from tests.integration.local_env import run

CELLS = ("cell0", "cell1", "cell2")


@cache
def _graph(stack: str) -> tuple[dict[str, str], dict[str, frozenset[str]]]:
    """Resource name -> URN (of the resource itself, not a component of the same
    name), and URN -> the URNs it depends on (directly)."""
    state = json.loads(run("pulumi", "stack", "export", "-s", stack).stdout)
    urns: dict[str, str] = {}
    deps: dict[str, frozenset[str]] = {}
    for resource in state["deployment"]["resources"]:
        urn = resource["urn"]
        deps[urn] = frozenset(resource.get("dependencies", []))
        if resource.get("custom"):
            assert urns.setdefault(urn.rsplit("::", 1)[-1], urn) == urn, f"two resources named like {urn}"
    return urns, deps


def waits_for(stack: str, later: str, earlier: str) -> bool:
    """True if the engine creates `later` only after `earlier` (a path of dependencies)."""
    urns, deps = _graph(stack)
    start, goal = urns[later], urns[earlier]
    seen, todo = set(), [start]
    while todo:
        urn = todo.pop()
        if urn == goal:
            return True
        if urn not in seen:
            seen.add(urn)
            todo.extend(deps.get(urn, ()))
    return False


@pytest.mark.parametrize("cell", CELLS)
def test_conductor_starts_after_its_db_sync_and_mapping_follows(dev_stack: str, cell: str) -> None:
    assert waits_for(dev_stack, f"nova-{cell}-conductor", f"nova-{cell}-db-sync")
    assert waits_for(dev_stack, f"nova-{cell}-cell-mapping", f"nova-{cell}-db-sync")
    assert not waits_for(dev_stack, f"nova-{cell}-db-sync", f"nova-{cell}-conductor")


@pytest.mark.parametrize("cell", ("cell1", "cell2"))
def test_cells_with_api_access_wait_for_cell0(dev_stack: str, cell: str) -> None:
    assert waits_for(dev_stack, f"nova-{cell}-db-sync", "nova-cell0-cell-mapping")
    assert not waits_for(dev_stack, "nova-cell0-db-sync", f"nova-{cell}-cell-mapping")


@pytest.mark.parametrize("service", ("nova-api", "nova-scheduler", "nova-metadata"))
def test_top_level_services_start_after_every_cell_is_mapped(dev_stack: str, service: str) -> None:
    for cell in CELLS:
        assert waits_for(dev_stack, service, f"nova-{cell}-cell-mapping"), (service, cell)


def test_stale_service_cleanup_runs_after_every_rollout_and_the_catalog_entry(dev_stack: str) -> None:
    job = "nova-service-cleanup-job"
    for earlier in ("nova-scheduler", *(f"nova-{c}-conductor" for c in CELLS), "nova-api",
                    "nova-keystone-registration"):
        assert waits_for(dev_stack, job, earlier), earlier
    assert not waits_for(dev_stack, "nova-api", job)


def test_host_discovery_runs_after_the_cells_computes(dev_stack: str) -> None:
    assert waits_for(dev_stack, "nova-cell1-host-discover", "edpm-compute-0-nova")
    assert waits_for(dev_stack, "nova-cell2-host-discover", "edpm-compute-1-nova")
    assert not waits_for(dev_stack, "nova-cell1-host-discover", "edpm-compute-1-nova")


def test_node_services_run_in_the_node_sets_order(dev_stack: str) -> None:
    for node in ("edpm-compute-0", "edpm-compute-1"):
        assert waits_for(dev_stack, f"{node}-ssh-known-hosts", f"{node}-marker")
        assert waits_for(dev_stack, f"{node}-neutron-metadata", f"{node}-ssh-known-hosts")
        assert waits_for(dev_stack, f"{node}-libvirt", f"{node}-neutron-metadata")
        assert waits_for(dev_stack, f"{node}-nova", f"{node}-libvirt")
        assert not waits_for(dev_stack, f"{node}-neutron-metadata", f"{node}-nova")
