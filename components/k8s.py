"""Kubernetes plumbing shared by the components: provider, labels, annotations."""

from __future__ import annotations

from collections.abc import Mapping

import pulumi
import pulumi_kubernetes as k8s

from components.settings.model import Kubernetes, KubernetesMode

CONFIG_HASH_ANNOTATION = "nova.openstack.org/config-hash"
CELLS_HASH_ANNOTATION = "nova.openstack.org/registered-cells-hash"


def provider(name: str, settings: Kubernetes) -> k8s.Provider:
    """The provider every Kubernetes object of the stack is created with."""
    if settings.mode is KubernetesMode.RENDER:
        return k8s.Provider(name, render_yaml_to_directory=settings.render_dir)
    return k8s.Provider(name, kubeconfig=settings.kubeconfig, context=settings.context)


def awaited(skip_await: bool, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Annotations for an object the provider would otherwise wait on.

    A cluster without kubelets (the local environment) never makes a pod ready,
    so the stack config can tell the provider not to wait for readiness.
    """
    annotations = dict(extra or {})
    if skip_await:
        annotations["pulumi.com/skipAwait"] = "true"
        annotations["pulumi.com/deletionPropagationPolicy"] = "background"
    return annotations


def labels(service: str, cell: str | None = None) -> dict[str, str]:
    result = {"service": "nova", "component": service, "app.kubernetes.io/managed-by": "openstack-nova"}
    if cell:
        result["cell"] = cell
    return result


def unsecret_hash(value: pulumi.Output[str]) -> pulumi.Output[str]:
    """A hash of secret content is safe to show; keep it readable in diffs."""
    return pulumi.Output.unsecret(value)
