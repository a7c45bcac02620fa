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
from .extramounts import control_plane_tags, edpm_tags, propagates
from .load import TOP_LEVEL_KEYS, load
from .model import (
    CELL0,
    LIBVIRT,
    NEUTRON_METADATA,
    NOVA,
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
    ServiceTemplate,
    Settings,
    VolumeMount,
)
from .secret import SecretStr
from .services import MountPoint, RunsBefore, ServiceSpec, ServiceSpecs

__all__ = [
    "CELL0",
    "LIBVIRT",
    "NEUTRON_METADATA",
    "NOVA",
    "SHIPPED_CATALOGS",
    "TOP_LEVEL_KEYS",
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
    "ServiceSpec",
    "ServiceSpecs",
    "ServiceTemplate",
    "Settings",
    "SettingsError",
    "VolumeMount",
    "control_plane_tags",
    "edpm_tags",
    "load",
    "propagates",
]
