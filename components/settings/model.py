"""The typed, immutable settings of one stack (what `load()` returns).

Field names are snake_case; the stack config keys they come from are the
camelCase names of the openstack-k8s-operators CRDs.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from .releases import NovaRelease
from .secret import SecretStr

CELL0 = "cell0"

# The built-in EDPM services whose stack config keys the settings read (customServiceConfig.nova
# and .neutron-metadata, dataplane.ovn, tlsEnabled). What each service is, and every built-in
# service, is in components/edpm/services/.
NEUTRON_METADATA = "neutron-metadata"
LIBVIRT = "libvirt"
# upstream's qemu.conf max_processes (and TripleO's QemuMaxProcesses default)
QEMU_MAX_PROCESSES = 131072
QEMU_MAX_FILES = 32768
# log_filters of libvirt's daemons: warnings and errors only (libvirt's debug level, 1, fills a
# node's disk); virtlogd names its own module, `logging`
LIBVIRT_LOG_FILTERS = "3:qemu 3:libvirt 4:object 4:json 4:event 3:util"
VIRTLOGD_LOG_FILTERS = "3:logging 4:object 4:json 4:event 3:util"
NOVA = "nova"
# The ports of nova's Services, as nova-operator's: the settings check MetalLB's rule for Services
# sharing an address with them (distinct ports only), render/names.py names them.
API_PORT = 8774
METADATA_PORT = 8775
NOVNCPROXY_PORT = 6080
# MetalLB's annotations of a LoadBalancer Service (lib-common names them too): its addresses
# (comma-separated, one per IP family), the pool they come from, the key of the Services it may share them with
METALLB_ADDRESSES = "metallb.universe.tf/loadBalancerIPs"
METALLB_POOL = "metallb.universe.tf/address-pool"
METALLB_SHARED_IP = "metallb.universe.tf/allow-shared-ip"
# A service template's Services, by endpoint (nova-operator's service.Endpoint): the API has both,
# metadata an internal one, the noVNC proxy a public one.
INTERNAL = "internal"
PUBLIC = "public"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class Images:
    api: str
    scheduler: str
    conductor: str
    metadata: str
    novncproxy: str
    compute: str
    neutron_metadata_agent: str
    # the nova in these images: what the program renders for, and the option catalog that
    # checks customServiceConfig
    release: NovaRelease


class KubernetesMode(StrEnum):
    CLUSTER = "cluster"  # apply to a live API server
    RENDER = "render"  # only write manifests to render_dir


@dataclass(frozen=True)
class AddressRange:
    """Addresses of a MetalLB pool: a CIDR or a `first-last` range, as its IPAddressPool lists them."""

    text: str  # as given
    first: IPAddress
    last: IPAddress

    def __contains__(self, address: IPAddress) -> bool:
        return address.version == self.first.version and int(self.first) <= int(address) <= int(self.last)


@dataclass(frozen=True)
class Kubernetes:
    mode: KubernetesMode
    kubeconfig: str | None
    context: str | None
    skip_await: bool
    render_dir: str | None
    # the address pools of the cluster's MetalLB (its IPAddressPools) a Service of the stack may use
    load_balancer_pools: Mapping[str, tuple[AddressRange, ...]] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class Keystone:
    internal_url: str
    public_url: str
    region: str
    service_user: str
    password: SecretStr | None


@dataclass(frozen=True)
class Database:
    instance: str  # the MariaDB Service name, e.g. "openstack-cell1"
    account: str
    password: SecretStr | None  # None: the components generate one


class QueueType(StrEnum):
    """The queue type of a RabbitMQ cluster (infra-operator's RabbitMq `spec.queueType`).

    Only Quorum changes what nova renders; Mirrored is a policy on the broker's side.
    """

    NONE = "None"
    MIRRORED = "Mirrored"
    QUORUM = "Quorum"


@dataclass(frozen=True)
class MessageBus:
    cluster: str  # the RabbitMQ Service name, e.g. "rabbitmq-cell1"
    user: str
    vhost: str
    port: int
    password: SecretStr | None
    queue_type: QueueType = QueueType.QUORUM

    @property
    def quorum_queues(self) -> bool:
        """Whether nova's queues on this bus are quorum queues."""
        return self.queue_type is QueueType.QUORUM

    @property
    def identity(self) -> tuple[str, str]:
        """Two buses are the same bus when cluster and vhost match."""
        return (self.cluster, self.vhost)


class ServiceType(StrEnum):
    CLUSTER_IP = "ClusterIP"
    LOAD_BALANCER = "LoadBalancer"
    NODE_PORT = "NodePort"


class TrafficPolicy(StrEnum):
    CLUSTER = "Cluster"
    LOCAL = "Local"


class SessionAffinity(StrEnum):
    NONE = "None"
    CLIENT_IP = "ClientIP"


class IPFamilyPolicy(StrEnum):
    SINGLE_STACK = "SingleStack"
    PREFER_DUAL_STACK = "PreferDualStack"
    REQUIRE_DUAL_STACK = "RequireDualStack"


def _empty() -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True)
class ServiceOverride:
    """What the stack sets of one Service (lib-common's OverrideSpec, a template's override.service):
    added labels and annotations, and spec fields; None leaves Kubernetes' default."""

    labels: Mapping[str, str] = field(default_factory=_empty)
    annotations: Mapping[str, str] = field(default_factory=_empty)
    type: ServiceType | None = None  # None: ClusterIP
    external_traffic_policy: TrafficPolicy | None = None
    internal_traffic_policy: TrafficPolicy | None = None
    load_balancer_source_ranges: tuple[str, ...] = ()
    load_balancer_class: str | None = None
    session_affinity: SessionAffinity | None = None
    ip_family_policy: IPFamilyPolicy | None = None

    @property
    def load_balancer(self) -> bool:
        return self.type is ServiceType.LOAD_BALANCER

    @property
    def addresses(self) -> tuple[IPAddress, ...]:
        """The fixed addresses MetalLB's annotation asks for (the settings checked each)."""
        found = []
        for text in self.annotations.get(METALLB_ADDRESSES, "").split(","):
            try:
                found.append(ipaddress.ip_address(text.strip()))
            except ValueError:
                continue
        return tuple(found)

    @property
    def pool(self) -> str | None:
        return self.annotations.get(METALLB_POOL)

    @property
    def shared_ip_key(self) -> str | None:
        return self.annotations.get(METALLB_SHARED_IP)


