"""The test nodes reach the control plane as a real data-plane node does: through the
LoadBalancer addresses of the `internalapi` network and the data plane's DNS, never
through the cluster's service or pod networks."""

from __future__ import annotations

import ipaddress
import re
import time

import pytest

from tests.integration.boundary import (
    dev_pools,
    exposed_services,
    in_pool,
    names_in_node_files,
    node_internalapi_address,
    resolve_on_node,
    tcp_connects_from_node,
)
from tests.integration.local_env import NODES, kubectl_json, node, openstack, run, stack_output
from tests.integration.nova_compute import eventually

NAMESPACE = "openstack"
# node -> its cell in the dev stack (stacks/Pulumi.dev.yaml)
CELL_OF = {"edpm-compute-0": "cell1", "edpm-compute-1": "cell2"}
# The catalog's services nova-compute looks up ([placement], [glance], [neutron], [cinder] with
# valid_interfaces=internal): never the compute API itself.
COMPUTE_CATALOG_TYPES = {"identity", "placement", "image", "network", "volumev3", "block-storage"}


def test_every_name_in_the_nodes_files_and_catalog_resolves_to_an_internalapi_load_balancer(dev_stack: str) -> None:
    """From each node, every host name nova-compute's and the metadata agent's rendered files name
    (and the catalog's internal endpoints nova-compute looks up) resolves, through the node's own
    resolver, to the LoadBalancer address MetalLB gave that Service, from the internalapi pool."""
    pool = dev_pools()["internalapi"]
    services = exposed_services()
    catalog = {re.sub(r"^\w+://([^:/]+).*$", r"\1", e["URL"])
               for e in openstack("endpoint", "list", "--interface", "internal")
               if e["Service Type"] in COMPUTE_CATALOG_TYPES}
    for name in NODES:
        wanted = names_in_node_files(name) | catalog
        assert {"keystone-internal.openstack.svc", f"rabbitmq-{CELL_OF[name]}.openstack.svc",
                "ovsdbserver-sb.openstack.svc"} <= wanted, (name, wanted)
        for host in sorted(wanted):
            addresses = resolve_on_node(name, host)
            assert addresses, f"{name} does not resolve {host}"
            assert all(in_pool(a, pool) for a in addresses), (name, host, addresses, pool)
            assert set(addresses) == set(services[host]), (name, host, addresses, services.get(host))


def test_the_nodes_resolver_is_the_data_planes_dns_and_knows_no_cluster_name(dev_stack: str) -> None:
    for name in NODES:
        resolv = node(name, "cat /etc/resolv.conf").stdout
        assert re.findall(r"^nameserver\s+(\S+)", resolv, re.M) == ["192.168.122.80"], (name, resolv)
        assert "cluster.local" not in resolv, (name, resolv)
        for cluster_name in ("kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
                             "kube-dns.kube-system.svc"):
            assert resolve_on_node(name, cluster_name) == [], (name, cluster_name)


def test_the_nodes_reach_no_cluster_ip_and_no_pod_ip(dev_stack: str) -> None:
    kubernetes = kubectl_json("get", "service", "kubernetes", "-n", "default")["spec"]["clusterIP"]
    keystone = kubectl_json("get", "service", "keystone-internal", "-n", NAMESPACE)
    pods = kubectl_json("get", "pods", "-n", NAMESPACE, "-l", "component=nova-metadata")["items"]
    assert pods, "no nova-metadata pod"
    pod_ip = pods[0]["status"]["podIP"]
    lb = keystone["status"]["loadBalancer"]["ingress"][0]["ip"]
    for name in NODES:
        # the same Service answers on its LoadBalancer address: the checks below can fail
        assert tcp_connects_from_node(name, lb, 5000), (name, lb)
        assert not tcp_connects_from_node(name, kubernetes, 443), (name, kubernetes)
        assert not tcp_connects_from_node(name, keystone["spec"]["clusterIP"], 5000), name
        assert not tcp_connects_from_node(name, pod_ip, 8775), (name, pod_ip)
        assert not tcp_connects_from_node(name, "10.96.0.10", 53), name


def test_every_service_the_nodes_use_is_a_load_balancer_with_its_address_assigned(dev_stack: str) -> None:
    pool = dev_pools()["internalapi"]
    for host, addresses in exposed_services().items():
        if not host.endswith(f".{NAMESPACE}.svc"):
            continue
        assert addresses and all(in_pool(a, pool) for a in addresses), (host, addresses)
    for service in ("keystone-internal", "placement-internal", "glance-default-internal", "neutron-internal",
                    "rabbitmq-cell1", "rabbitmq-cell2", "ovsdbserver-sb", "nova-metadata-internal"):
        found = kubectl_json("get", "service", service, "-n", NAMESPACE)
        assert found["spec"]["type"] == "LoadBalancer", service
        assert found["status"]["loadBalancer"]["ingress"][0]["ip"], service
        assert found["metadata"]["annotations"]["dnsmasq.network.openstack.org/hostname"] == \
            f"{service}.{NAMESPACE}.svc", service


