"""Stack settings: the stack config read once into typed, immutable objects.

`load(raw)` checks the config's shape (schema.py, pydantic models), then what
its keys mean together, and raises SettingsError with every problem;
`from_pulumi_config()` (in .source, the only Pulumi-aware module) feeds it.
The EDPM services' specs (services.py) are handed in by the caller: this
package imports nothing of components.edpm, of the components, or of Pulumi.
"""

from .catalog import SHIPPED as SHIPPED_CATALOGS
from .catalog import CatalogError, CatalogStore, OptionCatalog
from .errors import Problem, SettingsError
from .exposure import DNSMASQ_HOSTNAME, override_path
from .extramounts import control_plane_tags, edpm_tags, propagates
from .load import TOP_LEVEL_KEYS, load
from .model import (
    CELL0,
    INTERNAL,
    LIBVIRT,
    METALLB_ADDRESSES,
    METALLB_POOL,
    METALLB_SHARED_IP,
    NEUTRON_METADATA,
    NOVA,
    PUBLIC,
    AddressRange,
    Cell,
    CustomService,
    Database,
    Dataplane,
    ExtraMount,
    Images,
    Keystone,
    Kubernetes,
    KubernetesMode,
    Libvirt,
    MessageBus,
    MigrationSSHKey,
    MountedFiles,
    Node,
    NodeSet,
    NodeTemplate,
    Nova,
    Ovn,
    QueueType,
    RunLimits,
    ServiceConfigs,
    ServiceOverride,
    ServiceTemplate,
    ServiceType,
    Settings,
    TrafficPolicy,
    VolumeMount,
)
from .secret import SecretStr
from .services import MountPoint, RunsBefore, ServiceSpec, ServiceSpecs

__all__ = [
    "CELL0",
    "DNSMASQ_HOSTNAME",
    "INTERNAL",
    "LIBVIRT",
    "METALLB_ADDRESSES",
    "METALLB_POOL",
    "METALLB_SHARED_IP",
    "NEUTRON_METADATA",
    "NOVA",
    "PUBLIC",
    "SHIPPED_CATALOGS",
    "TOP_LEVEL_KEYS",
    "AddressRange",
    "CatalogError",
    "CatalogStore",
    "Cell",
    "CustomService",
    "Database",
    "Dataplane",
    "ExtraMount",
    "Images",
    "Keystone",
    "Kubernetes",
    "KubernetesMode",
    "Libvirt",
    "MessageBus",
    "MigrationSSHKey",
    "MountPoint",
    "MountedFiles",
    "Node",
    "NodeSet",
    "NodeTemplate",
    "Nova",
    "OptionCatalog",
    "Ovn",
    "Problem",
    "QueueType",
    "RunLimits",
    "RunsBefore",
    "SecretStr",
    "ServiceConfigs",
    "ServiceOverride",
    "ServiceSpec",
    "ServiceSpecs",
    "ServiceTemplate",
    "ServiceType",
    "Settings",
    "SettingsError",
    "TrafficPolicy",
    "VolumeMount",
    "control_plane_tags",
    "edpm_tags",
    "load",
    "override_path",
    "propagates",
]
