"""nova-compute really runs on the test nodes (nova's fake driver): registered
in its cell, mapped by its cell's host discovery, reporting to Placement,
supervised on the node and restarted only where its config changed."""

from __future__ import annotations

import yaml

from tests.integration.local_env import node, nova_manage, openstack, up
from tests.integration.nova_compute import (
    PID_FILE,
    SUPERVISOR,
    compute_process,
    compute_services,
    eventually,
    option_dump,
)
from tests.integration.stacks import Stack

CELL_OF = {"edpm-compute-0": "cell1", "edpm-compute-1": "cell2"}
NODES = tuple(CELL_OF)
NODE0_CONFIG = "dataplane.nodeSets.edpm-compute.nodes.edpm-compute-0.customServiceConfig.nova"


def mapped_hosts() -> dict[str, str]:
    """host -> cell of `nova-manage cell_v2 list_hosts`, for the test nodes."""
    table = nova_manage("cell_v2", "list_hosts")
    # | Cell Name | Cell UUID | Hostname |
    return {cells[3]: cells[1] for line in table.splitlines()
            if len(cells := [c.strip() for c in line.split("|")]) > 4 and cells[3] in CELL_OF}


def resource_providers() -> set[str]:
    return {p["name"] for p in openstack("resource", "provider", "list")}


def test_each_node_runs_nova_compute_as_nova_under_its_supervisor(dev_stack: str) -> None:
    for name in NODES:
        assert node(name, f"{SUPERVISOR} status {PID_FILE}").stdout.startswith("running "), name
        process = compute_process(name)
        assert process is not None and process[1] == "nova", (name, process)
    # each node's own: two processes, not one seen twice
    assert compute_process(NODES[0]) != compute_process(NODES[1])


def test_compute_services_are_up(dev_stack: str) -> None:
    services = eventually(compute_services, lambda s: all(s.get(n, {}).get("State") == "up" for n in NODES))
    for name in NODES:
        assert (services[name]["State"], services[name]["Status"]) == ("up", "enabled"), services


def test_hypervisors_are_listed(dev_stack: str) -> None:
    def names() -> set[str]:
        return {h["Hypervisor Hostname"] for h in openstack("hypervisor", "list")}
    assert set(NODES) <= eventually(names, lambda n: set(NODES) <= n)


def test_host_discovery_mapped_each_compute_to_its_cell(dev_stack: str) -> None:
    assert mapped_hosts() == CELL_OF


def test_each_compute_has_a_resource_provider(dev_stack: str) -> None:
    assert set(NODES) <= eventually(resource_providers, lambda n: set(NODES) <= n)


def test_nova_computes_option_dump_shows_the_fake_driver(dev_stack: str) -> None:
    # debug is on: nova-compute logs every option value as it starts
    for name in NODES:
        dumped = eventually(lambda: option_dump(name, "compute_driver"), bool)  # noqa: B023
        assert dumped == ["fake.FakeDriverWithoutFakeNodes"], (name, dumped)


def test_nova_compute_is_started_again_when_it_dies(dev_stack: str) -> None:
    before = compute_process("edpm-compute-1")
    assert before is not None
    node("edpm-compute-1", f"kill -KILL {before[0]}")
    after = eventually(lambda: compute_process("edpm-compute-1"), lambda p: p is not None and p[0] != before[0])
    assert after is not None and after[0] != before[0] and after[1] == "nova", (before, after)
    services = eventually(compute_services, lambda s: s.get("edpm-compute-1", {}).get("State") == "up")
    assert services["edpm-compute-1"]["State"] == "up"


def test_a_config_change_restarts_nova_compute_on_that_node_only(dev_copy: Stack) -> None:
    before = {n: compute_process(n) for n in NODES}
    dev_copy.cli("config", "set", "--path", NODE0_CONFIG, "[DEFAULT]\nreport_interval = 9\n")
    result = up(dev_copy.name, cwd=dev_copy.project)
    assert sorted(name for op, _, name in result["steps"] if op == "update") == ["edpm-compute-0-nova"], result
    assert before["edpm-compute-0"] is not None
    restarted = eventually(lambda: compute_process("edpm-compute-0"),
                           lambda p: p is not None and p[0] != before["edpm-compute-0"][0])  # type: ignore[index]
    assert restarted is not None and restarted[0] != before["edpm-compute-0"][0], (before, restarted)
    assert compute_process("edpm-compute-1") == before["edpm-compute-1"]
    # the running process (the new pid) dumped the new value
    assert eventually(lambda: option_dump("edpm-compute-0", "report_interval"), bool) == ["9"]


def test_removing_a_node_stops_nova_compute_and_deletes_its_records(dev_copy: Stack) -> None:
    assert "edpm-compute-1" in compute_services() and mapped_hosts()["edpm-compute-1"] == "cell2"
    config = yaml.safe_load(dev_copy.file.read_text())
    del config["config"]["openstack-nova:dataplane"]["nodeSets"]["edpm-compute"]["nodes"]["edpm-compute-1"]
    dev_copy.file.write_text(yaml.safe_dump(config))
    result = up(dev_copy.name, cwd=dev_copy.project)
    deleted = sorted(name for op, _, name in result["steps"] if op == "delete")
    # cell2 is left without computes, so its host discovery goes too
    assert deleted == ["edpm-compute-1-libvirt", "edpm-compute-1-marker", "edpm-compute-1-neutron-metadata",
                       "edpm-compute-1-nova", "edpm-compute-1-ssh-known-hosts", "nova-cell2-host-discover"]
    assert compute_process("edpm-compute-1") is None
    assert node("edpm-compute-1", f"{SUPERVISOR} status {PID_FILE}").stdout.startswith("not running")
    assert node("edpm-compute-1", "test -e /etc/nova/nova.conf.d").returncode != 0
    # the service record, and with it (nova's own cleanup) the host mapping and resource provider
    assert "edpm-compute-1" not in compute_services()
    assert "edpm-compute-1" not in mapped_hosts()
    assert "edpm-compute-1" not in resource_providers()
    assert "edpm-compute-1" not in {h["Hypervisor Hostname"] for h in openstack("hypervisor", "list")}
    # the other node is untouched
    assert node("edpm-compute-0", "test -e /etc/nova/nova.conf.d/01-nova.conf").returncode == 0
    assert compute_services()["edpm-compute-0"]["State"] == "up"
