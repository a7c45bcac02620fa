"""`NovaControlPlane`: the Nova API, scheduler, metadata and every cell."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components import k8s as kube
from components.cell import CellSpec, NovaCell
from components.cleanup import NovaServiceCleanup, ServiceCleanupSpec
from components.credentials import NovaCredentials
from components.keystone import KeystoneServiceSpec, NovaKeystoneService
from components.render import (
    RUNTIMES,
    NovaService,
    ServiceEndpoint,
    config_hash,
    data_plane_dns,
    metadata_neutron_config,
    names,
    service_config_files,
    service_endpoint,
    service_template,
)
from components.settings import INTERNAL, PUBLIC, ExtraMount, Images, Nova, Settings, control_plane_tags
from components.workload import NovaServiceWorkload, WorkloadSpec, service_probe


@dataclass(frozen=True)
class ControlPlaneSpec:
    """Nova's settings and where its control plane runs (a NovaScope); the cells' specs
    are cut from it."""

    nova: Nova
    images: Images
    namespace: str  # created by the control plane
    skip_await: bool = False
    extra_mounts: Sequence[ExtraMount] = ()


def control_plane_spec(settings: Settings) -> ControlPlaneSpec:
    """The stack's control plane: the one place its spec is cut from the settings."""
    return ControlPlaneSpec(nova=settings.nova, images=settings.images, namespace=settings.namespace,
                            skip_await=settings.kubernetes.skip_await, extra_mounts=settings.extra_mounts)


