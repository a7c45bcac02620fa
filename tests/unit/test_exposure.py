"""The Services the stack exposes: each template's override.service and kubernetes.loadBalancerPools
read and checked (every problem at its path), the Services made of them (type, spec fields, the
data plane's DNS annotation on LoadBalancer ones only) and the data plane's DNS records."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pulumi
import pytest

from components.render import data_plane_dns, service_endpoint
from components.settings import INTERNAL, PUBLIC, ServiceOverride, ServiceType, SettingsError, TrafficPolicy
from components.stackconfig import load
from components.workload import ingress_addresses
from tests.unit import KNOWN_HOSTS, LOAD_BALANCER
from tests.unit.test_components import RecordingMocks

P = "openstack-nova:"
POOLS = {"internalapi": ["172.17.0.80-172.17.0.99"], "ctlplane": ["192.168.122.80/28"]}
IPS = "metallb.universe.tf/loadBalancerIPs"
POOL = "metallb.universe.tf/address-pool"
SHARED = "metallb.universe.tf/allow-shared-ip"
HOSTNAME = "dnsmasq.network.openstack.org/hostname"
TOP = "nova.metadataServiceTemplate.override.service"
CELL1 = "nova.cellTemplates.cell1.metadataServiceTemplate.override.service"


def lb(annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    """An override.service of type LoadBalancer with `annotations` and more `spec`."""
    return {"metadata": {"annotations": annotations or {}}, "spec": {"type": "LoadBalancer", **spec}}


def config(**nova: Any) -> dict[str, Any]:
    """Cells cell0 and cell1 (metadata at the top level), MetalLB's pools, `nova` keys added."""
    return {"kubernetes": {"loadBalancerPools": POOLS},
            "nova": {"cellTemplates": {"cell0": {}, "cell1": {}}, **nova}}


