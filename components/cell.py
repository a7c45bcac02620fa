"""`NovaCell`: one cell v2 cell and everything the cell owns."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_kubernetes as k8s

from components import k8s as kube
from components.jobs import NOVA_MANAGE, SERVICE_CONF_FILES, manage_cron_job, manage_job
from components.render import (
    RUNTIMES,
    Credentials,
    NovaService,
    compute_config_files,
    config_hash,
    metadata_neutron_config,
    names,
    service_config_files,
    service_template,
)
from components.settings import Cell, Settings, control_plane_tags
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


def _cell_uuid(cell: Cell) -> str:
    """Shell: sets `uuid` to the cell's uuid from the API database, empty when unmapped."""
    return (f"uuid=$({NOVA_MANAGE} cell_v2 list_cells | awk -F'|' '$2 ~ / {cell.name} /"
            f" {{gsub(/ /, \"\", $3); print $3}}')")


def _mapping_script(cell: Cell) -> str:
    if cell.is_cell0:
        # update_cell after map_cell0 keeps an existing mapping in step with the config;
        # cell0 has no bus, so its mapping holds none (and no bus password), as upstream's.
        return (f"set -e; {NOVA_MANAGE} cell_v2 map_cell0; "
                f"{NOVA_MANAGE} cell_v2 update_cell --cell_uuid {CELL0_UUID} --transport-url none:///")
    return (f"set -e; {_cell_uuid(cell)}; "
            f"if [ -z \"$uuid\" ]; then {NOVA_MANAGE} cell_v2 create_cell --name {cell.name}; "
            f"else {NOVA_MANAGE} cell_v2 update_cell --cell_uuid \"$uuid\"; fi")


def _discover_script(cell: Cell) -> str:
    """Maps the cell's computes (COMPUTE_HOSTS_ENV, comma-separated) to the cell.

    A compute registers its service record some time after its deploy, so
    discovery runs again until every expected host is mapped, for
    DISCOVER_TIMEOUT seconds at most. Only this cell is searched: the Jobs of
    several cells run at once and would collide mapping the same hosts.
    """
    return "\n".join([
        f"set -e; {_cell_uuid(cell)}",
        f'[ -n "$uuid" ] || {{ echo "cell {cell.name} is not mapped" >&2; exit 1; }}',
        f"deadline=$((SECONDS + {DISCOVER_TIMEOUT}))",
        "while :; do",
        f'  {NOVA_MANAGE} cell_v2 discover_hosts --cell_uuid "$uuid" --by-service --verbose || true',
        f'  mapped=$({NOVA_MANAGE} cell_v2 list_hosts --cell_uuid "$uuid"'
        " | awk -F'|' 'NF > 3 {gsub(/ /, \"\", $4); print $4}')",
        "  missing=",
        f'  for h in ${{{COMPUTE_HOSTS_ENV}//,/ }}; do grep -qxF "$h" <<<"$mapped" || missing="$missing $h"; done',
        '  [ -n "$missing" ] || { echo "mapped to ' + cell.name + ': ${' + COMPUTE_HOSTS_ENV + '}"; exit 0; }',
        '  if [ "$SECONDS" -ge "$deadline" ]; then',
        f'    echo "not mapped to {cell.name} after {DISCOVER_TIMEOUT}s (no nova-compute service record):$missing" >&2',
        "    exit 1",
        "  fi",
        f'  echo "waiting for$missing to register in {cell.name}"',
        f"  sleep {DISCOVER_INTERVAL}",
        "done",
    ])