def test_the_stack_says_what_it_exposes_to_the_data_plane_in_the_form_its_dns_takes(dev_stack: str) -> None:
    """The stack output dataPlaneDns: each address the program's LoadBalancer Services got, with the
    names the nodes use for it (what the environment's dnsmasq also reads from the annotations)."""
    metadata = kubectl_json("get", "service", "nova-metadata-internal", "-n", NAMESPACE)
    assert metadata["spec"]["externalTrafficPolicy"] == "Local"
    assert metadata["metadata"]["annotations"]["metallb.universe.tf/address-pool"] == "internalapi"
    address = metadata["status"]["loadBalancer"]["ingress"][0]["ip"]
    # nova's internal API shares the address of the environment's internal APIs (keystone-internal's)
    api = kubectl_json("get", "service", "nova-internal", "-n", NAMESPACE)
    assert api["metadata"]["annotations"]["metallb.universe.tf/allow-shared-ip"] == f"internalapi-{NAMESPACE}"
    api_address = api["status"]["loadBalancer"]["ingress"][0]["ip"]
    keystone = kubectl_json("get", "service", "keystone-internal", "-n", NAMESPACE)
    assert api_address == keystone["status"]["loadBalancer"]["ingress"][0]["ip"]
    records = [{"hostnames": ["nova-internal.openstack.svc"], "ip": api_address},
               {"hostnames": ["nova-metadata-internal.openstack.svc"], "ip": address}]
    assert stack_output("dev", "dataPlaneDns") == sorted(records, key=lambda r: ipaddress.ip_address(r["ip"]))
    assert exposed_services()["nova-metadata-internal.openstack.svc"] == [address]
    assert exposed_services()["nova-internal.openstack.svc"] == [api_address]


def test_nova_compute_talks_to_its_cells_bus_from_the_nodes_internalapi_address(dev_stack: str) -> None:
    for name, cell in CELL_OF.items():
        address = node_internalapi_address(name)

        def peers(cell: str = cell) -> list[str]:
            out = run("kubectl", "exec", "-n", NAMESPACE, f"rabbitmq-{cell}-0", "--", "rabbitmqctl", "-q",
                      "list_connections", "peer_host").stdout
            return [line.strip() for line in out.splitlines() if line.strip()]

        found = eventually(peers, lambda p, a=address: a in p, seconds=120)
        assert address in found, (name, cell, found)


def test_the_metadata_agent_reaches_nova_metadata_from_the_nodes_internalapi_address(dev_stack: str) -> None:
    """The agent's container (host network) asks nova's metadata service by the name its rendered
    file gives; the service's access log shows the node's internalapi address as the client."""
    for name in NODES:
        address = node_internalapi_address(name)
        marker = f"/?boundary-check-{name}-{time.time_ns()}"
        fetch = node(name, "podman exec ovn_metadata_agent python3 -c "
                     "'import urllib.request,sys; print(urllib.request.urlopen("
                     f"\"http://nova-metadata-internal.openstack.svc:8775{marker}\", timeout=20).status)'")
        assert fetch.stdout.strip() == "200", (name, fetch.stdout, fetch.stderr)
        lines = eventually(lambda m=marker: _metadata_log_lines(m), bool, seconds=30)
        assert all(f" {address} " in line for line in lines), (name, address, lines)


def _metadata_log_lines(marker: str) -> list[str]:
    """The access-log lines of nova's metadata pods that hold `marker`."""
    lines = []
    for pod in kubectl_json("get", "pods", "-n", NAMESPACE, "-l", "component=nova-metadata")["items"]:
        log = run("kubectl", "logs", "-n", NAMESPACE, pod["metadata"]["name"], "--since=10m").stdout
        lines += [line for line in log.splitlines() if marker in line]
    return lines


@pytest.mark.parametrize("name", NODES)
def test_the_node_has_its_internalapi_address_and_no_route_through_it_to_the_cluster(name: str, dev_stack: str) -> None:
    address = node_internalapi_address(name)
    shown = node(name, "ip -4 -o addr show dev eth1").stdout
    assert f"inet {address}/24" in shown, shown
    routes = node(name, "ip route show default").stdout
    assert "eth1" not in routes, routes
