"""The Services the stack exposes: each service template's `override.service` (lib-common's
OverrideSpec, as nova-operator takes it) and `kubernetes.loadBalancerPools`, the address pools of
the cluster's MetalLB. What Kubernetes or MetalLB would refuse, or silently leave unassigned, is a
problem at preview: a malformed address or range, a field of a LoadBalancer Service on another
type, an address outside its pools, two Services on one address MetalLB will not share."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from . import schema
from .checks import hostname_problem
from .errors import Context, Path, format_path
from .model import (
    API_PORT,
    INTERNAL,
    METADATA_PORT,
    METALLB_ADDRESSES,
    METALLB_POOL,
    METALLB_SHARED_IP,
    NOVNCPROXY_PORT,
    PUBLIC,
    AddressRange,
    Nova,
    ServiceOverride,
    ServiceType,
    TrafficPolicy,
)

POOLS_PATH: Path = ("kubernetes", "loadBalancerPools")
_METALLB = (METALLB_ADDRESSES, METALLB_POOL, METALLB_SHARED_IP)
# The dnsmasq of the data plane serves this annotation's name (infra-operator); checked as a host name.
DNSMASQ_HOSTNAME = "dnsmasq.network.openstack.org/hostname"
_EXTERNAL = (ServiceType.LOAD_BALANCER, ServiceType.NODE_PORT)


def override_path(cell: str | None, template: str, endpoint: str | None = None) -> Path:
    """The config path of a template's override.service: `template` is its key (apiServiceTemplate,
    metadataServiceTemplate, noVNCProxyServiceTemplate); `endpoint` the API's internal or public."""
    base: Path = ("nova",) if cell is None else ("nova", "cellTemplates", cell)
    return (*base, template, "override", "service", *((endpoint,) if endpoint else ()))


def parse_range(text: str) -> AddressRange | str:
    """A pool's CIDR or `first-last` range, or why it is neither."""
    try:
        if "/" in text:
            network = ipaddress.ip_network(text.strip(), strict=False)
            return AddressRange(text, network.network_address, network.broadcast_address)
        first, sep, last = (part.strip() for part in text.partition("-"))
        if sep:
            low, high = ipaddress.ip_address(first), ipaddress.ip_address(last)
            if low.version != high.version or int(low) > int(high):
                return f"'{text}' is no range: its first address must be of the last's IP version and not above it"
            return AddressRange(text, low, high)
    except ValueError:
        pass
    return f"'{text}' is neither a CIDR (172.17.0.80/28) nor a range of addresses (172.17.0.80-172.17.0.90)"


def parse_pools(ctx: Context, given: Mapping[str, list[str]]) -> Mapping[str, tuple[AddressRange, ...]]:
    pools: dict[str, tuple[AddressRange, ...]] = {}
    for name, entries in given.items():
        problem = hostname_problem(name)
        if problem:
            ctx.problem((*POOLS_PATH, name), f"pool name {problem}: the name of the cluster's MetalLB IPAddressPool")
        if not entries:
            ctx.problem((*POOLS_PATH, name), "lists no addresses; give the pool's CIDRs or first-last ranges")
        ranges = []
        for index, entry in enumerate(entries):
            parsed = parse_range(entry)
            if isinstance(parsed, str):
                ctx.problem((*POOLS_PATH, name, index), parsed)
            else:
                ranges.append(parsed)
        pools[name] = tuple(ranges)
    return MappingProxyType(pools)


def parse_override(ctx: Context, path: Path, given: schema.ServiceOverride | None) -> ServiceOverride | None:
    """override.service at `path`, with what Kubernetes and MetalLB make of its fields checked."""
    if given is None:
        return None
    spec, annotations = given.spec, given.metadata.annotations
    kind = spec.service_type
    notes: Path = (*path, "metadata", "annotations")
    spec_path: Path = (*path, "spec")
    lb_only = "takes effect on a LoadBalancer Service only; set spec.type: LoadBalancer or remove it"
    for key in _METALLB:
        if key in annotations and kind is not ServiceType.LOAD_BALANCER:
            ctx.problem((*notes, key), f"MetalLB's annotation {lb_only}")
    if METALLB_ADDRESSES in annotations:
        _check_addresses(ctx, (*notes, METALLB_ADDRESSES), annotations[METALLB_ADDRESSES])
    if DNSMASQ_HOSTNAME in annotations:
        problem = hostname_problem(annotations[DNSMASQ_HOSTNAME])
        if problem:
            ctx.problem((*notes, DNSMASQ_HOSTNAME), f"{problem}: the name the data plane's DNS serves")
    if spec.external_traffic_policy is not None and kind not in _EXTERNAL:
        ctx.problem((*spec_path, "externalTrafficPolicy"),
                    f"applies to LoadBalancer and NodePort Services only, and spec.type is {kind or 'ClusterIP'}; "
                    "set spec.type or remove it")
    ranges = spec.load_balancer_source_ranges or []
    for key, value in (("loadBalancerSourceRanges", ranges), ("loadBalancerClass", spec.load_balancer_class)):
        if value and kind is not ServiceType.LOAD_BALANCER:
            ctx.problem((*spec_path, key), lb_only)
    for index, cidr in enumerate(ranges):
        try:
            ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            ctx.problem((*spec_path, "loadBalancerSourceRanges", index),
                        f"'{cidr}' is not a CIDR of clients, e.g. 192.168.122.0/24")
    return ServiceOverride(
        labels=MappingProxyType(dict(given.metadata.labels)),
        annotations=MappingProxyType(dict(annotations)),
        type=kind,
        external_traffic_policy=spec.external_traffic_policy,
        internal_traffic_policy=spec.internal_traffic_policy,
        load_balancer_source_ranges=tuple(ranges),
        load_balancer_class=spec.load_balancer_class,
        session_affinity=spec.session_affinity,
        ip_family_policy=spec.ip_family_policy,
    )


