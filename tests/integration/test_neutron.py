"""Neutron, a neighbour of the local environment: neutron's API with ML2/OVN, in Keystone's
catalog where nova looks for it, writing what it makes into OVN's northbound database
(kept on the host) and, through ovn-northd, the southbound one; and nova, which asks
Neutron about every server it shows, shows and lists servers."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from devenv.neighbours.manifests import TEST_IMAGE
from tests.integration.local_env import in_client, openstack, run
from tests.integration.nova_compute import eventually

NB_SOCKET = "unix:/run/ovn/ovnnb_db.sock"
SB_SOCKET = "unix:/run/ovn/ovnsb_db.sock"
# a flavor asking for a trait no compute has: the scheduler finds no host and nova keeps
# the server in cell0, in ERROR, with no compute involved (and within any quota)
UNPLACEABLE = "m1.unplaceable"
NO_SUCH_TRAIT = "trait:CUSTOM_OPENSTACK_NOVA_NO_SUCH_HOST"
MICROVERSION = "2.37"  # --nic none


def nb(namespace: str, *args: str) -> str:
    return run("kubectl", "exec", "-n", namespace, "ovsdbserver-nb-0", "--",
               "ovn-nbctl", f"--db={NB_SOCKET}", *args).stdout


def sb(namespace: str, *args: str) -> str:
    return run("kubectl", "exec", "-n", namespace, "ovsdbserver-sb-0", "--",
               "ovn-sbctl", f"--db={SB_SOCKET}", *args).stdout


def switches(namespace: str) -> set[str]:
    return set(nb(namespace, "--bare", "--columns=name", "list", "Logical_Switch").split())


def test_neutron_is_in_the_catalog_as_the_network_service_with_neutron_operators_endpoints(
        dev_neighbours: str) -> None:
    ns = dev_neighbours
    (service,) = [s for s in openstack("service", "list", namespace=ns) if s["Type"] == "network"]
    assert service["Name"] == "neutron"
    endpoints = openstack("endpoint", "list", "--service", "network", namespace=ns)
    assert {(e["Interface"], e["URL"]) for e in endpoints} == {
        ("internal", f"http://neutron-internal.{ns}.svc:9696"),
        ("public", f"http://neutron-public.{ns}.svc:9696"),
    }
    versions = in_client(ns, (
        "import json, urllib.request\n"
        "def ids(url):\n"
        "    return [v['id'] for v in json.load(urllib.request.urlopen(url, timeout=30))['versions']]\n"
        f"print(json.dumps([ids(u) for u in {sorted(e['URL'] for e in endpoints)!r}]))\n"
    ))
    assert versions == [["v2.0"], ["v2.0"]]


def test_neutron_answers_the_openstack_client(dev_neighbours: str) -> None:
    assert isinstance(openstack("network", "list", namespace=dev_neighbours), list)
    assert isinstance(openstack("port", "list", namespace=dev_neighbours), list)
    # ML2 with OVN's mechanism driver only, which answers for itself (no agents)
    extensions = {e["Alias"] for e in openstack("extension", "list", "--network", namespace=dev_neighbours)}
    assert {"router", "security-group", "port-security", "binding"} <= extensions


@pytest.fixture()
def network(dev_neighbours: str) -> Iterator[dict[str, Any]]:
    name = f"test-neutron-{uuid.uuid4().hex[:6]}"
    made = openstack("network", "create", name, namespace=dev_neighbours)
    yield made
    if any(n["ID"] == made["id"] for n in openstack("network", "list", namespace=dev_neighbours)):
        for port in openstack("port", "list", "--network", made["id"], namespace=dev_neighbours):
            openstack("port", "delete", port["ID"], namespace=dev_neighbours, want_json=False)
        openstack("network", "delete", made["id"], namespace=dev_neighbours, want_json=False)


def test_a_network_and_port_made_through_neutron_reach_both_ovn_databases_and_leave_with_them(
        dev_neighbours: str, network: dict[str, Any]) -> None:
    ns, switch = dev_neighbours, f"neutron-{network['id']}"
    assert network["provider:network_type"] == "geneve"
    port = openstack("port", "create", "--network", network["id"], f"{network['name']}-port", namespace=ns)
    assert switch in switches(ns)
    ports = nb(ns, "--bare", "--columns=name", "list", "Logical_Switch_Port").split()
    assert port["id"] in ports
    assert "neutron_pg_drop" in nb(ns, "--bare", "--columns=name", "list", "Port_Group").split()
    # ovn-northd carries the network into the southbound database, where the nodes find it
    datapaths = eventually(lambda: sb(ns, "--bare", "--columns=external_ids", "list", "Datapath_Binding"),
                           lambda out: f"name={switch}" in out, seconds=30, interval=1)
    assert f"name={switch}" in datapaths
    openstack("port", "delete", port["id"], namespace=ns, want_json=False)
    openstack("network", "delete", network["id"], namespace=ns, want_json=False)
    assert switch not in switches(ns)


def test_what_neutron_wrote_to_ovn_survives_a_new_northbound_database_pod(
        dev_neighbours: str, network: dict[str, Any]) -> None:
    ns, switch = dev_neighbours, f"neutron-{network['id']}"
    assert switch in switches(ns)
    run("kubectl", "delete", "pod", "-n", ns, "ovsdbserver-nb-0", "--wait=true")
    run("kubectl", "rollout", "status", "-n", ns, "statefulset/ovsdbserver-nb", "--timeout=120s")
    assert switch in switches(ns)


@pytest.fixture()
def unplaceable_server(dev_stack: str) -> Iterator[str]:
    ns = "openstack"
    if not any(f["Name"] == UNPLACEABLE for f in openstack("flavor", "list", namespace=ns)):
        openstack("flavor", "create", "--vcpus", "1", "--ram", "128", "--disk", "1",
                  "--property", f"{NO_SUCH_TRAIT}=required", UNPLACEABLE, namespace=ns)
    name = f"test-neutron-{uuid.uuid4().hex[:6]}"
    openstack("--os-compute-api-version", MICROVERSION, "server", "create", "--flavor", UNPLACEABLE,
              "--image", TEST_IMAGE, "--nic", "none", name, namespace=ns)
    yield name
    openstack("server", "delete", "--wait", name, namespace=ns, want_json=False)


def test_nova_shows_and_lists_servers_once_neutron_is_in_the_catalog(unplaceable_server: str) -> None:
    """nova 34 asks Neutron for the security groups of every server it shows (its ports'):
    without a network service in the catalog, show and list answer 500 EndpointNotFound."""
    deadline = time.time() + 120
    shown = openstack("server", "show", unplaceable_server)
    while shown["status"] not in ("ERROR", "ACTIVE") and time.time() < deadline:
        time.sleep(2)
        shown = openstack("server", "show", unplaceable_server)
    assert shown["status"] == "ERROR"  # no host has the trait: the scheduler found none
    listed = in_client("openstack", (
        "import json, openstack\n"
        "compute = openstack.connect(cloud='default').compute\n"
        f"reply = compute.get('/servers/detail?name={unplaceable_server}', microversion={MICROVERSION!r})\n"
        "print(json.dumps([reply.status_code, [s['name'] for s in reply.json().get('servers', [])]]))\n"
    ))
    assert listed == [200, [unplaceable_server]]
    assert unplaceable_server in {s["Name"] for s in openstack("server", "list", "--all-projects")}
