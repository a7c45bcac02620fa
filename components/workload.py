"""`NovaServiceWorkload`: one control-plane service as Kubernetes objects.

Its `<name>-config-data` Secret, a StatefulSet whose pod template carries the
hash of that config (so a config change rolls exactly these pods), and the
Services it listens behind. A StatefulSet, as upstream's: pod names are
stable, and nova uses the pod's host name as the service's `host`, so a
restart does not leave a service record behind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import k8s as kube
from components.render import RUNTIMES, NovaService, ServiceEndpoint, config_hash, names
from components.settings import ExtraMount, ServiceTemplate, propagates

CONFIG_MOUNT = "/var/lib/openstack/config"
KOLLA_CONFIG = "/var/lib/kolla/config_files/config.json"


@dataclass(frozen=True)
class HttpProbe:
    """Ready and alive while GET `path` on `port` answers below 400."""

    path: str
    port: int
    api: bool  # an API: timings follow nova.apiTimeout, as upstream's do


@dataclass(frozen=True)
class ProcessProbe:
    """Alive while a process named `process` runs (and is not a zombie), as
    upstream probes its RPC services; they have no readiness to report."""

    process: str


@dataclass(frozen=True)
class WorkloadSpec:
    name: str  # e.g. "nova-api", "nova-cell1-conductor"
    component: str  # label, e.g. "nova-api"
    image: str
    template: ServiceTemplate
    namespace: str
    probe: HttpProbe | ProcessProbe
    api_timeout: int = 60
    cell: str | None = None
    port: int | None = None
    services: Sequence[ServiceEndpoint] = ()  # the Services in front of `port`
    mount_tags: Sequence[str] = ()
    extra_mounts: Sequence[ExtraMount] = ()
    skip_await: bool = False
    pod_annotations: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)


def extra_volumes(
    mounts: Sequence[ExtraMount], tags: Sequence[str]
) -> tuple[list[k8s.core.v1.VolumeArgs], list[k8s.core.v1.VolumeMountArgs]]:
    """The volumes and mounts of `mounts` that propagate to a pod with `tags`."""
    volumes: list[k8s.core.v1.VolumeArgs] = []
    volume_mounts: list[k8s.core.v1.VolumeMountArgs] = []
    for mount in mounts:
        if not propagates(mount.propagation, tags):
            continue
        # The one untyped part of a pod: extraMounts' volumes are the user's Kubernetes volume
        # objects (any volume source), passed on as given rather than rebuilt field by field here.
        volumes.extend(dict(v) for v in mount.volumes)  # type: ignore[misc]
        volume_mounts.extend(
            k8s.core.v1.VolumeMountArgs(name=m.name, mount_path=m.mount_path, read_only=m.read_only,
                                        sub_path=m.sub_path)
            for m in mount.mounts
        )
    return volumes, volume_mounts


def _probe(probe: HttpProbe | ProcessProbe, period: int, timeout: int, failures: int) -> k8s.core.v1.ProbeArgs:
    if isinstance(probe, HttpProbe):
        return k8s.core.v1.ProbeArgs(
            http_get=k8s.core.v1.HTTPGetActionArgs(path=probe.path, port=probe.port),
            period_seconds=period, timeout_seconds=timeout, failure_threshold=failures)
    # pgrep -r: only running, sleeping or waiting processes count, not zombies or stopped ones.
    return k8s.core.v1.ProbeArgs(
        exec_=k8s.core.v1.ExecActionArgs(command=["/usr/bin/pgrep", "-r", "DRST", "-f", probe.process]),
        period_seconds=period, timeout_seconds=timeout, failure_threshold=failures)


# How long a first start may take on a busy node (importing nova alone takes seconds of CPU).
STARTUP_FAILURES = 30


@dataclass(frozen=True)
class Probes:
    """A container's three probes; an RPC service has no readiness to report."""

    startup: k8s.core.v1.ProbeArgs
    liveness: k8s.core.v1.ProbeArgs
    readiness: k8s.core.v1.ProbeArgs | None


