"""What the services' runs draw on: the stack's inputs, and those of one node set."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

import pulumi

from components.settings import Node, NodeSet

if TYPE_CHECKING:
    from components.libvirt import LibvirtFiles
    from components.mountedfiles import NodeSetFiles

    from .services.neutron_metadata import NeutronMetadataAgent

T = TypeVar("T")


@dataclass(frozen=True)
class ControlPlaneFiles:
    """What the control plane hands to the data plane (all secret)."""

    compute_configs: Mapping[str, pulumi.Output[dict[str, str]]]  # per cell
    metadata_configs: Mapping[str | None, pulumi.Output[dict[str, str]]]  # None: the top-level metadata
    migration_private_key: pulumi.Output[str]
    migration_public_key: pulumi.Output[str]


@dataclass(frozen=True)
class StackInputs:
    """What the services get from the whole stack, the same for every node set."""

    control_plane: ControlPlaneFiles
    known_hosts_block: str  # the host keys of every node of the stack
    neutron_metadata: NeutronMetadataAgent
    compute_image: str  # images.compute, unless a node's ansibleVars name another
    libvirt: LibvirtFiles


class NodeSetContext:
    """What a service's run on a node of one node set draws on."""

    def __init__(self, node_set: NodeSet, stack: StackInputs, mounted: NodeSetFiles) -> None:
        self.node_set = node_set
        self.stack = stack
        self.mounted = mounted  # the files its extraMounts give its services
        self._once: dict[Hashable, Any] = {}

    def once(self, key: Hashable, make: Callable[[], T]) -> T:
        """`make()`, made once per node set and `key`: e.g. one Output per cell, not one per node
        (each Output costs the program a little)."""
        if key not in self._once:
            self._once[key] = make()
        return cast(T, self._once[key])

    def secret_file_vars(self, node: Node, variable: str, names: list[str]) -> dict[str, Any]:
        """The role's list of secret file names `variable`, with `names` added (nothing when none)."""
        if not names:
            return {}
        given = {**self.node_set.node_template.ansible_vars, **node.ansible_vars}.get(variable) or []
        return {variable: sorted({*given, *names})}
