"""The stack config's shape, declared: a pydantic model per object of the
`openstack-nova:` keys of `stacks/Pulumi.<stack>.yaml`.

Keys are the camelCase names of the openstack-k8s-operators CRD fields (the
attributes here are their snake_case). What a key may hold (type, bounds,
choices, default) is declared here, and pydantic checks it with no coercion;
validation.py turns its errors into Problems. What depends on other keys,
files or nova's options is checked as load() builds the settings (model.py).
`make schema` writes these models as the JSON Schema of a stack file, which
editors complete and check against. A null value reads as absent; a default
of None is one load() derives (from the namespace, the cell's name, ...).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, WithJsonSchema, model_validator
from pydantic.alias_generators import to_camel

from .model import (
    CELL0,
    LIBVIRT_LOG_FILTERS,
    QEMU_MAX_FILES,
    QEMU_MAX_PROCESSES,
    IPFamilyPolicy,
    KubernetesMode,
    QueueType,
    RunLimits,
    ServiceType,
    SessionAffinity,
    TrafficPolicy,
)
from .releases import RELEASES

_REGISTRY = "quay.io/podified-antelope-centos9"
_TAG = "current-podified"
DEFAULT_CELL = "cell1"
MAX_REPLICAS = 32
NOT_EMPTY = r"\S"

Text = Annotated[str, StringConstraints(pattern=NOT_EMPTY)]  # to use the default, leave the key out
Port = Annotated[int, Field(ge=1, le=65535)]
# A Kubernetes volume object, as given (the program reads only its name and its sources).
Volume = Annotated[dict[str, Any], WithJsonSchema({
    "type": "object", "required": ["name"], "properties": {"name": {"type": "string"}},
    "description": "A Kubernetes volume: name and one source (secret, configMap, projected, hostPath, ...)"})]
_LIMITS = RunLimits()


def _image(name: str) -> str:
    return f"{_REGISTRY}/{name}:{_TAG}"


class Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, alias_generator=to_camel,
                              validate_by_name=False, use_attribute_docstrings=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        if data is None:
            return {}
        if isinstance(data, dict):
            return {key: value for key, value in data.items() if value is not None}
        return data


class Images(Shape):
    """The image of each service, and the nova release in them. The defaults are
    nova-operator's: upstream's podified-antelope images, whose nova is 27.5.1."""

    api: Text = _image("openstack-nova-api")
    scheduler: Text = _image("openstack-nova-scheduler")
    conductor: Text = _image("openstack-nova-conductor")
    metadata: Text = _image("openstack-nova-api")
    """nova-operator runs the metadata API from the nova-api image."""
    novncproxy: Text = _image("openstack-nova-novncproxy")
    compute: Text = _image("openstack-nova-compute")
    """nova_compute's on the nodes, unless a node's ansibleVars set edpm_nova_compute_image."""
    neutron_metadata_agent: Text = _image("openstack-neutron-metadata-agent-ovn")
    nova_release: Annotated[Text, WithJsonSchema({"type": "string", "enum": list(RELEASES)})] | None = None
    """The nova version in the images: the program renders nova's config for it and checks
    customServiceConfig against its options. Default: 27.5.1, the nova of the default images;
    required when the stack names nova images of its own."""


class Kubernetes(Shape):
    """Where the control plane goes."""

    mode: KubernetesMode = Field(KubernetesMode.CLUSTER, strict=False)
    """cluster: apply to the API server; render: only write manifests to renderDir."""
    kubeconfig: Text | None = None
    """The kubeconfig file (~ and $VARS expanded); default: the provider's."""
    context: Text | None = None
    skip_await: bool = False
    """Do not wait for rollouts and Jobs (for tests of the objects alone)."""
    render_dir: Text | None = None
    """Where render mode writes the manifests."""
    load_balancer_pools: dict[str, list[Text]] = Field(default_factory=dict)
    """The address pools of the cluster's MetalLB (its IPAddressPools) the stack's LoadBalancer Services
    may use, by name: CIDRs or first-last ranges, e.g. {internalapi: [172.17.0.80-172.17.0.90]}."""


