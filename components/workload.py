"""`NovaServiceWorkload`: one control-plane service as Kubernetes objects.

Its `<name>-config-data` Secret, a Deployment whose pod template carries the
hash of that config (so a config change rolls exactly these pods), and a
Service when the service listens on a port.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import k8s as kube
from components.render import config_hash, names
from components.settings import ExtraMount, ServiceTemplate, propagates

CONFIG_MOUNT = "/var/lib/openstack/config"
KOLLA_CONFIG = "/var/lib/kolla/config_files/config.json"


@dataclass(frozen=True)
class WorkloadSpec:
    name: str  # e.g. "nova-api", "nova-cell1-conductor"
    component: str  # label, e.g. "nova-api"
    image: str
    template: ServiceTemplate
    namespace: str
    cell: str | None = None
    port: int | None = None
    service_name: str | None = None
    mount_tags: Sequence[str] = ()
    extra_mounts: Sequence[ExtraMount] = ()
    skip_await: bool = False
    pod_annotations: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)


def extra_volumes(
    mounts: Sequence[ExtraMount], tags: Sequence[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The volumes and mounts of `mounts` that propagate to a pod with `tags`."""
    volumes: list[dict[str, Any]] = []
    volume_mounts: list[dict[str, Any]] = []
    for mount in mounts:
        if not propagates(mount.propagation, tags):
            continue
        volumes.extend(dict(v) for v in mount.volumes)
        for m in mount.mounts:
            entry: dict[str, Any] = {"name": m.name, "mount_path": m.mount_path, "read_only": m.read_only}
            if m.sub_path:
                entry["sub_path"] = m.sub_path
            volume_mounts.append(entry)
    return volumes, volume_mounts


class NovaServiceWorkload(pulumi.ComponentResource):
    config_hash: pulumi.Output[str]
    """Hash of the service's config files, also set on its pod template."""

    def __init__(
        self,
        spec: WorkloadSpec,
        files: pulumi.Output[dict[str, str]],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("openstack-nova:controlplane:NovaServiceWorkload", spec.name, {}, opts)
        child = pulumi.ResourceOptions(parent=self)
        labels = kube.labels(spec.component, spec.cell)
        secret_name = names.config_data(spec.name)
        self.config_secret = k8s.core.v1.Secret(
            f"{spec.name}-config-data",
            metadata=kube.object_metadata(secret_name, spec.namespace, labels, spec.skip_await),
            string_data=files,  # secret: rendered from the secret credentials
            opts=child,
        )
        self.config_hash = kube.unsecret_hash(files.apply(config_hash))
        volumes, volume_mounts = extra_volumes(spec.extra_mounts, spec.mount_tags)
        annotations = {kube.CONFIG_HASH_ANNOTATION: self.config_hash, **spec.pod_annotations}
        container: dict[str, Any] = {
            "name": spec.component,
            "image": spec.image,
            "command": ["/bin/bash"],
            "args": ["-c", "/usr/local/bin/kolla_start"],
            "env": [{"name": "KOLLA_CONFIG_STRATEGY", "value": "COPY_ALWAYS"}],
            "volume_mounts": [
                {"name": "config-data", "mount_path": CONFIG_MOUNT, "read_only": True},
                {"name": "config-data", "mount_path": KOLLA_CONFIG, "sub_path": "config.json", "read_only": True},
                *volume_mounts,
            ],
        }
        if spec.port:
            container["ports"] = [{"container_port": spec.port, "name": "http"}]
        pod_spec: dict[str, Any] = {
            "containers": [container],
            "volumes": [{"name": "config-data", "secret": {"secret_name": secret_name}}, *volumes],
        }
        if spec.template.node_selector:
            pod_spec["node_selector"] = dict(spec.template.node_selector)
        self.deployment = k8s.apps.v1.Deployment(
            spec.name,
            metadata=kube.object_metadata(spec.name, spec.namespace, labels, spec.skip_await),
            spec={
                "replicas": spec.template.replicas,
                "selector": {"match_labels": labels},
                "template": {"metadata": {"labels": labels, "annotations": annotations}, "spec": pod_spec},
            },
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.config_secret]),
        )
        self.service: k8s.core.v1.Service | None = None
        if spec.port and spec.service_name:
            self.service = k8s.core.v1.Service(
                f"{spec.name}-service",
                metadata=kube.object_metadata(spec.service_name, spec.namespace, labels, spec.skip_await),
                spec={"selector": labels, "ports": [{"name": "http", "port": spec.port, "target_port": spec.port}]},
                opts=child,
            )
        self.register_outputs({"configHash": self.config_hash})
