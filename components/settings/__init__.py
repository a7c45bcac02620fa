"""Stack settings: the stack config read once into typed, immutable objects.

`load(raw)` validates everything and raises SettingsError with every problem;
`from_pulumi_config()` (in .source, the only Pulumi-aware module) feeds it.
"""

from .catalog import OptionCatalog, catalog_from_env
from .errors import Problem, SettingsError
from .extramounts import control_plane_tags, edpm_tags, propagates
from .load import TOP_LEVEL_KEYS, load
from .model import (
    CELL0,
    CEPH_CLIENT,
    LIBVIRT,
    NOVA,
    SSH_KNOWN_HOSTS,
    Cell,
    CustomService,
    Database,
    Dataplane,
    ExtraMount,
    Images,
    Keystone,
    Kubernetes,
    KubernetesMode,
    MessageBus,
    MigrationSSHKey,
    MountedFiles,
    Node,
    NodeSet,
    NodeTemplate,
    Nova,
    RunLimits,
    ServiceConfigs,
    ServiceTemplate,
    Settings,
    VolumeMount,
)
from .secret import SecretStr

__all__ = [
    "CELL0",
    "CEPH_CLIENT",
    "LIBVIRT",
    "NOVA",
    "SSH_KNOWN_HOSTS",
    "TOP_LEVEL_KEYS",
    "Cell",
    "CustomService",
    "Database",
    "Dataplane",
    "ExtraMount",
    "Images",
    "Keystone",
    "Kubernetes",
    "KubernetesMode",
    "MessageBus",
    "MigrationSSHKey",
    "MountedFiles",
    "Node",
    "NodeSet",
    "NodeTemplate",
    "Nova",
    "OptionCatalog",
    "Problem",
    "RunLimits",
    "SecretStr",
    "ServiceConfigs",
    "ServiceTemplate",
    "Settings",
    "SettingsError",
    "VolumeMount",
    "catalog_from_env",
    "control_plane_tags",
    "edpm_tags",
    "load",
    "propagates",
]