@dataclass(frozen=True)
class ServiceTemplate:
    replicas: int
    custom_service_config: str
    node_selector: Mapping[str, str] | None
    enabled: bool = True  # only metadata and noVNC proxy templates can be disabled
    # override.service by endpoint (INTERNAL, PUBLIC); only the templates of services with Services have one
    service_overrides: Mapping[str, ServiceOverride] = field(default_factory=lambda: MappingProxyType({}))

    def service(self, endpoint: str) -> ServiceOverride:
        """What the stack sets of the template's Service for `endpoint` (nothing by default)."""
        return self.service_overrides.get(endpoint) or ServiceOverride()


@dataclass(frozen=True)
class DBPurge:
    """The cell's periodic archive of deleted rows, and purge of archived ones."""

    schedule: str  # a Kubernetes CronJob schedule
    archive_age: int  # days after deletion that rows move to the shadow tables
    purge_age: int  # days after deletion that archived rows are deleted


@dataclass(frozen=True)
class Cell:
    name: str
    database: Database
    messaging_bus: MessageBus
    has_api_access: bool
    conductor: ServiceTemplate
    metadata: ServiceTemplate
    novncproxy: ServiceTemplate
    db_purge: DBPurge

    @property
    def is_cell0(self) -> bool:
        return self.name == CELL0


@dataclass(frozen=True)
class Nova:
    keystone: Keystone
    api_database: Database
    messaging_bus: MessageBus
    notifications_bus: MessageBus | None  # None: notifications go to the noop driver
    api_timeout: int
    memcached_instance: str  # the memcached Service the control plane caches in
    metadata_shared_secret: SecretStr | None
    api: ServiceTemplate
    scheduler: ServiceTemplate
    metadata: ServiceTemplate
    cells: tuple[Cell, ...]  # cell0 first, then by name

    def cell(self, name: str) -> Cell:
        for cell in self.cells:
            if cell.name == name:
                return cell
        raise KeyError(name)

    @property
    def cells_with_metadata(self) -> tuple[Cell, ...]:
        return tuple(c for c in self.cells if c.metadata.enabled)


@dataclass(frozen=True)
class ServiceConfigs:
    """customServiceConfig per EDPM service; "" when unset."""

    nova: str = ""
    neutron_metadata: str = ""
    # The snippet sets a secret option: it reaches nodes as a secret file.
    nova_secret: bool = False
    neutron_metadata_secret: bool = False


@dataclass(frozen=True)
class RunLimits:
    """Seconds an Ansible run on a node may take: to connect, per task, in all; and how
    long it waits for another run on the same node to end (0: not at all)."""

    connect: int = 30
    task: int = 600
    run: int = 1800
    lock: int = 600


@dataclass(frozen=True)
class NodeTemplate:
    ansible_user: str
    ansible_port: int
    ansible_vars: Mapping[str, Any]
    ssh_private_key: SecretStr | None  # exactly one of key and key file is set
    ssh_private_key_file: str | None  # expanded, absolute
    known_hosts_file: str | None
    known_hosts: str  # the file's text: the host keys the node set trusts
    timeouts: RunLimits