def probes(probe: HttpProbe | ProcessProbe, api_timeout: int) -> Probes:
    """Startup, liveness and readiness probes with upstream's timings."""
    startup = _probe(probe, period=10, timeout=10, failures=STARTUP_FAILURES)
    if isinstance(probe, ProcessProbe):
        return Probes(startup, liveness=_probe(probe, period=20, timeout=10, failures=3), readiness=None)
    if probe.api:
        ready, alive = int(api_timeout * 0.3), int(api_timeout * 0.5)
        return Probes(startup, liveness=_probe(probe, period=alive, timeout=alive, failures=10),
                      readiness=_probe(probe, period=ready, timeout=ready, failures=3))
    return Probes(startup, liveness=_probe(probe, period=10, timeout=10, failures=3),
                  readiness=_probe(probe, period=5, timeout=5, failures=3))


def service_probe(service: NovaService) -> HttpProbe | ProcessProbe:
    """What tells that a service is up: its API's answer, or its process."""
    runtime = RUNTIMES[service]
    if service is NovaService.NOVNCPROXY and runtime.port:
        return HttpProbe("/vnc_lite.html", runtime.port, api=False)
    if runtime.port:
        return HttpProbe("/", runtime.port, api=True)
    return ProcessProbe(service.value)


def _service_spec(endpoint: ServiceEndpoint, selector: Mapping[str, str], port: int) -> k8s.core.v1.ServiceSpecArgs:
    """The Service's spec: the workload's port, and what the stack's override sets (unset: Kubernetes'
    defaults, and no change to a Service made before overrides existed)."""
    return k8s.core.v1.ServiceSpecArgs(
        type=endpoint.type,
        external_traffic_policy=endpoint.external_traffic_policy,
        internal_traffic_policy=endpoint.internal_traffic_policy,
        load_balancer_source_ranges=list(endpoint.load_balancer_source_ranges) or None,
        load_balancer_class=endpoint.load_balancer_class,
        session_affinity=endpoint.session_affinity,
        ip_family_policy=endpoint.ip_family_policy,
        selector=dict(selector),
        ports=[k8s.core.v1.ServicePortArgs(name="http", port=port, target_port=port)],
    )


def _dns_record(hostname: str, service: k8s.core.v1.Service) -> pulumi.Output[tuple[str, list[str]]]:
    return service.status.apply(lambda status: (hostname, ingress_addresses(status)))


def ingress_addresses(status: Any) -> list[str]:
    """The addresses of a Service's `status.loadBalancer.ingress` (none while unassigned, or unknown)."""
    balancer = _field(status, "load_balancer", "loadBalancer")
    ingress = _field(balancer, "ingress", "ingress") or []
    return [ip for entry in ingress if (ip := _field(entry, "ip", "ip"))]


def _field(value: Any, attribute: str, key: str) -> Any:
    """A field of a typed output (attribute) or of a plain dict (camelCase key)."""
    if value is None:
        return None
    # a typed output is also a dict, whose get() of the camelCase key warns: its attribute first
    if hasattr(value, attribute):
        return getattr(value, attribute)
    if isinstance(value, Mapping):
        return value.get(key, value.get(attribute))
    return None


