"""The older nova release the program claims, run for real: stacks/Pulumi.antelope-local.yaml
brings up nova 27.5.1 (OpenStack 2023.1) from the images devenv/images.sh builds for it
(devenv/images/releases/27.5.1), beside the environment's neighbours of today, with
edpm-compute-1 borrowed from the dev stack. Its API answers as nova 27.5.1, its services are
up, its cells are mapped, and the node runs the release's nova-compute from its image under
its Quadlet unit, with nova's libvirt driver on the node's QEMU, registered as a hypervisor;
then the stack is destroyed and the node given back to the dev stack, whose compute on it
comes back up."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.local_env import ENV, ROOT, kubectl_json, node, nova_manage, openstack, pulumi, run, up
from tests.integration.nova_compute import (
    UNIT,
    compute_process,
    compute_services,
    container,
    eventually,
    in_compute,
    mapped_hosts,
    option_dump,
)
from tools import nova_catalog

# Its own neighbours, a second control plane and a node deployed and given back: longer than CI allows.
pytestmark = pytest.mark.long

STACK = "antelope-local"
RELEASE = "27.5.1"
NS = "openstack-antelope"
NODE = "edpm-compute-1"
COMPUTE_IMAGE = "localhost/openstack-nova/nova-compute:2023.1-1"
# the node's cell in the dev stack (stacks/Pulumi.dev.yaml), which it goes back to
DEV_NS, DEV_CELL = "openstack", "cell2"
DEV_COMPUTE_IMAGE = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())["config"][
    "openstack-nova:images"]["compute"]
# the newest compute API microversion of nova 27 (2023.1); nova 34's is higher
MAX_MICROVERSION = "2.95"
# service ids are UUIDs from 2.53: a delete can never hit another cell's record
SERVICE_UUIDS = ("--os-compute-api-version", "2.53")
# nova's config namespaces, but osprofiler's (an extra nova's images do not hold)
NAMESPACES = [ns for ns in nova_catalog.NAMESPACES if ns != "osprofiler"]
# registered by keystoneauth when nova starts, so absent from every option list
RUNTIME_OPTIONS = {"oslo_limit/auth_type"}


def images(*args: str) -> str:
    return run(str(ROOT / "devenv" / "images.sh"), *args).stdout


def nodes_with_the_release_images() -> None:
    """The test nodes on an image store that holds the release's images: devenv/nodes.sh
    adds every release built for today's inputs, and restarts the nodes (as many as run)
    when their store changes; a node keeps nova's state, not the stacks' files."""
    running = json.loads((Path(ENV["OPENSTACK_NOVA_ENV"]) / "nodes" / "nodes.json").read_text())
    run(str(ROOT / "devenv" / "nodes.sh"), "start", str(len(running)))
    found = node(NODE, f"podman image exists {COMPUTE_IMAGE} && echo found").stdout.strip()
    assert found == "found", f"{NODE}'s image store has no {COMPUTE_IMAGE}"


def deregister(host: str, namespace: str) -> list[str]:
    """The host's nova-compute service records deleted from a stack's nova, as the stack's
    own removal of the node does (nova drops its compute node, resource provider and host
    mapping with it): the ids deleted."""
    listed = openstack(*SERVICE_UUIDS, "compute", "service", "list", "--service", "nova-compute",
                       "--host", host, namespace=namespace)
    for service in listed:
        openstack(*SERVICE_UUIDS, "compute", "service", "delete", service["ID"], namespace=namespace,
                  want_json=False)
    return [service["ID"] for service in listed]


class Borrowed:
    """The stack up on the borrowed node; `give_back()` destroys it and gives the node back
    to the dev stack (once)."""

    def __init__(self, dev_stack: str) -> None:
        self.dev_stack = dev_stack
        self.given_back = False

    def give_back(self) -> None:
        if self.given_back:
            return
        self.given_back = True
        # the stack's destroy stops its units and deletes the node's record from its nova
        pulumi("destroy", "--yes", "--skip-preview", "-s", STACK, check=False)
        pulumi("stack", "rm", "--yes", "--force", "--preserve-config", STACK, check=False)
        run(str(ROOT / "devenv" / "neighbours.sh"), STACK, "--delete", check=False)
        # the nodes are chassis of dev's OVN again; refresh finds the node's drift, up lays out dev's files
        run(str(ROOT / "devenv" / "chassis.sh"), self.dev_stack)
        up(self.dev_stack, refresh=True)


@pytest.fixture()
def antelope(dev_stack: str) -> Iterator[Borrowed]:
    """The release's images in the cluster and the nodes' store, the stack's neighbours, the
    stack up on the node, the node's record gone from the dev stack it left; afterwards all of
    it removed and the node given back."""
    images("import", RELEASE)
    nodes_with_the_release_images()
    # what an earlier run's failed destroy left in the fixed namespace belongs to no stack any more: the
    # new stack's first up would meet it ("Server-Side Apply field conflict"), so it goes first
    run("kubectl", "delete", "namespace", NS, "--ignore-not-found", "--wait=true", "--timeout=300s")
    pulumi("stack", "select", "--create", STACK)
    borrowed = Borrowed(dev_stack)
    try:
        run(str(ROOT / "devenv" / "neighbours.sh"), STACK)
        # the node holds the dev stack's files: refresh finds that, up lays out this stack's
        up(STACK, refresh=True)
        # the node left dev: its record there would name a node that is no longer dev's
        deregister(NODE, DEV_NS)
        yield borrowed
    finally:
        borrowed.give_back()


def _services(*args: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {(s["Binary"], s["Host"]): s for s in openstack("compute", "service", "list", *args, namespace=NS)}


def test_a_stack_of_the_older_release_comes_up_on_its_own_images_and_registers_its_compute(
        antelope: Borrowed) -> None:
    pulumi("preview", "--expect-no-changes", "-s", STACK)

    # every nova pod runs the release's image, and that image's nova is the release
    pods = kubectl_json("get", "pods", "-n", NS, "-l", "service=nova")["items"]
    used = {c["image"] for pod in pods for c in pod["spec"]["containers"] if c["image"].startswith("localhost/")}
    assert used and all(ref.endswith(":2023.1-1") for ref in used), used
    version = run("kubectl", "exec", "-n", NS, "nova-cell0-conductor-0", "--", "nova-manage", "--version").stdout
    assert version.strip() == RELEASE

    # the API answers, as nova 27 (its WSGI application from the release's factory)
    shown = openstack("versions", "show", "--service", "compute", "--interface", "public", namespace=NS)
    assert {v["Max Microversion"] for v in shown if v["Status"] == "CURRENT"} == {MAX_MICROVERSION}, shown

    # its services up
    services = eventually(_services, lambda s: len(s) >= 3 and all(v["State"] == "up" for v in s.values()))
    want = {("nova-scheduler", "nova-scheduler-0"), ("nova-conductor", "nova-cell0-conductor-0"),
            ("nova-conductor", "nova-cell1-conductor-0")}
    assert want <= set(services), sorted(services)
    assert all(services[k]["State"] == "up" for k in want), services

    # its cells mapped
    cells = nova_manage("cell_v2", "list_cells", namespace=NS)
    names = {line.split("|")[1].strip() for line in cells.splitlines() if line.count("|") > 3}
    assert {"cell0", "cell1"} <= names, cells

    # the node's systemd runs the release's nova-compute in podman, from its image, under its Quadlet unit
    assert node(NODE, f"systemctl is-active {UNIT}").stdout.strip() == "active"
    running = container(NODE)
    assert running is not None and running["image"] == COMPUTE_IMAGE, running
    unit_pid = node(NODE, f"systemctl show -P MainPID {UNIT}").stdout.strip()
    assert running["id"] in node(NODE, f"cat /proc/{unit_pid}/cmdline | tr '\\0' ' '").stdout
    process = compute_process(NODE)
    assert process is not None and process[1] == "nova", process
    assert in_compute(NODE, "nova-compute --version").stdout.strip() == RELEASE
    # with nova's libvirt driver on the node's QEMU (TCG: the stack's customServiceConfig)
    assert eventually(lambda: option_dump(NODE, "compute_driver"), bool) == ["libvirt.LibvirtDriver"]
    assert option_dump(NODE, "libvirt.virt_type") == ["qemu"]

    # registered in cell1 and as a hypervisor
    computes = eventually(lambda: _services("--service", "nova-compute"),
                          lambda s: s.get(("nova-compute", NODE), {}).get("State") == "up", seconds=180)
    assert computes.get(("nova-compute", NODE), {}).get("State") == "up", computes
    assert mapped_hosts(NS).get(NODE) == "cell1"
    hypervisors = eventually(lambda: openstack("hypervisor", "list", namespace=NS),
                             lambda h: any(x["Hypervisor Hostname"] == NODE for x in h))
    (hypervisor,) = [x for x in hypervisors if x["Hypervisor Hostname"] == NODE] or [None]
    assert hypervisor is not None and (hypervisor["Hypervisor Type"], hypervisor["State"]) == ("QEMU", "up"), \
        hypervisors

    # the node's record left the dev stack's nova with the node
    assert NODE not in compute_services(DEV_NS)

    # what the program rendered for 27.5.1 is what nova 27.5.1 itself accepts, in each pod and on the node
    running_pods = [pod for pod in pods if pod["status"].get("phase") == "Running"]
    assert {pod["metadata"]["labels"]["component"] for pod in running_pods} >= {"nova-api", "nova-scheduler"}
    for pod in running_pods:
        assert _validator_errors(_in_pod(pod["metadata"]["name"])) <= RUNTIME_OPTIONS, pod["metadata"]["name"]
    assert _validator_errors(lambda script: in_compute(NODE, script)) <= RUNTIME_OPTIONS, NODE

    # given back: the dev stack's nova-compute on the node comes back up, and is mapped again
    antelope.give_back()
    again = container(NODE)
    assert again is not None and again["image"] == DEV_COMPUTE_IMAGE, again
    back = eventually(lambda: compute_services(DEV_NS), lambda s: s.get(NODE, {}).get("State") == "up", seconds=180)
    assert back.get(NODE, {}).get("State") == "up", back
    # nova maps a host whose record it deleted at its next discovery (the scheduler's, or this)
    nova_manage("cell_v2", "discover_hosts", "--by-service", "--verbose", namespace=DEV_NS)
    assert mapped_hosts(DEV_NS).get(NODE) == DEV_CELL


Runner = Callable[[str], subprocess.CompletedProcess[str]]


def _in_pod(pod: str) -> Runner:
    return lambda script: run("kubectl", "exec", "-n", NS, pod, "--", "sh", "-c", script)


def _validator_errors(execute: Runner) -> set[str]:
    """The options oslo-config-validator (nova and libraries of the pod or container that
    `execute` runs a sh script in) finds unknown in the nova config files it runs with."""
    namespaces = " ".join(f"--namespace {ns}" for ns in NAMESPACES)
    script = (f"for f in /etc/nova/nova.conf.d/*.conf; do echo \"$f\"; python3 -m oslo_config.validator "
              f"{namespaces} --input-file \"$f\"; done; true")
    proc = execute(script)
    assert "/etc/nova/nova.conf.d/01-nova.conf" in proc.stdout.split(), proc.stdout  # it read the files
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return {line.split(":", 2)[2].split(" ", 1)[0] for line in proc.stderr.splitlines() if line.startswith("ERROR:")}