class Keystone(Shape):
    internal_url: Text | None = Field(None, alias="internalURL")
    """Default: http://keystone-internal.<namespace>.svc:5000."""
    public_url: Text | None = Field(None, alias="publicURL")
    """Default: http://keystone-public.<namespace>.svc:5000."""
    region: Text = "regionOne"
    service_user: Text = "nova"
    password: str | None = None
    """The service user's password (a Pulumi secret)."""


class Database(Shape):
    instance: Text | None = None
    """The MariaDB Service; default: openstack, openstack-<cell> for a cell but cell0."""
    account: Text | None = None
    """Default: nova-api, nova-<cell>."""
    password: str | None = None
    """A Pulumi secret; default: generated."""


class MessageBus(Shape):
    cluster: Text | None = None
    """The RabbitMQ Service; default: rabbitmq, rabbitmq-<cell> for a cell."""
    user: Text | None = None
    """Default: nova-api, nova-notifications, nova-<cell>."""
    vhost: Text = "/"
    port: Port = 5672
    password: str | None = None
    """A Pulumi secret; default: generated."""
    queue_type: QueueType = Field(QueueType.QUORUM, strict=False)
    """The cluster's (infra-operator's RabbitMq spec.queueType): every service on the bus uses it."""


class ServiceMetadata(Shape):
    labels: dict[str, str] = Field(default_factory=dict)
    """Added to the Service's own."""
    annotations: dict[str, str] = Field(default_factory=dict)
    """E.g. MetalLB's metallb.universe.tf/address-pool, /loadBalancerIPs (comma-separated), /allow-shared-ip."""


class OverrideServiceSpec(Shape):
    """lib-common's OverrideServiceSpec: the Service's spec fields a stack may set."""

    service_type: ServiceType | None = Field(None, alias="type", strict=False)
    """Default: ClusterIP. LoadBalancer exposes the service to the data plane (MetalLB)."""
    external_traffic_policy: TrafficPolicy | None = Field(None, strict=False)
    """LoadBalancer and NodePort only; Local keeps the client's source address."""
    internal_traffic_policy: TrafficPolicy | None = Field(None, strict=False)
    load_balancer_source_ranges: list[Text] | None = None
    """CIDRs of the clients a LoadBalancer Service admits."""
    load_balancer_class: Text | None = None
    session_affinity: SessionAffinity | None = Field(None, strict=False)
    ip_family_policy: IPFamilyPolicy | None = Field(None, strict=False)


class ServiceOverride(Shape):
    """lib-common's OverrideSpec of a Service: metadata and spec."""

    metadata: ServiceMetadata = Field(default_factory=ServiceMetadata)
    spec: OverrideServiceSpec = Field(default_factory=OverrideServiceSpec)


class Override(Shape):
    service: ServiceOverride | None = None
    """The service's Service (nova-operator's override.service)."""


class APIServiceOverrides(Shape):
    internal: ServiceOverride | None = None
    """nova-internal."""
    public: ServiceOverride | None = None
    """nova-public."""


class APIOverride(Shape):
    service: APIServiceOverrides = Field(default_factory=APIServiceOverrides)
    """The API's Services by endpoint (nova-operator's override.service.internal|public)."""


class ServiceTemplate(Shape):
    replicas: Annotated[int, Field(ge=0, le=MAX_REPLICAS)] = 1
    custom_service_config: str = ""
    """oslo.config INI, checked against the options of images.novaRelease."""
    node_selector: dict[str, str] | None = None


class OptionalServiceTemplate(ServiceTemplate):
    enabled: bool | None = None
    """Default: true at the top level, false in cells (metadata); in cells but cell0 (noVNC proxy)."""
    override: Override = Field(default_factory=Override)


