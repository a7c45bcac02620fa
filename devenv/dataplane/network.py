"""The environment's address plan, from devenv/network.env (the one place cluster.sh and
nodes.sh take it from too)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

from . import envfile

NETWORK_ENV = "network.env"
FIRST_NODE_HOST = 100  # node i is PREFIX.(100 + i) on every data-plane network


@dataclass(frozen=True)
class DataplaneNetwork:
    """One of the nodes' networks: a bridge on the host, a /24, a MetalLB pool on it."""

    name: str  # MetalLB's IPAddressPool and L2Advertisement are named so (upstream's names)
    bridge: str
    prefix: str  # the first three octets
    host_ip: str
    pool: str  # first-last

    @property
    def cidr(self) -> str:
        return f"{self.prefix}.0/24"

    def node_ip(self, index: int) -> str:
        return f"{self.prefix}.{FIRST_NODE_HOST + index}"


@dataclass(frozen=True)
class Layout:
    node_ip: str  # the Kubernetes node's own address
    pod_cidr: str
    service_cidr: str
    cluster_dns_ip: str
    ctlplane: DataplaneNetwork
    internalapi: DataplaneNetwork
    dataplane_dns_ip: str  # dnsmasq-dns's LoadBalancer address on ctlplane

    @property
    def dataplane_networks(self) -> tuple[DataplaneNetwork, ...]:
        return (self.ctlplane, self.internalapi)

    @property
    def private_cidrs(self) -> tuple[str, ...]:
        """The cluster's networks no test node may reach."""
        return (self.service_cidr, self.pod_cidr)


class LayoutError(ValueError):
    pass


def _network(values: Mapping[str, str], name: str) -> DataplaneNetwork:
    key = name.upper()
    net = DataplaneNetwork(name=name, bridge=values[f"{key}_BRIDGE"], prefix=values[f"{key}_PREFIX"],
                           host_ip=values[f"{key}_HOST_IP"], pool=values[f"{key}_LB_POOL"])
    cidr = ipaddress.IPv4Network(net.cidr)  # a bad prefix fails here
    first, last = pool_bounds(net.pool)
    if ipaddress.IPv4Address(net.host_ip) not in cidr:
        raise LayoutError(f"{key}_HOST_IP {net.host_ip} is not in {net.cidr}")
    if first not in cidr or last not in cidr or first > last:
        raise LayoutError(f"{key}_LB_POOL {net.pool} is not a range in {net.cidr}")
    if first <= ipaddress.IPv4Address(net.host_ip) <= last or last >= ipaddress.IPv4Address(net.node_ip(0)):
        raise LayoutError(f"{key}_LB_POOL {net.pool} overlaps the host's address or the nodes' "
                          f"({net.node_ip(0)} and up)")
    return net


def pool_bounds(pool: str) -> tuple[ipaddress.IPv4Address, ipaddress.IPv4Address]:
    """The first and the last address of a first-last range."""
    first, _, last = pool.partition("-")
    return ipaddress.IPv4Address(first), ipaddress.IPv4Address(last)


def from_env(values: Mapping[str, str]) -> Layout:
    """The layout network.env's assignments describe, checked for what would silently break."""
    try:
        return _checked(values)
    except (ipaddress.AddressValueError, ipaddress.NetmaskValueError) as e:
        raise LayoutError(f"{NETWORK_ENV}: {e}") from None


def _checked(values: Mapping[str, str]) -> Layout:
    try:
        layout = Layout(
            node_ip=values["NODE_IP"], pod_cidr=values["POD_CIDR"], service_cidr=values["SERVICE_CIDR"],
            cluster_dns_ip=values["DNS_IP"], ctlplane=_network(values, "ctlplane"),
            internalapi=_network(values, "internalapi"), dataplane_dns_ip=values["DATAPLANE_DNS_IP"])
    except KeyError as e:
        raise LayoutError(f"{NETWORK_ENV} sets no {e.args[0]}") from None
    for cidr in layout.private_cidrs:
        ipaddress.IPv4Network(cidr)
    first, last = pool_bounds(layout.ctlplane.pool)
    if not first <= ipaddress.IPv4Address(layout.dataplane_dns_ip) <= last:
        raise LayoutError(f"DATAPLANE_DNS_IP {layout.dataplane_dns_ip} is not in the ctlplane pool "
                          f"{layout.ctlplane.pool}")
    return layout


def load() -> Layout:
    return from_env(envfile.load(NETWORK_ENV))