class NovaControlPlane(pulumi.ComponentResource):
    cells: dict[str, NovaCell]
    """Every cell by name, cell0 first."""
    registered_cells_hash: pulumi.Output[str]
    """Hash of every cell's mapping; the top-level services roll when it changes."""
    data_plane_dns: pulumi.Output[list[dict[str, object]]]
    """The data plane's DNS records of the LoadBalancer Services: [{hostnames, ip}], one per address."""

    def __init__(self, name: str, spec: ControlPlaneSpec, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("openstack-nova:controlplane:NovaControlPlane", name, {}, opts)
        nova, ns, skip = spec.nova, spec.namespace, spec.skip_await
        self.namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=ns, annotations=kube.object_annotations(skip)),
            opts=pulumi.ResourceOptions(parent=self),
        )
        in_namespace = pulumi.ResourceOptions(parent=self, depends_on=[self.namespace])
        self.credentials = NovaCredentials(f"{name}-credentials", nova, ns,
                                           opts=pulumi.ResourceOptions(parent=self))

        # cell0 first; a cell with API access waits for cell0's mapping, as upstream orders it.
        self.cells = {}
        superconductor = names.conductor("cell0")
        for cell in nova.cells:
            after = [self.cells["cell0"].cell_mapping] if (not cell.is_cell0 and cell.has_api_access) else []
            cell_spec = CellSpec(
                cell=cell, nova=nova, images=spec.images, namespace=ns,
                credentials=self.credentials.for_cell(cell.name), superconductor_config=superconductor,
                skip_await=skip, extra_mounts=spec.extra_mounts,
            )
            self.cells[cell.name] = NovaCell(f"{name}-{cell.name}", cell_spec, after=after, opts=in_namespace)
        mappings = [c.cell_mapping for c in self.cells.values()]
        self.registered_cells_hash = pulumi.Output.all(
            **{n: c.mapping_hash for n, c in self.cells.items()}).apply(config_hash)
        creds = self.credentials.for_cell(None)

        def workload(service: NovaService, workload_name: str, image: str, group: str,
                     services: Sequence[ServiceEndpoint] = ()) -> NovaServiceWorkload:
            workload_spec = WorkloadSpec(
                name=workload_name, component=service.value, image=image,
                template=service_template(spec, service, None), namespace=ns,
                probe=service_probe(service), port=RUNTIMES[service].port, api_timeout=nova.api_timeout,
                services=services, mount_tags=control_plane_tags(group),
                extra_mounts=spec.extra_mounts, skip_await=skip,
                pod_annotations={kube.CELLS_HASH_ANNOTATION: self.registered_cells_hash},
            )
            files: pulumi.Output[dict[str, str]] = pulumi.Output.secret(
                creds.apply(lambda c: service_config_files(spec, service, None, c)))
            return NovaServiceWorkload(workload_spec, files, opts=in_namespace, after=mappings)

        self.api = workload(NovaService.API, names.API, spec.images.api, "NovaAPI", services=(
            service_endpoint(names.API_INTERNAL_SERVICE, ns, nova.api.service(INTERNAL)),
            service_endpoint(names.API_PUBLIC_SERVICE, ns, nova.api.service(PUBLIC))))
        self.scheduler = workload(
            NovaService.SCHEDULER, names.SCHEDULER, spec.images.scheduler, "NovaScheduler")
        self.metadata_neutron_config: pulumi.Output[dict[str, str]] | None = None
        self.metadata: NovaServiceWorkload | None = None
        self.metadata_neutron_secret: k8s.core.v1.Secret | None = None
        if nova.metadata.enabled:
            self.metadata = workload(
                NovaService.METADATA, names.metadata(None), spec.images.metadata, "NovaMetadata",
                services=(service_endpoint(names.metadata_service(None), ns, nova.metadata.service(INTERNAL)),))
            self.metadata_neutron_config = pulumi.Output.secret(self.credentials.metadata_shared_secret.apply(
                lambda shared: metadata_neutron_config(spec, None, shared)))
            self.metadata_neutron_secret = k8s.core.v1.Secret(
                f"{name}-metadata-neutron-config",
                metadata=kube.object_meta(names.metadata_neutron_secret_name(None), ns,
                                              kube.labels("nova-metadata"), skip),
                string_data=self.metadata_neutron_config, opts=in_namespace,
            )
        # nova's own entry in Keystone's catalog, as the nova service user registers it
        password = self.credentials.keystone_password
        self.keystone = NovaKeystoneService(f"{name}-keystone", KeystoneServiceSpec(
            keystone=nova.keystone, namespace=ns, image=spec.images.api, password=password, skip_await=skip),
            opts=in_namespace)
        # Once every scheduler and conductor has rolled out, and the compute API answers
        # through Keystone's catalog: the records of pods gone (a scale-down, a dropped cell)
        rpc_services = [self.scheduler.statefulset, *(c.conductor.statefulset for c in self.cells.values())]
        self.service_cleanup = NovaServiceCleanup(
            f"{name}-service-cleanup",
            ServiceCleanupSpec(nova=nova, namespace=ns, image=spec.images.api, password=password, skip_await=skip),
            after=[*rpc_services, self.api.statefulset, *self.api.services, self.keystone.job], opts=in_namespace)
        records = [record for w in self.workloads() for record in w.dns_records]
        self.data_plane_dns = pulumi.Output.all(*records).apply(data_plane_dns)
        self.register_outputs({"registeredCellsHash": self.registered_cells_hash,
                               "dataPlaneDns": self.data_plane_dns})

    def workloads(self) -> list[NovaServiceWorkload]:
        """Every service's workload: the top level's, then each cell's."""
        found = [self.api, self.scheduler, self.metadata]
        for cell in self.cells.values():
            found += [cell.conductor, cell.metadata, cell.novncproxy]
        return [w for w in found if w is not None]

    def all_resources(self) -> list[pulumi.Resource]:
        """Every Kubernetes object of the control plane (for dependants and tests)."""
        found: list[pulumi.Resource] = [self.namespace]
        for cell in self.cells.values():
            found += [cell.db_sync, cell.cell_mapping, *cell.secrets]
        for w in self.workloads():
            found += [w.config_secret, w.statefulset, *w.services]
        found += [self.keystone.config_secret, self.keystone.job]
        found += [self.service_cleanup.config_secret, self.service_cleanup.job]
        if self.metadata_neutron_secret is not None:
            found.append(self.metadata_neutron_secret)
        return found