@dataclass(frozen=True)
class Node:
    name: str
    host_name: str
    ansible_host: str
    cell: str  # resolved: the node's own cell or its node set's
    ansible_vars: Mapping[str, Any]
    # The node's own snippets; layered after the node set's (node wins per option).
    custom_service_config: ServiceConfigs
    host_keys: tuple[str, ...] = ()  # "<type> <base64>", from the node set's knownHostsFile


@dataclass(frozen=True)
class MountedFiles:
    """Files of one Secret or ConfigMap of the stack's namespace that an
    extraMounts entry gives one service of a node set."""

    service: str  # the service whose extraMounts path it is mounted at (e.g. ceph-client, nova)
    kind: str  # "Secret" or "ConfigMap"
    name: str
    files: Mapping[str, str] | None  # file name on the node -> key; None: every key, under its own name
    origin: tuple[str | int, ...]  # the mount's config path, e.g. ("extraMounts", 0, "mounts", 0)

    @property
    def secret(self) -> bool:
        return self.kind == "Secret"


@dataclass(frozen=True)
class NodeSet:
    name: str
    cell: str
    node_template: NodeTemplate
    nodes: tuple[Node, ...]  # sorted by name
    services: tuple[str, ...]  # in the order given: they run in this order
    custom_service_config: ServiceConfigs
    services_listed: bool = True  # False: `services` is the default list
    mounted_files: tuple[MountedFiles, ...] = ()  # what extraMounts give its services
    # libvirt's TLS (upstream's tlsEnabled): certificates of the stack's libvirt CA, the
    # TLS listener with SASL, nova migrating over qemu+tls
    tls_enabled: bool = False
    # qemu.conf's max_processes and max_files (0: libvirt leaves QEMU's inherited limit)
    qemu_max_processes: int = QEMU_MAX_PROCESSES
    qemu_max_files: int = QEMU_MAX_FILES
    # log_filters of libvirt's modular daemons but virtlogd
    libvirt_log_filters: str = LIBVIRT_LOG_FILTERS

    def mounted_for(self, service: str) -> tuple[MountedFiles, ...]:
        return tuple(m for m in self.mounted_files if m.service == service)

    @property
    def cells(self) -> tuple[str, ...]:
        return tuple(sorted({n.cell for n in self.nodes}))


@dataclass(frozen=True)
class CustomService:
    name: str
    playbook: str  # relative to ansible/playbooks/
    files: Mapping[str, str]


@dataclass(frozen=True)
class MigrationSSHKey:
    """The key pair computes use to reach each other for live migration."""

    private_key: SecretStr
    public_key: str


@dataclass(frozen=True)
class Libvirt:
    """What every compute's libvirt shares."""

    # The SASL password of the migration user (upstream: Secret libvirt-secret,
    # key LibvirtPassword); None: the components generate one.
    password: SecretStr | None = None


@dataclass(frozen=True)
class Ovn:
    """The OVN databases the data plane's agents use; OVN itself is a neighbour's."""

    sb_connection: str  # ovsdb connection string(s), e.g. "tcp:10.0.0.5:6642,tcp:10.0.0.6:6642"


@dataclass(frozen=True)
class Dataplane:
    node_sets: tuple[NodeSet, ...]  # sorted by name
    custom_services: Mapping[str, CustomService]
    migration_ssh_key: MigrationSSHKey | None  # None: the components generate one
    ovn: Ovn | None = None  # required when a node set runs neutron-metadata
    libvirt: Libvirt = Libvirt()
    # the `dataplane` keys the settings do not read themselves, by key, as the schema checked them:
    # each is a service's own, which its module reads (components/edpm/services/)
    service_configs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def nodes(self) -> tuple[Node, ...]:
        return tuple(n for s in self.node_sets for n in s.nodes)

    @property
    def tls_nodes(self) -> tuple[tuple[NodeSet, Node], ...]:
        """The nodes whose libvirt uses TLS, with their node set."""
        return tuple((s, n) for s in self.node_sets if s.tls_enabled and LIBVIRT in s.services for n in s.nodes)


@dataclass(frozen=True)
class VolumeMount:
    name: str
    mount_path: str
    read_only: bool
    sub_path: str | None
    path: tuple[str | int, ...] = ()  # where in the stack config, for messages


@dataclass(frozen=True)
class ExtraMount:
    propagation: tuple[str, ...] | None  # None: everywhere
    volumes: tuple[Mapping[str, Any], ...]  # Kubernetes volume objects, as given
    mounts: tuple[VolumeMount, ...]
    volume_paths: tuple[tuple[str | int, ...], ...] = ()  # each volume's config path, for messages


@dataclass(frozen=True)
class Settings:
    namespace: str
    images: Images
    kubernetes: Kubernetes
    nova: Nova
    dataplane: Dataplane
    extra_mounts: tuple[ExtraMount, ...]
