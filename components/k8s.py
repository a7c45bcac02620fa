"""Kubernetes plumbing shared by the components: provider, labels, annotations."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.settings.model import Kubernetes, KubernetesMode

CONFIG_HASH_ANNOTATION = "nova.openstack.org/config-hash"
CELLS_HASH_ANNOTATION = "nova.openstack.org/registered-cells-hash"


@dataclass(frozen=True)
class Target:
    """Where a component's Kubernetes objects go: the stack's namespace, and whether Pulumi
    waits for them to be ready (kubernetes.skipAwait)."""

    namespace: str
    skip_await: bool = False

    def meta(self, name: str, labels: Mapping[str, str]) -> k8s.meta.v1.ObjectMetaArgs:
        return object_meta(name, self.namespace, labels, self.skip_await)


def provider(name: str, settings: Kubernetes) -> k8s.Provider:
    """The provider every Kubernetes object of the stack is created with."""
    # Config Secrets keep their names (as upstream's do) and change in place;
    # the pods that mount them roll through their pod template's config hash.
    if settings.mode is KubernetesMode.RENDER:
        # No cluster: an empty kubeconfig, or the SDK would take $KUBECONFIG, which the
        # provider refuses next to a render directory.
        return k8s.Provider(name, enable_secret_mutable=True, render_yaml_to_directory=settings.render_dir,
                            kubeconfig="")
    return k8s.Provider(name, enable_secret_mutable=True, kubeconfig=settings.kubeconfig, context=settings.context)


def object_annotations(skip_await: bool) -> dict[str, str]:
    """Annotations every object of the stack carries.

    Deletion is in the background: the objects own nothing that must go first,
    and a foreground delete never finishes on a cluster without a garbage
    collector (the local environment). A cluster without kubelets also never
    makes a pod ready, so the stack config can tell the provider not to wait.
    """
    result = {"pulumi.com/deletionPropagationPolicy": "background"}
    if skip_await:
        result["pulumi.com/skipAwait"] = "true"
    return result


def object_meta(
    name: str, namespace: str, object_labels: Mapping[str, str], skip_await: bool,
    annotations: Mapping[str, str] | None = None,
) -> k8s.meta.v1.ObjectMetaArgs:
    """Name, namespace, labels and the common annotations of one object, after its own `annotations`."""
    return k8s.meta.v1.ObjectMetaArgs(name=name, namespace=namespace, labels=dict(object_labels),
                                      annotations={**(annotations or {}), **object_annotations(skip_await)})


def labels(service: str, cell: str | None = None) -> dict[str, str]:
    result = {"service": "nova", "component": service, "app.kubernetes.io/managed-by": "openstack-nova"}
    if cell:
        result["cell"] = cell
    return result


def unsecret_hash(value: pulumi.Output[str]) -> pulumi.Output[str]:
    """A hash of secret content is safe to show; keep it readable in diffs."""
    return pulumi.Output.unsecret(value)