class NovaServiceWorkload(pulumi.ComponentResource):
    config_hash: pulumi.Output[str]
    """Hash of the service's config files, also set on its pod template."""

    def __init__(
        self,
        spec: WorkloadSpec,
        files: pulumi.Output[dict[str, str]],
        opts: pulumi.ResourceOptions | None = None,
        before_start: Callable[[NovaServiceWorkload], Sequence[pulumi.Resource]] | None = None,
        after: Sequence[pulumi.Resource] = (),
    ) -> None:
        """The pods start after `after` (a component's own dependencies do not reach its
        children) and after what `before_start(self)` makes between the config Secret
        and the pods (the cell's db sync before its conductor, as upstream orders them)."""
        super().__init__("openstack-nova:controlplane:NovaServiceWorkload", spec.name, {}, opts)
        child = pulumi.ResourceOptions(parent=self)
        labels = kube.labels(spec.component, spec.cell)
        secret_name = names.config_data(spec.name)
        self.config_secret = k8s.core.v1.Secret(
            f"{spec.name}-config-data",
            metadata=kube.object_meta(secret_name, spec.namespace, labels, spec.skip_await),
            string_data=files,  # secret: rendered from the secret credentials
            opts=child,
        )
        self.config_hash = kube.unsecret_hash(files.apply(config_hash))
        depends_on = [*after, *(before_start(self) if before_start else [])]
        volumes, volume_mounts = extra_volumes(spec.extra_mounts, spec.mount_tags)
        annotations = {kube.CONFIG_HASH_ANNOTATION: self.config_hash, **spec.pod_annotations}
        container_probes = probes(spec.probe, spec.api_timeout)
        container = k8s.core.v1.ContainerArgs(
            name=spec.component,
            image=spec.image,
            image_pull_policy="IfNotPresent",
            command=["/bin/bash"],
            args=["-c", "/usr/local/bin/kolla_start"],
            env=[k8s.core.v1.EnvVarArgs(name="KOLLA_CONFIG_STRATEGY", value="COPY_ALWAYS")],
            volume_mounts=[
                k8s.core.v1.VolumeMountArgs(name="config-data", mount_path=CONFIG_MOUNT, read_only=True),
                k8s.core.v1.VolumeMountArgs(name="config-data", mount_path=KOLLA_CONFIG, sub_path="config.json",
                                            read_only=True),
                *volume_mounts,
            ],
            ports=[k8s.core.v1.ContainerPortArgs(container_port=spec.port, name="http")] if spec.port else None,
            resources=k8s.core.v1.ResourceRequirementsArgs(requests={"cpu": "10m", "memory": "128Mi"}),
            startup_probe=container_probes.startup,
            liveness_probe=container_probes.liveness,
            readiness_probe=container_probes.readiness,
        )
        pod_spec = k8s.core.v1.PodSpecArgs(
            containers=[container],
            # root only: kolla_set_configs (root) copies them, with each file's own owner and mode
            volumes=[k8s.core.v1.VolumeArgs(name="config-data", secret=k8s.core.v1.SecretVolumeSourceArgs(
                         secret_name=secret_name, default_mode=0o400)),
                     *volumes],
            node_selector=dict(spec.template.node_selector) if spec.template.node_selector else None,
            termination_grace_period_seconds=30,
        )
        self.statefulset = k8s.apps.v1.StatefulSet(
            spec.name,
            metadata=kube.object_meta(spec.name, spec.namespace, labels, spec.skip_await),
            spec=k8s.apps.v1.StatefulSetSpecArgs(
                replicas=spec.template.replicas,
                service_name=spec.name,
                # pods are independent: start and replace them all at once
                pod_management_policy="Parallel",
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=labels),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels=labels, annotations=annotations), spec=pod_spec),
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.config_secret, *depends_on]),
        )
        self.services: list[k8s.core.v1.Service] = []
        self.dns_records: list[pulumi.Output[tuple[str, list[str]]]] = []
        """(host name, load-balancer addresses) of each LoadBalancer Service, for the data plane's DNS."""
        if spec.port:
            for index, endpoint in enumerate(spec.services):
                service = k8s.core.v1.Service(
                    endpoint.name if index else f"{spec.name}-service",
                    metadata=kube.object_meta(endpoint.name, spec.namespace, {**labels, **endpoint.labels},
                                              spec.skip_await, endpoint.annotations),
                    spec=_service_spec(endpoint, labels, spec.port),
                    opts=child,
                )
                self.services.append(service)
                if endpoint.dns_hostname:
                    self.dns_records.append(_dns_record(endpoint.dns_hostname, service))
        self.register_outputs({"configHash": self.config_hash})
