"""nova-compute really runs on the test nodes, as on a user's compute: the
nova_compute container of the stack's image under its Quadlet unit (podman,
systemd), nova's libvirt driver talking to the node's libvirt and QEMU (TCG);
registered in its cell, mapped by its cell's host discovery, reporting the
node's CPUs and memory to Placement, restarted only where its config changed."""

from __future__ import annotations

import pytest
import yaml

from tests.integration.local_env import ROOT, node, nova_manage, openstack, up
from tests.integration.nova_compute import (
    UNIT,
    compute_process,
    compute_services,
    container,
    eventually,
    option_dump,
)
from tests.integration.stacks import Stack

CELL_OF = {"edpm-compute-0": "cell1", "edpm-compute-1": "cell2"}
NODES = tuple(CELL_OF)
STACK_FILE = ROOT / "stacks" / "Pulumi.dev.yaml"
NODE0_CONFIG = "dataplane.nodeSets.edpm-compute.nodes.edpm-compute-0.customServiceConfig.nova"


def mapped_hosts() -> dict[str, str]:
    """host -> cell of `nova-manage cell_v2 list_hosts`, for the test nodes."""
    table = nova_manage("cell_v2", "list_hosts")
    # | Cell Name | Cell UUID | Hostname |
    return {cells[3]: cells[1] for line in table.splitlines()
            if len(cells := [c.strip() for c in line.split("|")]) > 4 and cells[3] in CELL_OF}


def resource_providers() -> set[str]:
    return {p["name"] for p in openstack("resource", "provider", "list")}


def test_each_node_is_a_host_whose_systemd_runs_nova_compute_in_podman(dev_stack: str) -> None:
    image = yaml.safe_load(STACK_FILE.read_text())["config"]["openstack-nova:images"]["compute"]
    for name in NODES:
        state = node(name, "systemctl is-system-running").stdout.strip()
        assert state == "running", (name, state, node(name, "systemctl --failed --no-legend").stdout)
        assert node(name, f"systemctl is-active {UNIT}").stdout.strip() == "active", name
        running = container(name)
        assert running is not None and running["image"] == image, (name, running)
        # the unit's main process is podman's conmon of that container
        unit_pid = node(name, f"systemctl show -P MainPID {UNIT}").stdout.strip()
        assert running["id"] in node(name, f"cat /proc/{unit_pid}/cmdline | tr '\\0' ' '").stdout, name
        process = compute_process(name)
        assert process is not None and process[1] == "nova", (name, process)
    # each node's own: two containers, not one seen twice
    assert container(NODES[0]) != container(NODES[1])


def test_compute_services_are_up(dev_stack: str) -> None:
    services = eventually(compute_services, lambda s: all(s.get(n, {}).get("State") == "up" for n in NODES))
    for name in NODES:
        assert (services[name]["State"], services[name]["Status"]) == ("up", "enabled"), services


def test_hypervisors_are_the_nodes_qemu_with_their_cpus_and_memory(dev_stack: str) -> None:
    def names() -> set[str]:
        return {h["Hypervisor Hostname"] for h in openstack("hypervisor", "list")}
    assert set(NODES) <= eventually(names, lambda n: set(NODES) <= n)
    for name in NODES:
        shown = openstack("hypervisor", "show", name)
        assert shown["hypervisor_type"] == "QEMU", (name, shown)
        # what the node's libvirt says of it (the memory of its NUMA cells, less than
        # /proc/meminfo's), as nova's libvirt driver reports it to Placement
        info = dict(line.split(":", 1) for line in node(
            name, "virsh -c qemu:///system nodeinfo").stdout.splitlines() if ":" in line)
        cpus, memory_kib = int(info["CPU(s)"]), int(info["Memory size"].split()[0])
        assert cpus == int(node(name, "nproc").stdout), name
        inventory = {i["resource_class"]: i for i in openstack(
            "resource", "provider", "inventory", "list", shown["id"])}
        assert inventory["VCPU"]["total"] == cpus, (name, inventory)
        assert inventory["MEMORY_MB"]["total"] == memory_kib // 1024, (name, inventory)


def test_host_discovery_mapped_each_compute_to_its_cell(dev_stack: str) -> None:
    assert mapped_hosts() == CELL_OF


def test_each_compute_has_a_resource_provider(dev_stack: str) -> None:
    assert set(NODES) <= eventually(resource_providers, lambda n: set(NODES) <= n)


def test_nova_computes_option_dump_shows_the_libvirt_driver_on_qemu(dev_stack: str) -> None:
    # debug is on: nova-compute logs every option value as it starts
    for name in NODES:
        dumped = eventually(lambda: option_dump(name, "compute_driver"), bool)  # noqa: B023
        assert dumped == ["libvirt.LibvirtDriver"], (name, dumped)
        # the stack's customServiceConfig: TCG, as this machine has no hardware virtualisation
        assert option_dump(name, "libvirt.virt_type") == ["qemu"], name


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
    started = {n: container(n) for n in NODES}
    dev_copy.cli("config", "set", "--path", NODE0_CONFIG, "[DEFAULT]\nreport_interval = 9\n")
    result = up(dev_copy.name, cwd=dev_copy.project)
    assert sorted(name for op, _, name in result["steps"] if op == "update") == ["edpm-compute-0-nova"], result
    assert before["edpm-compute-0"] is not None
    restarted = eventually(lambda: compute_process("edpm-compute-0"),
                           lambda p: p is not None and p[0] != before["edpm-compute-0"][0])  # type: ignore[index]
    assert restarted is not None and restarted[0] != before["edpm-compute-0"][0], (before, restarted)
    assert compute_process("edpm-compute-1") == before["edpm-compute-1"]
    # a new container on node 0; node 1's keeps running, started when it was
    assert container("edpm-compute-0")["started"] != started["edpm-compute-0"]["started"]  # type: ignore[index]
    assert container("edpm-compute-1") == started["edpm-compute-1"]
    # the running process (the new pid) dumped the new value
    assert eventually(lambda: option_dump("edpm-compute-0", "report_interval"), bool) == ["9"]


@pytest.mark.long
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
    # no unit, no container left on the node
    for unit in ("edpm_nova_compute", "edpm_nova_compute_init"):
        assert node("edpm-compute-1", f"test -e /etc/containers/systemd/{unit}.container").returncode == 1, unit
        assert node("edpm-compute-1", f"systemctl is-active {unit}.service").stdout.strip() == "inactive", unit
    assert node("edpm-compute-1", "podman ps -a --format '{{.Names}}'").stdout.split() == []
    # the service record, and with it (nova's own cleanup) the host mapping and resource provider
    assert "edpm-compute-1" not in compute_services()
    assert "edpm-compute-1" not in mapped_hosts()
    assert "edpm-compute-1" not in resource_providers()
    assert "edpm-compute-1" not in {h["Hypervisor Hostname"] for h in openstack("hypervisor", "list")}
    # the other node is untouched
    assert node("edpm-compute-0", "test -e /var/lib/openstack/nova/01-nova.conf").returncode == 0
    assert container("edpm-compute-0") is not None
    assert compute_services()["edpm-compute-0"]["State"] == "up"
