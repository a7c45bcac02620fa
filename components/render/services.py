"""The Services in front of the control plane's workloads, as nova-operator makes them with
lib-common: one per endpoint, ClusterIP unless the template's `override.service` says otherwise;
and the records the data plane's DNS serves for those of type LoadBalancer.

A LoadBalancer Service carries `dnsmasq.network.openstack.org/hostname: <svc>.<ns>.svc`, as
upstream's operators annotate one (unless the override sets it): infra-operator's Service
controller maps the Service's load-balancer address to that name in the data plane's dnsmasq,
so that EDPM nodes resolve the names their files hold to addresses they reach.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from components.settings import DNSMASQ_HOSTNAME, ServiceOverride

from . import names


@dataclass(frozen=True)
class ServiceEndpoint:
    """One Service in front of a workload's port: its name, and what the stack sets of it
    (None and empty: Kubernetes' defaults; `type` None is ClusterIP)."""

    name: str
    type: str | None = None
    labels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # added to the workload's
    annotations: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    external_traffic_policy: str | None = None
    internal_traffic_policy: str | None = None
    load_balancer_source_ranges: tuple[str, ...] = ()
    load_balancer_class: str | None = None
    session_affinity: str | None = None
    ip_family_policy: str | None = None

    @property
    def load_balancer(self) -> bool:
        return self.type == "LoadBalancer"

    @property
    def dns_hostname(self) -> str | None:
        """The name the data plane's DNS serves for the Service's address (LoadBalancer only)."""
        return self.annotations.get(DNSMASQ_HOSTNAME) if self.load_balancer else None


def _value(choice: object | None) -> str | None:
    return None if choice is None else str(choice)


def service_endpoint(name: str, namespace: str, override: ServiceOverride) -> ServiceEndpoint:
    """The Service `name` with the stack's `override`; a LoadBalancer one annotated with its name
    for the data plane's DNS, `<name>.<namespace>.svc`, unless the override names another."""
    annotations = dict(override.annotations)
    if override.load_balancer:
        annotations.setdefault(DNSMASQ_HOSTNAME, names.service_host(name, namespace))
    return ServiceEndpoint(
        name=name,
        type=_value(override.type),
        labels=MappingProxyType(dict(override.labels)),
        annotations=MappingProxyType(annotations),
        external_traffic_policy=_value(override.external_traffic_policy),
        internal_traffic_policy=_value(override.internal_traffic_policy),
        load_balancer_source_ranges=override.load_balancer_source_ranges,
        load_balancer_class=override.load_balancer_class,
        session_affinity=_value(override.session_affinity),
        ip_family_policy=_value(override.ip_family_policy),
    )


def _address_key(ip: str) -> tuple[int, int, str]:
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return (9, 0, ip)
    return (address.version, int(address), ip)


def data_plane_dns(exposed: Iterable[tuple[str, Sequence[str]]]) -> list[dict[str, object]]:
    """The data plane's DNS records of the exposed Services, from (host name, its Service's
    load-balancer addresses) pairs: one {hostnames, ip} per address, the names of every Service
    on it merged, as infra-operator's DNSData holds them; sorted by address."""
    by_ip: dict[str, set[str]] = {}
    for hostname, addresses in exposed:
        for ip in addresses:
            by_ip.setdefault(ip, set()).add(hostname)
    return [{"hostnames": sorted(by_ip[ip]), "ip": ip} for ip in sorted(by_ip, key=_address_key)]
