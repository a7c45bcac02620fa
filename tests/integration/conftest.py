"""Fixtures of the integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.local_env import NODES, ROOT, node, nova_manage, openstack, pulumi, run, up
from tests.integration.nova_compute import eventually, mapped_hosts
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


@pytest.fixture(scope="module")
def module_dev_copy(tmp_path_factory: pytest.TempPathFactory, dev_stack: str) -> Iterator[Stack]:
    """`dev_copy` shared by the tests of one module, which go on from the state the one before left:
    a roll-out the module's tests all look at is made once, and rolled back once, not per test."""
    with copy_of(dev_stack, tmp_path_factory.mktemp("dev-copy")) as stack:
        yield stack


def forget_other_computes(namespace: str, nodes: tuple[str, ...] = NODES) -> None:
    """The nodes move between two stacks and keep nova's compute_id (their /var/lib/nova), as a
    compute keeps it across a reinstall: a record of one of them that another compute_id left in
    this stack's cell (an earlier layout of the nodes) would make nova-compute refuse to start
    ("Duplicate compute node record"), so it goes, as removing a node from a stack deletes it."""
    try:
        hypervisors = openstack("hypervisor", "list", namespace=namespace)
    except AssertionError:
        return  # the stack's compute API is not there yet: nothing recorded
    for name in nodes:
        compute_id = node(name, "cat /var/lib/nova/compute_id 2>/dev/null").stdout.strip()
        stale = [h for h in hypervisors if h["Hypervisor Hostname"] == name and h["ID"] != compute_id]
        if compute_id and stale:
            for service in openstack("compute", "service", "list", "--service", "nova-compute", "--host", name,
                                     namespace=namespace):
                openstack("--os-compute-api-version", "2.53", "compute", "service", "delete", service["ID"],
                          namespace=namespace, want_json=False)


def map_again(namespace: str, hosts: tuple[str, ...] = NODES) -> None:
    """What an operator runs after deleting a compute's record and starting it again: the stack's
    discovery Job ran when the hosts were new to it (it maps them or fails the up), and a deleted
    record took its host mapping along. nova-compute registers its record a while after it starts."""
    if set(hosts) <= set(mapped_hosts(namespace)):
        return

    def discovered() -> dict[str, str]:
        nova_manage("cell_v2", "discover_hosts", "--by-service", namespace=namespace)
        return mapped_hosts(namespace)

    mapped = eventually(discovered, lambda m: set(hosts) <= set(m), seconds=300, interval=10)
    assert set(hosts) <= set(mapped), mapped


@pytest.fixture(scope="module")
def ci_stack(dev_stack: str) -> Iterator[str]:
    """The CI example stack on the same nodes, once for the module that uses it; afterwards dev is
    refreshed (drift found) and applied again."""
    pulumi("stack", "select", "--create", "ci-live-migration")
    run(str(ROOT / "devenv" / "neighbours.sh"), "ci-live-migration")
    for name in NODES:
        guests = node(name, "virsh -c qemu:///system list --all --name").stdout.split()
        # nova-compute refuses to start as a new service on a hypervisor with instances
        assert not guests, f"{name} holds guests of another stack, delete its servers first: {guests}"
    forget_other_computes("openstack-lm")
    # The nodes may hold another stack's files since this stack's last run: refresh finds that.
    up("ci-live-migration", refresh=True)
    map_again("openstack-lm")
    yield "ci-live-migration"
    # the nodes are chassis of dev's OVN again
    run(str(ROOT / "devenv" / "chassis.sh"), dev_stack)
    up(dev_stack, refresh=True)