class APIServiceTemplate(ServiceTemplate):
    override: APIOverride = Field(default_factory=APIOverride)


class DBPurge(Shape):
    """The cell's archive of deleted rows, and purge of archived ones."""

    schedule: Text = "0 0 * * *"
    """A CronJob schedule."""
    archive_age: Annotated[int, Field(ge=1)] = 30
    """Days after deletion that rows move to the shadow tables."""
    purge_age: Annotated[int, Field(ge=1)] = 90
    """Days after deletion that archived rows are deleted."""


class Cell(Shape):
    cell_database: Database = Field(default_factory=Database)
    messaging_bus: MessageBus | None = None
    """Not for cell0, which uses the API message bus."""
    has_api_access: bool = Field(True, alias="hasAPIAccess")
    conductor_service_template: ServiceTemplate = Field(default_factory=ServiceTemplate)
    metadata_service_template: OptionalServiceTemplate = Field(default_factory=OptionalServiceTemplate)
    no_vnc_proxy_service_template: OptionalServiceTemplate = Field(
        default_factory=OptionalServiceTemplate, alias="noVNCProxyServiceTemplate")
    db_purge: DBPurge = Field(default_factory=DBPurge)


class Nova(Shape):
    keystone: Keystone = Field(default_factory=Keystone)
    api_database: Database = Field(default_factory=Database)
    messaging_bus: MessageBus = Field(default_factory=MessageBus)
    notifications_bus: MessageBus | None = None
    """Default: none, notifications go to the noop driver."""
    api_timeout: Annotated[int, Field(ge=10)] = 60
    memcached_instance: Text = "memcached"
    """The memcached Service the control plane caches in."""
    metadata_shared_secret: str | None = None
    """A Pulumi secret; default: generated."""
    api_service_template: APIServiceTemplate = Field(default_factory=APIServiceTemplate)
    scheduler_service_template: ServiceTemplate = Field(default_factory=ServiceTemplate)
    metadata_service_template: OptionalServiceTemplate = Field(default_factory=OptionalServiceTemplate)
    cell_templates: dict[str, Cell] = Field(default_factory=lambda: {CELL0: Cell(), DEFAULT_CELL: Cell()})
    """The cells by name, cell0 among them; default: cell0 and cell1."""


class ServiceConfigs(Shape):
    """customServiceConfig of the EDPM services (oslo.config INI); a node's win over its node set's."""

    nova: str = ""
    neutron_metadata: str = Field("", alias="neutron-metadata")


class Timeouts(Shape):
    """Seconds an Ansible run on a node may take."""

    connect: Annotated[int, Field(ge=1, le=3600)] = _LIMITS.connect
    task: Annotated[int, Field(ge=1)] = _LIMITS.task
    run: Annotated[int, Field(ge=10)] = _LIMITS.run
    lock: Annotated[int, Field(ge=0)] = _LIMITS.lock
    """How long a run waits for another run on the same node to end (0: not at all)."""


class NodeTemplate(Shape):
    ansible_user: Text = "root"
    ansible_port: Port = 22
    ansible_vars: dict[str, Any] = Field(default_factory=dict)
    ansible_ssh_private_key: str | None = Field(None, alias="ansibleSSHPrivateKey")
    """A Pulumi secret; or set ansibleSSHPrivateKeyFile."""
    ansible_ssh_private_key_file: Text | None = Field(None, alias="ansibleSSHPrivateKeyFile")
    """A path (~ and $VARS expanded)."""
    known_hosts_file: Text | None = None
    """A known_hosts file with each node's host key (~ and $VARS expanded); required with nodes."""
    timeouts: Timeouts = Field(default_factory=Timeouts)


class Node(Shape):
    model_config = ConfigDict(json_schema_extra={"required": ["ansibleHost"]})

    ansible_host: Text | None = None
    """The IP address or name Ansible connects to."""
    host_name: Text | None = None
    """Default: the node's name."""
    cell: Text | None = None
    """Default: its node set's."""
    ansible_vars: dict[str, Any] = Field(default_factory=dict)
    custom_service_config: ServiceConfigs = Field(default_factory=ServiceConfigs)


