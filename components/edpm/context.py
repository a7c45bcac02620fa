"""What the services draw on: the stack's (`StackContext`, once per stack) and a node set's."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import k8s as kube
from components.mountedfiles import NodeSetFiles
from components.settings import Node, NodeSet, Settings


@dataclass(frozen=True)
class ControlPlaneFiles:
    """What the control plane hands to the data plane (all secret)."""

    compute_configs: Mapping[str, pulumi.Output[dict[str, str]]]  # per cell
    metadata_configs: Mapping[str | None, pulumi.Output[dict[str, str]]]  # None: the top-level metadata


@dataclass(frozen=True)
class StackContext:
    """What a service's stack part is made from: the stack's settings, the control plane's files,
    and where its Kubernetes objects go (the stack's provider, after its namespace)."""

    settings: Settings
    control_plane: ControlPlaneFiles
    provider: k8s.Provider | None = None  # None: the default provider
    namespace: pulumi.Resource | None = None  # None: made elsewhere

    @property
    def target(self) -> kube.Target:
        """Where the stack parts' Kubernetes objects go."""
        return kube.Target(self.settings.namespace, self.settings.kubernetes.skip_await)

    def in_namespace(self) -> pulumi.ResourceOptions:
        """Options of a stack part's Kubernetes objects: the stack's provider, after its namespace."""
        return pulumi.ResourceOptions(providers=[self.provider] if self.provider else None,
                                      depends_on=[self.namespace] if self.namespace else None)


class NodeSetContext:
    """What a service's run on a node of one node set draws on."""

    def __init__(self, node_set: NodeSet, stack: Any, mounted: NodeSetFiles) -> None:
        self.node_set = node_set
        self.stack = stack  # the service's stack part
        self.mounted = mounted  # the files its extraMounts give its services

    def secret_file_names(self, node: Node, variable: str) -> list[str]:
        """The node's ansibleVars' list of secret file names `variable` (its node set's, unless its own)."""
        return list({**self.node_set.node_template.ansible_vars, **node.ansible_vars}.get(variable) or [])


def with_secret_files(given: list[str], variable: str, names: list[str]) -> dict[str, Any]:
    """The role's list of secret file names `variable`: `given` with `names` added (nothing when none)."""
    if not names:
        return {}
    return {variable: sorted({*given, *names})}