def _db_purge_script() -> str:
    """Moves rows deleted ARCHIVE_AGE_ENV days ago to the shadow tables, then deletes
    archived rows deleted PURGE_AGE_ENV days ago. nova-manage's exit codes that mean
    success: archive 0 (nothing to archive) or 1 (archived); purge 0 (deleted) or 3 (nothing)."""
    return "\n".join([
        f'archive_before=$(date --date="${{{ARCHIVE_AGE_ENV}}} days ago" +%F)',
        f'purge_before=$(date --date="${{{PURGE_AGE_ENV}}} days ago" +%F)',
        f'{NOVA_MANAGE} db archive_deleted_rows --verbose --until-complete --task-log --before "$archive_before"',
        'rc=$?; [ "$rc" -le 1 ] || exit "$rc"',
        f'{NOVA_MANAGE} db purge --verbose --before "$purge_before"',
        'rc=$?; [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || exit "$rc"',
    ])


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
        settings: Settings,
        cell: Cell,
        credentials: pulumi.Output[Credentials],
        superconductor_config: str | None = None,
        after: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """`after`: what the cell's schema migration (and so everything of the cell
        that follows it) waits for; a component's own dependencies do not reach its
        children, so they are passed down here."""
        super().__init__("openstack-nova:cell:NovaCell", name, {}, opts)
        self._name, self._settings, self._cell = name, settings, cell
        self._superconductor = superconductor_config or names.conductor(cell.name)
        ns, skip = settings.namespace, settings.kubernetes.skip_await
        child = pulumi.ResourceOptions(parent=self)

        def spec(service: NovaService, workload: str, image: str, group: str,
                 service_names: Sequence[str] = ()) -> WorkloadSpec:
            return WorkloadSpec(
                name=workload, component=service.value, image=image,
                template=service_template(settings, service, cell), namespace=ns,
                probe=service_probe(service), port=RUNTIMES[service].port, api_timeout=settings.nova.api_timeout,
                cell=cell.name, service_names=service_names, mount_tags=control_plane_tags(group, cell.name),
                extra_mounts=settings.extra_mounts, skip_await=skip,
            )

        def files(service: NovaService) -> pulumi.Output[dict[str, str]]:
            return pulumi.Output.secret(credentials.apply(lambda c: service_config_files(settings, service, cell, c)))

        conductor_secret = names.config_data(names.conductor(cell.name))
        job_labels = kube.labels("nova-manage", cell.name)

        def db_sync(conductor: NovaServiceWorkload) -> list[pulumi.Resource]:
            sync_script = f"set -e; {NOVA_MANAGE} db sync --local_cell"
            if cell.is_cell0:
                sync_script = f"set -e; {NOVA_MANAGE} api_db sync; {NOVA_MANAGE} db sync --local_cell"
            self.db_sync = manage_job(
                f"{name}-db-sync", job_name=names.db_sync_job(cell.name), namespace=ns,
                image=settings.images.conductor, script=sync_script,
                config_sources=[(conductor_secret, SERVICE_CONF_FILES)], labels=job_labels, skip_await=skip,
                annotations={kube.CONFIG_HASH_ANNOTATION: conductor.config_hash},
                opts=pulumi.ResourceOptions(parent=self, depends_on=[conductor.config_secret, *after]),
            )
            return [self.db_sync]

        # The conductor starts once its cell's database schema is in place.
        self.conductor = NovaServiceWorkload(
            spec(NovaService.CONDUCTOR, names.conductor(cell.name), settings.images.conductor, "NovaConductor"),
            files(NovaService.CONDUCTOR), opts=child, before_start=db_sync,
        )
        self.metadata_neutron_config = None
        self.metadata: NovaServiceWorkload | None = None
        self.novncproxy: NovaServiceWorkload | None = None
        self.secrets: list[k8s.core.v1.Secret] = []
        if cell.metadata.enabled:
            self.metadata = NovaServiceWorkload(
                spec(NovaService.METADATA, names.metadata(cell.name), settings.images.metadata, "NovaMetadata",
                     service_names=(names.metadata_service(cell.name),)),
                files(NovaService.METADATA), opts=child,
            )
            self.metadata_neutron_config = pulumi.Output.secret(
                credentials.apply(lambda c: metadata_neutron_config(settings, cell, c.metadata_shared_secret)))
            self.secrets.append(k8s.core.v1.Secret(
                f"{name}-metadata-neutron-config",
                metadata=kube.object_meta(names.metadata_neutron_secret_name(cell.name), ns,
                                              kube.labels("nova-metadata", cell.name), skip),
                string_data=self.metadata_neutron_config, opts=child,
            ))
        if cell.novncproxy.enabled:
            self.novncproxy = NovaServiceWorkload(
                spec(NovaService.NOVNCPROXY, names.novncproxy(cell.name), settings.images.novncproxy,
                     "NovaNoVNCProxy", service_names=(names.novncproxy_service(cell.name),)),
                files(NovaService.NOVNCPROXY), opts=child,
            )
        self.compute_config = None
        if not cell.is_cell0:
            self.compute_config = pulumi.Output.secret(
                credentials.apply(lambda c: compute_config_files(settings, cell, c)))
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
            image=settings.images.conductor, script=_mapping_script(cell), config_sources=sources,
            labels=job_labels, skip_await=skip, annotations={kube.CONFIG_HASH_ANNOTATION: self.mapping_hash},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.db_sync]),
        )
        # Archiving also drops the API database's records of archived instances: the API
        # database comes from the superconductor's config, the cell's database from its conductor's.
        self.db_purge = manage_cron_job(
            f"{name}-db-purge", job_name=names.db_purge_cron_job(cell.name), namespace=ns,
            schedule=cell.db_purge.schedule, image=settings.images.conductor, script=_db_purge_script(),
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
        settings, cell = self._settings, self._cell
        host_list = ",".join(sorted(hosts))
        return manage_job(
            f"{self._name}-host-discover", job_name=names.host_discover_job(cell.name),
            namespace=settings.namespace, image=settings.images.conductor,
            script=_discover_script(cell),
            config_sources=[(names.config_data(self._superconductor), SERVICE_CONF_FILES)],
            labels=kube.labels("nova-manage", cell.name), skip_await=settings.kubernetes.skip_await,
            annotations={"nova.openstack.org/compute-hosts": host_list}, env={COMPUTE_HOSTS_ENV: host_list},
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(depends_on)),
        )
