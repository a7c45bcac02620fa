"""nova-compute really runs on the test nodes (nova's fake driver): registered
in its cell, mapped by its cell's host discovery, reporting to Placement,
supervised on the node and restarted only where its config changed."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any, TypeVar

from tests.integration.local_env import node, nova_manage, openstack, up
from tests.integration.stacks import Stack

NS = "openstack"
CELL_OF = {"edpm-compute-0": "cell1", "edpm-compute-1": "cell2"}
NODES = tuple(CELL_OF)
NODE0_CONFIG = "dataplane.nodeSets.edpm-compute.nodes.edpm-compute-0.customServiceConfig.nova"
# the edpm_nova role's defaults (kolla_set_configs mode)
SUPERVISOR = "/var/lib/kolla/nova-compute-supervisor.sh"
PID_FILE = "/run/node-private/nova-compute-supervisor.pid"
LOG_FILE = "/var/log/nova/nova-compute.log"

T = TypeVar("T")


def eventually(probe: Callable[[], T], ok: Callable[[T], bool], seconds: float = 90) -> T:
    """`probe()` once `ok` holds of it; its last value (for the assertion) after `seconds`."""
    deadline = time.time() + seconds
    while True:
        value = probe()
        if ok(value) or time.time() > deadline:
            return value
        time.sleep(3)


def compute_process(name: str) -> tuple[int, str, str] | None:
    """(pid, user, command) of the command the node's supervisor runs, None when none runs."""
    out = node(name, f"ps -o pid=,user=,args= --ppid \"$(cat {PID_FILE})\"").stdout
    for line in out.splitlines():
        pid, user, args = line.split(None, 2)
        if "nova-compute" in args:
            return int(pid), user, args
    return None


def compute_services() -> dict[str, dict[str, Any]]:
    return {s["Host"]: s for s in openstack("compute", "service", "list", "--service", "nova-compute")}


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
    table = nova_manage("cell_v2", "list_hosts")
    # | Cell Name | Cell UUID | Hostname |
    mapped = {cells[3]: cells[1] for line in table.splitlines()
              if len(cells := [c.strip() for c in line.split("|")]) > 4 and cells[3] in CELL_OF}
    assert mapped == CELL_OF, table


def test_each_compute_has_a_resource_provider(dev_stack: str) -> None:
    def names() -> set[str]:
        return {p["name"] for p in openstack("resource", "provider", "list")}
    assert set(NODES) <= eventually(names, lambda n: set(NODES) <= n)


def test_nova_computes_option_dump_shows_the_fake_driver(dev_stack: str) -> None:
    # debug is on: nova-compute logs every option value as it starts
    for name in NODES:
        log = node(name, f"cat {LOG_FILE}").stdout
        dumps = re.findall(r"compute_driver\s+= (\S+)", log)
        assert dumps and dumps[-1] == "fake.FakeDriverWithoutFakeNodes", (name, dumps)


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

    def dumped() -> list[str]:
        return re.findall(r"report_interval\s+= (\S+)", node("edpm-compute-0", f"cat {LOG_FILE}").stdout)
    assert eventually(dumped, lambda d: d[-1:] == ["9"])[-1:] == ["9"]