def _check_addresses(ctx: Context, path: Path, value: str) -> None:
    versions: list[int] = []
    for text in value.split(","):
        try:
            versions.append(ipaddress.ip_address(text.strip()).version)
        except ValueError:
            ctx.problem(path, f"'{text.strip()}' is not an IP address; give addresses separated by commas, "
                              "e.g. 172.17.0.80")
    if len(versions) != len(set(versions)):
        ctx.problem(path, "names two addresses of one IP version; a Service gets one IPv4 and one IPv6 address "
                          "at most")


@dataclass(frozen=True)
class _Exposed:
    path: Path  # its override.service
    override: ServiceOverride
    port: int


def _services(nova: Nova) -> Iterator[_Exposed]:
    """The Services the stack makes, each with its template's override (none: the defaults)."""
    for endpoint in (INTERNAL, PUBLIC):
        yield _Exposed(override_path(None, "apiServiceTemplate", endpoint), nova.api.service(endpoint), API_PORT)
    if nova.metadata.enabled:
        yield _Exposed(override_path(None, "metadataServiceTemplate"), nova.metadata.service(INTERNAL),
                       METADATA_PORT)
    for cell in nova.cells:
        if cell.metadata.enabled:
            yield _Exposed(override_path(cell.name, "metadataServiceTemplate"), cell.metadata.service(INTERNAL),
                           METADATA_PORT)
        if cell.novncproxy.enabled:
            yield _Exposed(override_path(cell.name, "noVNCProxyServiceTemplate"), cell.novncproxy.service(PUBLIC),
                           NOVNCPROXY_PORT)


def _ranges(ranges: tuple[AddressRange, ...]) -> str:
    return ", ".join(r.text for r in ranges)


def check_exposure(ctx: Context, nova: Nova, pools: Mapping[str, tuple[AddressRange, ...]]) -> None:
    """Each LoadBalancer Service's pool and addresses against kubernetes.loadBalancerPools, and
    MetalLB's rule for Services of one address."""
    declared = (f"kubernetes.loadBalancerPools declares {', '.join(sorted(pools))}" if pools else
                "kubernetes.loadBalancerPools declares no pool")
    services = [s for s in _services(nova) if s.override.load_balancer]
    for service in services:
        notes = (*service.path, "metadata", "annotations")
        pool = service.override.pool
        if pool is not None and pool not in pools:
            ctx.problem((*notes, METALLB_POOL),
                        f"names pool '{pool}', and {declared}; name one of them, or declare the cluster's "
                        f"MetalLB IPAddressPool '{pool}' there")
        for address in service.override.addresses:
            if pool is not None and pool in pools:
                if not any(address in r for r in pools[pool]):
                    ctx.problem((*notes, METALLB_ADDRESSES),
                                f"{address} is not in pool {pool} ({_ranges(pools[pool])}), which "
                                f"{METALLB_POOL} names; MetalLB would leave the Service without an address: "
                                "pick one of the pool")
            elif pool is None and not any(address in r for ranges in pools.values() for r in ranges):
                ctx.problem((*notes, METALLB_ADDRESSES),
                            f"{address} is in no pool: {declared}; MetalLB would leave the Service without an "
                            "address: pick one of a pool, or declare the cluster's pool that holds it")
    _check_shared(ctx, services)


def _check_shared(ctx: Context, services: list[_Exposed]) -> None:
    """MetalLB gives one address to several Services only when each carries the same
    allow-shared-ip key, they listen on distinct ports, and their externalTrafficPolicy is Cluster
    (Local ones must select the same pods: this stack's Services of one port)."""
    owners: dict[ipaddress.IPv4Address | ipaddress.IPv6Address, list[_Exposed]] = {}
    for service in services:
        for address in service.override.addresses:
            earlier = owners.setdefault(address, [])
            for first in earlier:
                why = _not_shared(first, service)
                if why:
                    where = format_path(first.path, project=False)
                    ctx.problem((*service.path, "metadata", "annotations", METALLB_ADDRESSES),
                                f"{address} is also the address of {where}, and {why}; MetalLB shares an address "
                                f"only between Services with one {METALLB_SHARED_IP} key, distinct ports and "
                                "externalTrafficPolicy Cluster: give each its own address or meet all three")
                    break
            earlier.append(service)


def _not_shared(first: _Exposed, other: _Exposed) -> str:
    keys = (first.override.shared_ip_key, other.override.shared_ip_key)
    if None in keys:
        return f"{'neither carries' if keys == (None, None) else 'only one carries'} {METALLB_SHARED_IP}"
    if keys[0] != keys[1]:
        return f"their {METALLB_SHARED_IP} keys differ ({keys[0]}, {keys[1]})"
    if first.port == other.port:
        return f"both listen on port {first.port}"
    local = TrafficPolicy.LOCAL
    if local in (first.override.external_traffic_policy, other.override.external_traffic_policy):
        return "externalTrafficPolicy Local keeps an address to the Services that select the same pods"
    return ""
