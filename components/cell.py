"""`NovaCell`: one cell v2 cell and everything the cell owns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components import k8s as kube
from components.jobs import NOVA_MANAGE, SERVICE_CONF_FILES, manage_cron_job, manage_job
from components.render import (
    RUNTIMES,
    Credentials,
    NovaService,
    ServiceEndpoint,
    compute_config_files,
    config_hash,
    metadata_neutron_config,
    names,
    service_config_files,
    service_endpoint,
    service_template,
)
from components.render.engine import render
from components.settings import INTERNAL, PUBLIC, Cell, ExtraMount, Images, Nova, control_plane_tags
from components.workload import NovaServiceWorkload, WorkloadSpec, service_probe

CELL0_UUID = "00000000-0000-0000-0000-000000000000"
# Host discovery: the env var holding the cell's expected computes, and how
# long (seconds) and how often it waits for them to register.
COMPUTE_HOSTS_ENV = "NOVA_COMPUTE_HOSTS"
DISCOVER_TIMEOUT = 300
DISCOVER_INTERVAL = 10
# The db purge CronJob's env vars: days before rows are archived, and purged.
ARCHIVE_AGE_ENV = "ARCHIVE_AGE"
PURGE_AGE_ENV = "PURGE_AGE"


def _script(template: str, **values: object) -> str:
    """A nova-manage script of components/templates/nova-manage/ (as a Job's command: no final newline)."""
    return render(f"nova-manage/{template}", nova_manage=NOVA_MANAGE, **values).rstrip("\n")


def _db_sync_script(cell: Cell) -> str:
    return _script("db-sync.sh.j2", cell0=cell.is_cell0)


def _mapping_script(cell: Cell) -> str:
    return _script("cell-mapping.sh.j2", cell=cell.name, cell0=cell.is_cell0, cell0_uuid=CELL0_UUID)


def _discover_script(cell: Cell) -> str:
    """Maps the cell's computes (COMPUTE_HOSTS_ENV, comma-separated) to the cell, waiting
    DISCOVER_TIMEOUT seconds at most for them to register."""
    return _script("discover-hosts.sh.j2", cell=cell.name, hosts_env=COMPUTE_HOSTS_ENV, timeout=DISCOVER_TIMEOUT,
                   interval=DISCOVER_INTERVAL)


def _db_purge_script() -> str:
    """Archives rows deleted ARCHIVE_AGE_ENV days ago, purges those archived PURGE_AGE_ENV days ago."""
    return _script("db-purge.sh.j2", archive_env=ARCHIVE_AGE_ENV, purge_env=PURGE_AGE_ENV)


@dataclass(frozen=True)
class CellSpec:
    """One cell, and what its services' config shares with the rest of nova (a NovaScope)."""

    cell: Cell
    nova: Nova  # the API database, Keystone, the notifications bus and memcached that the cell's config names
    images: Images  # the conductor's, metadata's and noVNC proxy's, and the release they run
    namespace: str
    credentials: pulumi.Output[Credentials]  # revealed in the config Secrets only, which stay secret
    # the service whose config Secret holds the API database (cell0's conductor); None: the cell's conductor
    superconductor_config: str | None = None
    skip_await: bool = False
    extra_mounts: Sequence[ExtraMount] = ()


class NovaCell(pulumi.ComponentResource):
    mapping_hash: pulumi.Output[str]
    """Hash of what the cell-mapping Job registered; top-level services roll when it changes."""
    compute_config: pulumi.Output[dict[str, str]] | None
    """The files of `nova-<cell>-compute-config` (None for cell0, which has no computes)."""
    metadata_neutron_config: pulumi.Output[dict[str, str]] | None
    """The files of the cell's metadata Secret for the neutron agent, when the cell runs metadata."""
    db_sync: k8s.batch.v1.Job
    """The cell's schema migration; its conductor starts after it."""

    def __init__(
        self,
        name: str,
        spec: CellSpec,
        after: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """`after`: what the cell's schema migration (and so everything of the cell
        that follows it) waits for; a component's own dependencies do not reach its
        children, so they are passed down here."""
        super().__init__("openstack-nova:cell:NovaCell", name, {}, opts)
        self._name, self._spec = name, spec
        cell, credentials = spec.cell, spec.credentials
        self._superconductor = spec.superconductor_config or names.conductor(cell.name)
        ns, skip = spec.namespace, spec.skip_await
        child = pulumi.ResourceOptions(parent=self)

        def workload_spec(service: NovaService, workload: str, image: str, group: str,
                          services: Sequence[ServiceEndpoint] = ()) -> WorkloadSpec:
            return WorkloadSpec(
                name=workload, component=service.value, image=image,
                template=service_template(spec, service, cell), namespace=ns,
                probe=service_probe(service), port=RUNTIMES[service].port, api_timeout=spec.nova.api_timeout,
                cell=cell.name, services=services, mount_tags=control_plane_tags(group, cell.name),
                extra_mounts=spec.extra_mounts, skip_await=skip,
            )

        def files(service: NovaService) -> pulumi.Output[dict[str, str]]:
            return pulumi.Output.secret(credentials.apply(lambda c: service_config_files(spec, service, cell, c)))

        conductor_secret = names.config_data(names.conductor(cell.name))
        job_labels = kube.labels("nova-manage", cell.name)

        def db_sync(conductor: NovaServiceWorkload) -> list[pulumi.Resource]:
            self.db_sync = manage_job(
                f"{name}-db-sync", job_name=names.db_sync_job(cell.name), namespace=ns,
                image=spec.images.conductor, script=_db_sync_script(cell),
                config_sources=[(conductor_secret, SERVICE_CONF_FILES)], labels=job_labels, skip_await=skip,
                annotations={kube.CONFIG_HASH_ANNOTATION: conductor.config_hash},
                opts=pulumi.ResourceOptions(parent=self, depends_on=[conductor.config_secret, *after]),
            )
            return [self.db_sync]

        # The conductor starts once its cell's database schema is in place.
        self.conductor = NovaServiceWorkload(
            workload_spec(NovaService.CONDUCTOR, names.conductor(cell.name), spec.images.conductor, "NovaConductor"),
            files(NovaService.CONDUCTOR), opts=child, before_start=db_sync,
        )
        self.metadata_neutron_config = None
        self.metadata: NovaServiceWorkload | None = None
        self.novncproxy: NovaServiceWorkload | None = None
        self.secrets: list[k8s.core.v1.Secret] = []
        if cell.metadata.enabled:
            self.metadata = NovaServiceWorkload(
                workload_spec(NovaService.METADATA, names.metadata(cell.name), spec.images.metadata, "NovaMetadata",
                              services=(service_endpoint(names.metadata_service(cell.name), ns,
                                                         cell.metadata.service(INTERNAL)),)),
                files(NovaService.METADATA), opts=child,
            )
            self.metadata_neutron_config = pulumi.Output.secret(
                credentials.apply(lambda c: metadata_neutron_config(spec, cell, c.metadata_shared_secret)))
            self.secrets.append(k8s.core.v1.Secret(
                f"{name}-metadata-neutron-config",
                metadata=kube.object_meta(names.metadata_neutron_secret_name(cell.name), ns,
                                              kube.labels("nova-metadata", cell.name), skip),
                string_data=self.metadata_neutron_config, opts=child,
            ))
        if cell.novncproxy.enabled:
            self.novncproxy = NovaServiceWorkload(
                workload_spec(NovaService.NOVNCPROXY, names.novncproxy(cell.name), spec.images.novncproxy,
                              "NovaNoVNCProxy", services=(service_endpoint(names.novncproxy_service(cell.name), ns,
                                                                           cell.novncproxy.service(PUBLIC)),)),
                files(NovaService.NOVNCPROXY), opts=child,
            )
        self.compute_config = None
        if not cell.is_cell0:
            self.compute_config = pulumi.Output.secret(
                credentials.apply(lambda c: compute_config_files(spec, cell, c)))
            self.secrets.append(k8s.core.v1.Secret(
                f"{name}-compute-config",
                metadata=kube.object_meta(names.compute_config(cell.name), ns,
                                              kube.labels("nova-compute", cell.name), skip),
                string_data=self.compute_config, opts=child,
            ))

        # The mapping needs the API database (the superconductor's config) and,
        # for other cells, the cell's own database and bus (its conductor's config, loaded last).
        sources = [(names.config_data(self._superconductor), SERVICE_CONF_FILES)]
        if not cell.is_cell0:
            sources.append((conductor_secret, {"01-nova.conf": "02-nova-cell.conf"}))
        self.mapping_hash = pulumi.Output.all(cell.name, self.conductor.config_hash).apply(
            lambda v: config_hash({"cell": v[0], "conductor": v[1]}))
        self.cell_mapping = manage_job(
            f"{name}-cell-mapping", job_name=names.cell_mapping_job(cell.name), namespace=ns,
            image=spec.images.conductor, script=_mapping_script(cell), config_sources=sources,
            labels=job_labels, skip_await=skip, annotations={kube.CONFIG_HASH_ANNOTATION: self.mapping_hash},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.db_sync]),
        )
        # Archiving also drops the API database's records of archived instances: the API
        # database comes from the superconductor's config, the cell's database from its conductor's.
        self.db_purge = manage_cron_job(
            f"{name}-db-purge", job_name=names.db_purge_cron_job(cell.name), namespace=ns,
            schedule=cell.db_purge.schedule, image=spec.images.conductor, script=_db_purge_script(),
            config_sources=sources,
            env={ARCHIVE_AGE_ENV: str(cell.db_purge.archive_age), PURGE_AGE_ENV: str(cell.db_purge.purge_age)},
            labels=job_labels, skip_await=skip,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.db_sync]),
        )
        self.register_outputs({"mappingHash": self.mapping_hash})

    def discover_hosts(self, hosts: Sequence[str], depends_on: Sequence[pulumi.Resource]) -> k8s.batch.v1.Job:
        """The cell's host-discovery Job, run once `depends_on` (the computes) are deployed.

        The hosts are part of its pod template, so a new compute replaces the Job
        and discovery runs again; the Job completes once every host is mapped.
        """
        spec, cell = self._spec, self._spec.cell
        host_list = ",".join(sorted(hosts))
        return manage_job(
            f"{self._name}-host-discover", job_name=names.host_discover_job(cell.name),
            namespace=spec.namespace, image=spec.images.conductor,
            script=_discover_script(cell),
            config_sources=[(names.config_data(self._superconductor), SERVICE_CONF_FILES)],
            labels=kube.labels("nova-manage", cell.name), skip_await=spec.skip_await,
            annotations={"nova.openstack.org/compute-hosts": host_list}, env={COMPUTE_HOSTS_ENV: host_list},
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(depends_on)),
        )
