"""A server's life on the deployment, proven on the hypervisor: it boots in each
cell on that cell's compute, its libvirt domain runs with the CPU the stack's
config asks for (the CI job's `cpu_mode = custom`, `cpu_models = Nehalem`, or
the rendered default), it live-migrates between the two computes of a cell over
the transport the program configured, its noVNC console reaches its guest's
VNC server on the node through the cell's proxy, and deleting it leaves no
domain and no allocation behind."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.integration.console import novnc_url, open_through_proxy, proxy_connections, proxyclient_address, vnc_port
from tests.integration.local_env import NODES, node, openstack
from tests.integration.nova_compute import eventually
from tests.integration.stacks import Stack
from tools.server_cpu import domain_cpu, show

CELL_OF = {"edpm-compute-0": "cell1", "edpm-compute-1": "cell2"}
NODE0_CONFIG = "dataplane.nodeSets.edpm-compute.nodes.edpm-compute-0.customServiceConfig.nova"
# uploaded by the environment (devenv/neighbours): a blank raw disk, the
# guest runs its firmware only, which is all nova and libvirt need
IMAGE = "blank-raw-firmware-only"
FLAVOR = "m1.firmware"
# --nic none needs 2.37; --host (scheduled to that host) 2.74
MICROVERSION = "2.74"


def guests(name: str) -> list[str]:
    """The UUIDs of the node's libvirt domains. nova gives a domain its instance's UUID; its name
    (instance-<id in the cell's database>) is unique in one cell only, so two cells may share one."""
    out = node(name, "virsh -c qemu:///system list --all --uuid").stdout
    return [d for d in out.split() if d]


def _ensure_flavor(namespace: str) -> None:
    if not any(f["Name"] == FLAVOR for f in openstack("flavor", "list", namespace=namespace)):
        openstack("flavor", "create", "--vcpus", "1", "--ram", "128", "--disk", "1", FLAVOR, namespace=namespace)


def boot(host: str, namespace: str = "openstack", name: str | None = None) -> dict[str, Any]:
    """A server scheduled to `host` (through the scheduler, as an admin may ask), once ACTIVE."""
    _ensure_flavor(namespace)
    name = name or f"demo-{host}-{uuid.uuid4().hex[:6]}"
    openstack("--os-compute-api-version", MICROVERSION, "server", "create", "--flavor", FLAVOR, "--image", IMAGE,
              "--nic", "none", "--host", host, "--wait", name, namespace=namespace)
    return openstack("server", "show", name, namespace=namespace)


def delete(server: dict[str, Any], namespace: str = "openstack") -> None:
    openstack("server", "delete", "--wait", server["id"], namespace=namespace, want_json=False)


def allocations(server_id: str, namespace: str = "openstack") -> Any:
    return openstack("resource", "provider", "allocation", "show", server_id, namespace=namespace)


class Servers:
    """The servers a test boots. Each is named before it is asked for, so one whose boot failed
    halfway (an error while waiting, a server in ERROR) is deleted afterwards too: a domain left
    on a node stops another stack's nova-compute from starting there."""

    def __init__(self) -> None:
        self.named: list[tuple[str, str]] = []
        self.booted: list[dict[str, Any]] = []

    def boot(self, host: str, namespace: str = "openstack") -> dict[str, Any]:
        name = f"demo-{host}-{uuid.uuid4().hex[:6]}"
        self.named.append((name, namespace))
        server = boot(host, namespace, name)
        self.booted.append(server)
        return server

    def delete_all(self) -> None:
        for name, namespace in self.named:
            for server in openstack("server", "list", "--name", f"^{name}$", namespace=namespace):
                delete({"id": server["ID"]}, namespace)


@pytest.fixture()
def servers() -> Iterator[Servers]:
    """Servers a test boots, deleted afterwards."""
    booted = Servers()
    yield booted
    booted.delete_all()


def test_a_server_boots_in_each_cell_on_that_cells_compute(dev_stack: str, servers: Servers) -> None:
    for host in NODES:
        server = servers.boot(host)
        assert (server["status"], server["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", host), server
        # the server's domain runs in that node's libvirt, and in no other
        cpu = show(server["id"])
        assert (cpu.host, cpu.state) == (host, "running"), cpu
        assert server["id"] in guests(host), cpu
        others = [n for n in NODES if n != host]
        assert all(server["id"] not in guests(n) for n in others), cpu
        # the rendered default of the dev stack: cpu_mode host-model, as nova defines the domain;
        # libvirt expands it at start to the host's own model (the running domain's mode is custom)
        defined = domain_cpu(node(host, f"virsh -c qemu:///system dumpxml --inactive {cpu.domain}").stdout)
        assert defined == ("host-model", None), defined
        assert cpu.mode == "custom" and cpu.model, cpu
    # nova's cell mappings: each server in its compute's cell
    for server in servers.booted:
        mapped = openstack("server", "show", server["id"])
        assert mapped["OS-EXT-SRV-ATTR:host"] in CELL_OF


def test_deleting_servers_leaves_no_domain_and_no_allocation(dev_stack: str, servers: Servers) -> None:
    server = servers.boot(NODES[0])
    assert server["id"] in guests(NODES[0])
    assert allocations(server["id"])
    delete(server)
    assert all(server["id"] not in guests(n) for n in NODES)
    assert not allocations(server["id"])


def test_a_servers_novnc_console_reaches_its_guests_vnc_server_on_the_node_through_the_cells_proxy(
        dev_stack: str, servers: Servers) -> None:
    """As a user's browser opens the console: the URL nova hands out names the noVNC proxy of the
    server's cell; a WebSocket opened with it from inside the cluster is answered by that proxy,
    which connects to the guest's VNC server on the node's ctlplane address (the compute's
    server_proxyclient_address) and relays what QEMU says first, its RFB version."""
    for host in NODES:
        server = servers.boot(host)
        cell = CELL_OF[host]
        url = novnc_url(server["id"])
        service = f"nova-novncproxy-{cell}-public"
        assert url.startswith(f"http://{service}.openstack.svc:6080/vnc_lite.html?"), url
        port = vnc_port(host, server["id"])
        since = (datetime.now(UTC) - timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
        reply = open_through_proxy(url)
        assert (reply.status, reply.accepted, reply.protocol) == (101, True, "binary"), reply
        assert re.fullmatch(r"RFB \d{3}\.\d{3}\n", reply.greeting), reply
        # the proxy reached the guest's VNC server on the node itself, not some other
        address = proxyclient_address(host)
        assert (address, port) in proxy_connections(service, since), (address, port)


@pytest.mark.long
def test_a_cpu_model_change_of_one_node_reaches_its_new_servers(dev_copy: Stack, servers: Servers) -> None:
    dev_copy.cli("config", "set", "--path", NODE0_CONFIG, "[libvirt]\ncpu_mode = custom\ncpu_models = Nehalem\n")
    dev_copy.cli("up", "--yes", "--skip-preview")
    server = eventually(lambda: _try_boot(servers, NODES[0]), bool, seconds=120, interval=10)
    assert server is not None
    cpu = show(server["id"])
    assert (cpu.mode, cpu.model) == ("custom", "Nehalem"), cpu


def _try_boot(servers: Servers, host: str) -> dict[str, Any] | None:
    """A server on `host`, or None while the restarted nova-compute is not up yet."""
    try:
        return servers.boot(host)
    except AssertionError:
        return None

