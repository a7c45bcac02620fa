"""The older nova release the program claims, run for real: stacks/Pulumi.antelope-local.yaml
brings up nova 27.5.1 (OpenStack 2023.1) from the images devenv/images.sh builds for it
(devenv/images/releases/27.5.1), beside the environment's neighbours of today, with
edpm-compute-1 borrowed from the dev stack running that release's nova-compute. Its API
answers as nova 27.5.1, its services are up, its cells are mapped and its compute is
registered; then the stack is destroyed and the node given back to the dev stack."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.local_env import ROOT, kubectl_json, node, nova_manage, openstack, pulumi, run, up
from tests.integration.nova_compute import compute_process, eventually
from tools import nova_catalog

# Its own neighbours, a second control plane and a node deployed and given back: longer than CI allows.
pytestmark = pytest.mark.long

STACK = "antelope-local"
RELEASE = "27.5.1"
NS = "openstack-antelope"
NODE = "edpm-compute-1"
# the newest compute API microversion of nova 27 (2023.1); nova 34's is higher
MAX_MICROVERSION = "2.95"
# nova's config namespaces, but osprofiler's (an extra nova's images do not hold)
NAMESPACES = [ns for ns in nova_catalog.NAMESPACES if ns != "osprofiler"]
# registered by keystoneauth when nova starts, so absent from every option list
RUNTIME_OPTIONS = {"oslo_limit/auth_type"}


def images(*args: str) -> str:
    return run(str(ROOT / "devenv" / "images.sh"), *args).stdout


@pytest.fixture()
def antelope(dev_stack: str) -> Iterator[str]:
    """The release's images in the cluster, its nova-compute for the node, the stack's
    neighbours, the stack up; afterwards all of it removed and the node given back."""
    images("import", RELEASE)
    images("compute", RELEASE)
    pulumi("stack", "select", "--create", STACK)
    try:
        run(str(ROOT / "devenv" / "neighbours.sh"), STACK)
        # the node holds the dev stack's files: refresh finds that, up lays out this stack's
        up(STACK, refresh=True)
        yield STACK
    finally:
        pulumi("destroy", "--yes", "--skip-preview", "-s", STACK, check=False)
        pulumi("stack", "rm", "--yes", "--force", "--preserve-config", STACK, check=False)
        run(str(ROOT / "devenv" / "neighbours.sh"), STACK, "--delete", check=False)
        up(dev_stack, refresh=True)


def _services(*args: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {(s["Binary"], s["Host"]): s for s in openstack("compute", "service", "list", *args, namespace=NS)}


def test_a_stack_of_the_older_release_comes_up_on_its_own_images_and_registers_its_compute(antelope: str) -> None:
    pulumi("preview", "--expect-no-changes", "-s", antelope)

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

    # the node runs the release's nova-compute, registered in cell1 and as a hypervisor
    process = compute_process(NODE)
    assert process is not None and f"nova-{RELEASE}-" in process[2] and "compute-venv" in process[2], process
    computes = eventually(lambda: _services("--service", "nova-compute"),
                          lambda s: s.get(("nova-compute", NODE), {}).get("State") == "up")
    assert computes.get(("nova-compute", NODE), {}).get("State") == "up", computes
    hosts = nova_manage("cell_v2", "list_hosts", namespace=NS)
    assert any(NODE in line and "cell1" in line for line in hosts.splitlines()), hosts
    hypervisors = eventually(lambda: openstack("hypervisor", "list", namespace=NS),
                             lambda h: any(NODE in x["Hypervisor Hostname"] for x in h))
    assert any(NODE in x["Hypervisor Hostname"] and x["State"] == "up" for x in hypervisors), hypervisors
    assert node(NODE, "hostname").stdout.strip() == NODE

    # what the program rendered for 27.5.1 is what nova 27.5.1 itself accepts, in each pod
    running = [pod for pod in pods if pod["status"].get("phase") == "Running"]
    assert {pod["metadata"]["labels"]["component"] for pod in running} >= {"nova-api", "nova-scheduler"}, running
    for pod in running:
        assert _validator_errors(pod["metadata"]["name"]) <= RUNTIME_OPTIONS, pod["metadata"]["name"]


def _validator_errors(pod: str) -> set[str]:
    """The options oslo-config-validator (the pod's own nova and libraries) finds unknown in
    the nova config files the pod runs with."""
    namespaces = " ".join(f"--namespace {ns}" for ns in NAMESPACES)
    script = (f"for f in /etc/nova/nova.conf.d/*.conf; do echo \"$f\"; python3 -m oslo_config.validator "
              f"{namespaces} --input-file \"$f\"; done; true")
    proc = run("kubectl", "exec", "-n", NS, pod, "--", "sh", "-c", script)
    assert "/etc/nova/nova.conf.d/01-nova.conf" in proc.stdout.split(), proc.stdout  # it read the pod's files
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return {line.split(":", 2)[2].split(" ", 1)[0] for line in proc.stderr.splitlines() if line.startswith("ERROR:")}