def problems_of(raw: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(SettingsError) as caught:
        load(raw, secret_keys=["nova", "dataplane"], catalog=None)
    return {p.path: p.message for p in caught.value.problems}


def at(path: str, annotation: str | None = None) -> str:
    return P + path + (f'.metadata.annotations["{annotation}"]' if annotation else "")


def test_without_overrides_every_service_keeps_kubernetes_defaults() -> None:
    settings = load({}, catalog=None)
    assert settings.kubernetes.load_balancer_pools == {}
    nova = settings.nova
    for override in (nova.api.service(INTERNAL), nova.api.service(PUBLIC), nova.metadata.service(INTERNAL),
                     nova.cell("cell1").novncproxy.service(PUBLIC)):
        assert override == ServiceOverride() and override.type is None and not override.load_balancer


def test_overrides_are_read_at_nova_operators_paths() -> None:
    raw = config(
        apiServiceTemplate={"override": {"service": {
            "internal": {"metadata": {"labels": {"team": "a"}}, "spec": {"sessionAffinity": "ClientIP"}},
            "public": lb(loadBalancerSourceRanges=["10.0.0.0/8"], loadBalancerClass="metallb",
                         ipFamilyPolicy="SingleStack")}}},
        metadataServiceTemplate={"enabled": False},
        cellTemplates={"cell0": {}, "cell1": {
            "metadataServiceTemplate": {"enabled": True, "override": {"service": lb(
                {POOL: "internalapi", IPS: "172.17.0.81"}, externalTrafficPolicy="Local",
                internalTrafficPolicy="Cluster")}},
            "noVNCProxyServiceTemplate": {"override": {"service": {"spec": {"type": "NodePort"}}}}}})
    settings = load(raw, catalog=None)
    pools = settings.kubernetes.load_balancer_pools
    assert {name: [r.text for r in ranges] for name, ranges in pools.items()} == POOLS
    assert [str(pools["ctlplane"][0].first), str(pools["ctlplane"][0].last)] == ["192.168.122.80", "192.168.122.95"]
    api, cell1 = settings.nova.api, settings.nova.cell("cell1")
    assert dict(api.service(INTERNAL).labels) == {"team": "a"} and api.service(INTERNAL).type is None
    assert str(api.service(INTERNAL).session_affinity) == "ClientIP"
    public = api.service(PUBLIC)
    assert public.type is ServiceType.LOAD_BALANCER and public.load_balancer_source_ranges == ("10.0.0.0/8",)
    assert (public.load_balancer_class, str(public.ip_family_policy)) == ("metallb", "SingleStack")
    metadata = cell1.metadata.service(INTERNAL)
    assert metadata.load_balancer and metadata.external_traffic_policy is TrafficPolicy.LOCAL
    assert [str(a) for a in metadata.addresses] == ["172.17.0.81"] and metadata.pool == "internalapi"
    assert cell1.novncproxy.service(PUBLIC).type is ServiceType.NODE_PORT


@pytest.mark.parametrize(("change", "path", "message"), [
    ({"metadataServiceTemplate": {"override": {"service": lb({IPS: "172.17.0.300"})}}},
     at(TOP, IPS), "'172.17.0.300' is not an IP address"),
    ({"metadataServiceTemplate": {"override": {"service": lb({IPS: "172.17.0.81,172.17.0.82"})}}},
     at(TOP, IPS), "names two addresses of one IP version"),
    ({"metadataServiceTemplate": {"override": {"service": lb({POOL: "storage"})}}},
     at(TOP, POOL), "names pool 'storage', and kubernetes.loadBalancerPools declares ctlplane, internalapi"),
    ({"metadataServiceTemplate": {"override": {"service": lb({POOL: "internalapi", IPS: "192.168.122.81"})}}},
     at(TOP, IPS), "192.168.122.81 is not in pool internalapi (172.17.0.80-172.17.0.99), which "
                   "metallb.universe.tf/address-pool names"),
    ({"metadataServiceTemplate": {"override": {"service": lb({IPS: "172.17.0.50"})}}},
     at(TOP, IPS), "172.17.0.50 is in no pool: kubernetes.loadBalancerPools declares ctlplane, internalapi"),
    ({"metadataServiceTemplate": {"override": {"service": {"metadata": {"annotations": {POOL: "internalapi"}}}}}},
     at(TOP, POOL), "MetalLB's annotation takes effect on a LoadBalancer Service only"),
    ({"metadataServiceTemplate": {"override": {"service": {"spec": {"externalTrafficPolicy": "Local"}}}}},
     P + TOP + ".spec.externalTrafficPolicy",
     "applies to LoadBalancer and NodePort Services only, and spec.type is ClusterIP"),
    ({"metadataServiceTemplate": {"override": {"service": lb(loadBalancerSourceRanges=["10.0.0.0/33"])}}},
     P + TOP + ".spec.loadBalancerSourceRanges[0]", "'10.0.0.0/33' is not a CIDR of clients"),
    ({"metadataServiceTemplate": {"override": {"service": {"spec": {"type": "NodePort",
                                                                    "loadBalancerClass": "x"}}}}},
     P + TOP + ".spec.loadBalancerClass", "takes effect on a LoadBalancer Service only"),
    ({"metadataServiceTemplate": {"override": {"service": {"spec": {"type": "Loadbalancer"}}}}},
     P + TOP + ".spec.type", "'Loadbalancer' is not one of: ClusterIP, LoadBalancer, NodePort"),
    ({"metadataServiceTemplate": {"override": {"service": {"spec": {"externalIPs": ["172.17.0.81"]}}}}},
     P + TOP + ".spec.externalIPs", "unknown key 'externalIPs'"),
    ({"metadataServiceTemplate": {"override": {"service": lb({HOSTNAME: "Nova_Metadata"})}}},
     at(TOP, HOSTNAME), "'Nova_Metadata' is not a valid host name"),
    ({"apiServiceTemplate": {"override": {"service": {"admin": lb()}}}},
     P + "nova.apiServiceTemplate.override.service.admin", "unknown key 'admin'"),
    ({"schedulerServiceTemplate": {"override": {}}},
     P + "nova.schedulerServiceTemplate.override", "unknown key 'override'"),
])
def test_a_bad_override_is_a_problem_at_its_path(change: dict[str, Any], path: str, message: str) -> None:
    problems = problems_of(config(**change))
    assert path in problems, problems
    assert message in problems[path]


@pytest.mark.parametrize(("pools", "path", "message"), [
    ({"internalapi": ["172.17.0.99-172.17.0.80"]}, "kubernetes.loadBalancerPools.internalapi[0]",
     "'172.17.0.99-172.17.0.80' is no range"),
    ({"internalapi": ["172.17.0.80", "172.17.0.0/24"]}, "kubernetes.loadBalancerPools.internalapi[0]",
     "'172.17.0.80' is neither a CIDR (172.17.0.80/28) nor a range of addresses"),
    ({"internalapi": ["172.17.0.80-fd00::1"]}, "kubernetes.loadBalancerPools.internalapi[0]",
     "its first address must be of the last's IP version"),
    ({"internalapi": []}, "kubernetes.loadBalancerPools.internalapi", "lists no addresses"),
    ({"Internal_API": ["172.17.0.80/28"]}, 'kubernetes.loadBalancerPools.Internal_API', "pool name"),
])
def test_a_bad_pool_is_a_problem_at_its_path(pools: dict[str, Any], path: str, message: str) -> None:
    problems = problems_of({"kubernetes": {"loadBalancerPools": pools}})
    assert list(problems) == [P + path]
    assert message in problems[P + path]


def test_an_address_needs_a_declared_pool() -> None:
    raw = config(metadataServiceTemplate={"override": {"service": lb({IPS: "172.17.0.81"})}})
    del raw["kubernetes"]
    assert problems_of(raw) == {at(TOP, IPS): "172.17.0.81 is in no pool: kubernetes.loadBalancerPools declares "
                                              "no pool; MetalLB would leave the Service without an address: pick "
                                              "one of a pool, or declare the cluster's pool that holds it"}


def _two_on(address: str, first: dict[str, Any], second: dict[str, Any], second_at: str = "cell1") -> dict[str, Any]:
    """The top-level metadata Service and cell1's noVNC proxy (or the API's public one) on one address."""
    raw = config(metadataServiceTemplate={"override": {"service": lb({IPS: address, **first})}})
    if second_at == "cell1":
        raw["nova"]["cellTemplates"]["cell1"] = {"noVNCProxyServiceTemplate": {"override": {"service": lb(
            {IPS: address, **second})}}}
    else:
        raw["nova"]["apiServiceTemplate"] = {"override": {"service": {
            "internal": lb({IPS: address, **first}), "public": lb({IPS: address, **second})}}}
    return raw


def test_services_share_an_address_with_one_key_on_distinct_ports() -> None:
    load(_two_on("172.17.0.80", {SHARED: "internalapi"}, {SHARED: "internalapi"}), catalog=None)


@pytest.mark.parametrize(("first", "second", "why"), [
    ({}, {}, "neither carries metallb.universe.tf/allow-shared-ip"),
    ({SHARED: "internalapi"}, {}, "only one carries metallb.universe.tf/allow-shared-ip"),
    ({SHARED: "a"}, {SHARED: "b"}, "their metallb.universe.tf/allow-shared-ip keys differ (a, b)"),
])
def test_services_on_one_address_without_one_key_are_a_problem(first: dict[str, str], second: dict[str, str],
                                                               why: str) -> None:
    path = at("nova.cellTemplates.cell1.noVNCProxyServiceTemplate.override.service", IPS)
    assert problems_of(_two_on("172.17.0.80", first, second)) == {path: (
        f"172.17.0.80 is also the address of {TOP}, and {why}; MetalLB shares an address only between Services "
        "with one metallb.universe.tf/allow-shared-ip key, distinct ports and externalTrafficPolicy Cluster: "
        "give each its own address or meet all three")}


def test_services_of_one_port_or_a_local_policy_never_share_an_address() -> None:
    key = {SHARED: "internalapi"}
    problems = problems_of(_two_on("172.17.0.80", key, key, second_at="api"))
    path = at("nova.apiServiceTemplate.override.service.public", IPS)
    assert list(problems) == [path]  # the metadata Service (8775) shares it with both
    assert "is also the address of nova.apiServiceTemplate.override.service.internal, and both listen on " \
           "port 8774" in problems[path]
    raw = _two_on("172.17.0.80", key, key)
    raw["nova"]["metadataServiceTemplate"]["override"]["service"]["spec"]["externalTrafficPolicy"] = "Local"
    (message,) = problems_of(raw).values()
    assert "externalTrafficPolicy Local keeps an address to the Services that select the same pods" in message


def test_a_disabled_services_address_is_no_one_elses() -> None:
    raw = _two_on("172.17.0.80", {}, {})
    raw["nova"]["cellTemplates"]["cell1"]["noVNCProxyServiceTemplate"]["enabled"] = False
    load(raw, catalog=None)


def test_every_problem_of_the_services_comes_at_once() -> None:
    raw = config(
        metadataServiceTemplate={"override": {"service": lb({POOL: "storage", IPS: "bad"},
                                                            externalTrafficPolicy="Sideways")}},
        apiServiceTemplate={"override": {"service": {"public": {"spec": {"externalTrafficPolicy": "Local"}}}}})
    raw["kubernetes"]["loadBalancerPools"] = {"internalapi": ["nope"]}
    assert set(problems_of(raw)) == {
        at(TOP, IPS), at(TOP, POOL), P + TOP + ".spec.externalTrafficPolicy",
        P + "nova.apiServiceTemplate.override.service.public.spec.externalTrafficPolicy",
        P + "kubernetes.loadBalancerPools.internalapi[0]"}


# --- the metadata Service the nodes' agents reach ----------------------------------------------------

def _with_nodes(raw: dict[str, Any], services: list[str] | None = None, cell: str = "cell1") -> dict[str, Any]:
    raw = copy.deepcopy(raw)
    node_set: dict[str, Any] = {
        "cell": cell, "nodes": {"compute-0": {"ansibleHost": "192.168.122.100"}},
        "nodeTemplate": {"ansibleSSHPrivateKey": "KEY", "knownHostsFile": KNOWN_HOSTS}}
    if services is not None:
        node_set["services"] = services
    raw["dataplane"] = {"ovn": {"sbConnection": "tcp:ovsdbserver-sb.openstack.svc:6642"},
                        "nodeSets": {"edpm": node_set}}
    return raw


def test_the_metadata_service_of_nodes_running_the_agent_is_a_load_balancer() -> None:
    problems = problems_of(_with_nodes(config()))
    assert problems == {P + TOP + ".spec.type": (
        "is ClusterIP (the default), but the neutron-metadata agents of node set edpm reach this metadata service "
        "as nova-metadata-internal.openstack.svc from the data plane, which cannot reach a ClusterIP; set "
        "LoadBalancer, with the pool of the nodes' network in metadata.annotations (e.g. "
        "metallb.universe.tf/address-pool: internalapi), as upstream exposes nova-metadata-internal")}
    load(_with_nodes(config(metadataServiceTemplate=LOAD_BALANCER)), secret_keys=["dataplane"], catalog=None)
    # without the agent, the nodes need no metadata service
    load(_with_nodes(config(), ["ssh-known-hosts", "libvirt", "nova"]), secret_keys=["dataplane"], catalog=None)


def test_in_cells_it_is_the_cells_metadata_service() -> None:
    cells = {"cell0": {}, "cell1": {"metadataServiceTemplate": {"enabled": True}},
             "cell2": {"metadataServiceTemplate": {"enabled": True, **LOAD_BALANCER}}}
    raw = config(metadataServiceTemplate={"enabled": False}, cellTemplates=cells)
    problems = problems_of(_with_nodes(raw))
    assert list(problems) == [P + CELL1 + ".spec.type"]
    assert "as nova-metadata-cell1-internal.openstack.svc from the data plane" in problems[P + CELL1 + ".spec.type"]
    load(_with_nodes(raw, cell="cell2"), secret_keys=["dataplane"], catalog=None)
    nodeport = copy.deepcopy(raw)
    nodeport["nova"]["cellTemplates"]["cell1"]["metadataServiceTemplate"]["override"] = {
        "service": {"spec": {"type": "NodePort"}}}
    assert problems_of(_with_nodes(nodeport))[P + CELL1 + ".spec.type"].startswith("is NodePort, but")


# --- the Services made ------------------------------------------------------------------------------

def test_a_load_balancer_service_is_named_for_the_data_planes_dns() -> None:
    override = load(config(metadataServiceTemplate={"override": {"service": lb(
        {POOL: "internalapi"}, externalTrafficPolicy="Local")}}), catalog=None).nova.metadata.service(INTERNAL)
    endpoint = service_endpoint("nova-metadata-internal", "openstack", override)
    assert (endpoint.type, endpoint.external_traffic_policy) == ("LoadBalancer", "Local")
    assert dict(endpoint.annotations) == {POOL: "internalapi", HOSTNAME: "nova-metadata-internal.openstack.svc"}
    assert endpoint.dns_hostname == "nova-metadata-internal.openstack.svc"
    own = service_endpoint("nova-metadata-internal", "openstack",
                           ServiceOverride(type=ServiceType.LOAD_BALANCER, annotations={HOSTNAME: "metadata.example"}))
    assert own.annotations[HOSTNAME] == own.dns_hostname == "metadata.example"


@pytest.mark.parametrize("kind", [None, ServiceType.CLUSTER_IP, ServiceType.NODE_PORT])
def test_a_service_of_another_type_gets_no_dns_name(kind: ServiceType | None) -> None:
    endpoint = service_endpoint("nova-internal", "openstack", ServiceOverride(type=kind))
    assert HOSTNAME not in endpoint.annotations and endpoint.dns_hostname is None
    assert endpoint.type == (None if kind is None else kind.value)


def test_dns_records_merge_the_names_of_one_address() -> None:
    records = data_plane_dns([
        ("nova-metadata-internal.openstack.svc", ["172.17.0.80"]),
        ("nova-novncproxy-cell1-public.openstack.svc", ["172.17.0.9", "fd00::9"]),
        ("nova-internal.openstack.svc", ["172.17.0.80"]),
        ("nova-public.openstack.svc", []),  # no address yet
    ])
    assert records == [
        {"hostnames": ["nova-novncproxy-cell1-public.openstack.svc"], "ip": "172.17.0.9"},
        {"hostnames": ["nova-internal.openstack.svc", "nova-metadata-internal.openstack.svc"], "ip": "172.17.0.80"},
        {"hostnames": ["nova-novncproxy-cell1-public.openstack.svc"], "ip": "fd00::9"},
    ]
    assert data_plane_dns([]) == []


def test_ingress_addresses_are_read_from_a_status_of_either_form() -> None:
    assert ingress_addresses(None) == [] and ingress_addresses({}) == []
    assert ingress_addresses({"loadBalancer": {"ingress": [{"ip": "172.17.0.80"}, {"hostname": "lb.example"}]}}) \
        == ["172.17.0.80"]


def test_ingress_addresses_of_a_typed_status_are_read_without_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    from pulumi_kubernetes.core.v1 import outputs

    status = outputs.ServiceStatus(load_balancer=outputs.LoadBalancerStatus(
        ingress=[outputs.LoadBalancerIngress(ip="172.17.0.81")]))
    assert ingress_addresses(status) == ["172.17.0.81"]
    assert "not found" not in capsys.readouterr().err


class BalancingMocks(RecordingMocks):
    """A LoadBalancer Service gets an address of the internalapi pool as MetalLB assigns one."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        name, state = super().new_resource(args)
        if args.typ == "kubernetes:core/v1:Service" and state.get("spec", {}).get("type") == "LoadBalancer":
            state["status"] = {"loadBalancer": {"ingress": [{"ip": "172.17.0.80"}]}}
        return name, state


@pytest.fixture()
def balancing() -> Iterator[BalancingMocks]:
    mocks = BalancingMocks()
    pulumi.runtime.set_mocks(mocks, project="openstack-nova", stack="unit", preview=False)
    yield mocks


@pulumi.runtime.test
def test_services_get_their_overrides_and_the_dns_output_their_addresses(
        balancing: BalancingMocks) -> pulumi.Output[Any]:
    from components.controlplane import NovaControlPlane, control_plane_spec

    raw = config(
        metadataServiceTemplate={"override": {"service": {
            "metadata": {"labels": {"team": "a"}, "annotations": {POOL: "internalapi", SHARED: "internalapi"}},
            "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local"}}}},
        apiServiceTemplate={"override": {"service": {"internal": lb({SHARED: "internalapi"})}}})
    raw["kubernetes"]["skipAwait"] = True
    plane = NovaControlPlane("nova", control_plane_spec(load(raw, catalog=None)))

    def check(records: list[dict[str, object]]) -> None:
        services = {i["metadata"]["name"]: i for i in balancing.of_type("kubernetes:core/v1:Service").values()}
        metadata = services["nova-metadata-internal"]
        assert metadata["spec"]["type"] == "LoadBalancer" and metadata["spec"]["externalTrafficPolicy"] == "Local"
        assert metadata["spec"]["ports"] == [{"name": "http", "port": 8775, "targetPort": 8775}]
        assert metadata["metadata"]["annotations"] == {
            POOL: "internalapi", SHARED: "internalapi", HOSTNAME: "nova-metadata-internal.openstack.svc",
            "pulumi.com/deletionPropagationPolicy": "background", "pulumi.com/skipAwait": "true"}
        assert metadata["metadata"]["labels"]["team"] == "a"
        assert metadata["metadata"]["labels"]["component"] == "nova-metadata"
        assert metadata["spec"]["selector"] == {"service": "nova", "component": "nova-metadata",
                                                "app.kubernetes.io/managed-by": "openstack-nova"}
        # the Services without an override are as before overrides existed
        for name in ("nova-public", "nova-novncproxy-cell1-public"):
            assert set(services[name]["spec"]) == {"selector", "ports"}, name
            assert HOSTNAME not in services[name]["metadata"]["annotations"], name
        assert services["nova-internal"]["spec"]["type"] == "LoadBalancer"
        assert records == [{"hostnames": ["nova-internal.openstack.svc", "nova-metadata-internal.openstack.svc"],
                            "ip": "172.17.0.80"}]

    urns = [r.urn for r in plane.all_resources()]
    return pulumi.Output.all(plane.data_plane_dns, *urns).apply(lambda v: check(v[0]))