class NodeSet(Shape):
    cell: Text = DEFAULT_CELL
    node_template: NodeTemplate = Field(default_factory=NodeTemplate)
    nodes: dict[str, Node] = Field(default_factory=dict)
    services: list[str] | None = None
    """Run in this order; default: upstream's list of the built-in services."""
    custom_service_config: ServiceConfigs = Field(default_factory=ServiceConfigs)
    tls_enabled: bool = False
    """libvirt's TLS: certificates, the TLS listener, nova migrating over qemu+tls."""
    qemu_max_processes: int = Field(QEMU_MAX_PROCESSES, ge=0)
    """qemu.conf's max_processes: the process limit (RLIMIT_NPROC) libvirt sets on each guest's QEMU;
    0 leaves the one QEMU inherits. Above the node's hard limit libvirt needs CAP_SYS_RESOURCE."""
    qemu_max_files: int = Field(QEMU_MAX_FILES, ge=0)
    """qemu.conf's max_files: the open-files limit (RLIMIT_NOFILE) libvirt sets on each guest's QEMU;
    0 leaves the one QEMU inherits. Above the node's hard limit libvirt needs CAP_SYS_RESOURCE."""
    libvirt_log_filters: Text = LIBVIRT_LOG_FILTERS
    """log_filters of libvirt's daemons virtqemud, virtproxyd, virtnodedevd and virtsecretd: `<level>:<module>`
    separated by spaces, level 1 (debug) to 4 (error); e.g. "1:qemu 1:libvirt 4:object 4:json 4:event 1:util"
    while debugging a guest."""


class CustomService(Shape):
    model_config = ConfigDict(json_schema_extra={"required": ["playbook"]})

    playbook: Text | None = None
    """A playbook file under ansible/playbooks/."""
    files: dict[str, str] = Field(default_factory=dict)


class MigrationSSHKey(Shape):
    """The key pair computes migrate with (both or neither); default: generated."""

    private_key: str | None = None
    """A Pulumi secret."""
    public_key: Text | None = None


class Libvirt(Shape):
    password: str | None = None
    """The SASL password of libvirt's migration user (a Pulumi secret); default: generated."""


class Ovn(Shape):
    sb_connection: Text | None = None
    """The OVN southbound database of the neutron metadata agents, e.g. tcp:10.0.0.5:6642."""


class Dataplane(Shape):
    node_sets: dict[str, NodeSet] = Field(default_factory=dict)
    custom_services: dict[str, CustomService] = Field(default_factory=dict)
    migration_ssh_key: MigrationSSHKey | None = Field(None, alias="migrationSSHKey")
    ovn: Ovn = Field(default_factory=Ovn)
    libvirt: Libvirt = Field(default_factory=Libvirt)


class VolumeMount(Shape):
    model_config = ConfigDict(json_schema_extra={"required": ["name", "mountPath"]})

    name: Text | None = None
    """The name of a volume of this entry."""
    mount_path: Text | None = None
    """An absolute path in the container."""
    read_only: bool = False
    sub_path: Text | None = None


class ExtraMount(Shape):
    propagation: list[str] | None = None
    """Where it goes (lib-common's service types): All, Nova, NovaAPI, ..., a cell, Compute, a node set."""
    volumes: list[Volume] = Field(default_factory=list)
    mounts: list[VolumeMount] = Field(default_factory=list)


class StackConfig(Shape):
    """The openstack-nova: keys of a stack's config."""

    namespace: Text = "openstack"
    images: Images = Field(default_factory=Images)
    kubernetes: Kubernetes = Field(default_factory=Kubernetes)
    nova: Nova = Field(default_factory=Nova)
    dataplane: Dataplane = Field(default_factory=Dataplane)
    extra_mounts: list[ExtraMount] = Field(default_factory=list)
