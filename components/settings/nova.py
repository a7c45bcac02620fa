"""The `nova` key: keystone, databases, buses, cells, and the rules that span them."""

from __future__ import annotations

from types import MappingProxyType

from . import schema
from .catalog import OptionCatalog
from .checks import cron_problem, label_problem, url_problem
from .customconfig import check_snippet
from .errors import Context, Path, format_path
from .exposure import parse_override
from .model import (
    CELL0,
    INTERNAL,
    PUBLIC,
    Cell,
    Database,
    DBPurge,
    Keystone,
    MessageBus,
    Nova,
    ServiceOverride,
    ServiceTemplate,
)

MAX_CELL_NAME = 35  # nova-operator: cell CR names are derived from it


def _template(ctx: Context, path: Path, given: schema.ServiceTemplate, catalog: OptionCatalog | None,
              enabled: bool = True, endpoint: str = INTERNAL) -> ServiceTemplate:
    """A service template; `enabled`: the default of its `enabled` key, for one that has the key;
    `endpoint`: the one of its Service, for one that has a single Service."""
    check_snippet(ctx, (*path, "customServiceConfig"), given.custom_service_config, catalog)
    if isinstance(given, schema.OptionalServiceTemplate) and given.enabled is not None:
        enabled = given.enabled
    selector = given.node_selector
    return ServiceTemplate(
        replicas=given.replicas,
        custom_service_config=given.custom_service_config,  # rendered into Secrets either way
        node_selector=MappingProxyType(selector) if selector is not None else None,
        enabled=enabled,
        service_overrides=_service_overrides(ctx, path, given, endpoint),
    )


def _service_overrides(ctx: Context, path: Path, given: schema.ServiceTemplate,
                       endpoint: str) -> MappingProxyType[str, ServiceOverride]:
    """override.service by endpoint: the API's internal and public, another template's one."""
    found: dict[str, ServiceOverride | None] = {}
    if isinstance(given, schema.APIServiceTemplate):
        services = given.override.service
        found = {name: parse_override(ctx, (*path, "override", "service", name), getattr(services, name))
                 for name in (INTERNAL, PUBLIC)}
    elif isinstance(given, schema.OptionalServiceTemplate):
        found = {endpoint: parse_override(ctx, (*path, "override", "service"), given.override.service)}
    return MappingProxyType({name: override for name, override in found.items() if override is not None})


def _database(ctx: Context, path: Path, given: schema.Database, instance: str, account: str) -> Database:
    return Database(instance=given.instance or instance, account=given.account or account,
                    password=ctx.secret((*path, "password"), given.password))


def _bus(ctx: Context, path: Path, given: schema.MessageBus | None, cluster: str, user: str) -> MessageBus:
    given = given or schema.MessageBus()
    return MessageBus(
        cluster=given.cluster or cluster,
        user=given.user or user,
        vhost=given.vhost,
        port=given.port,
        password=ctx.secret((*path, "password"), given.password),
        queue_type=given.queue_type,
    )


def _db_purge(ctx: Context, path: Path, given: schema.DBPurge) -> DBPurge:
    """Upstream's defaults: every midnight, archive after 30 days, purge after 90."""
    problem = cron_problem(given.schedule)
    if problem:
        ctx.problem((*path, "schedule"), problem)
    return DBPurge(**dict(given))


def _keystone(ctx: Context, path: Path, given: schema.Keystone, namespace: str) -> Keystone:
    urls = {"internalURL": given.internal_url or f"http://keystone-internal.{namespace}.svc:5000",
            "publicURL": given.public_url or f"http://keystone-public.{namespace}.svc:5000"}
    for key, url in urls.items():
        problem = url_problem(url)
        if problem:
            ctx.problem((*path, key), problem)
    return Keystone(
        internal_url=urls["internalURL"].rstrip("/"),
        public_url=urls["publicURL"].rstrip("/"),
        region=given.region,
        service_user=given.service_user,
        password=ctx.secret((*path, "password"), given.password),
    )


def _cell(ctx: Context, path: Path, name: str, given: schema.Cell, api_bus: MessageBus,
          catalog: OptionCatalog | None) -> Cell:
    problem = label_problem(name, MAX_CELL_NAME)
    if problem:
        ctx.problem(path, f"cell name {problem}")
    is_cell0 = name == CELL0
    if is_cell0:
        if given.messaging_bus is not None:
            ctx.problem((*path, "messagingBus"),
                        "cell0 always uses the API message bus (nova.messagingBus); remove this key")
        bus = api_bus
    else:
        bus = _bus(ctx, (*path, "messagingBus"), given.messaging_bus, f"rabbitmq-{name}", f"nova-{name}")
    return Cell(
        name=name,
        database=_database(ctx, (*path, "cellDatabase"), given.cell_database,
                           "openstack" if is_cell0 else f"openstack-{name}", f"nova-{name}"),
        messaging_bus=bus,
        has_api_access=given.has_api_access,
        conductor=_template(ctx, (*path, "conductorServiceTemplate"), given.conductor_service_template, catalog),
        metadata=_template(ctx, (*path, "metadataServiceTemplate"), given.metadata_service_template, catalog,
                           False),
        novncproxy=_template(ctx, (*path, "noVNCProxyServiceTemplate"), given.no_vnc_proxy_service_template,
                             catalog, not is_cell0, PUBLIC),
        db_purge=_db_purge(ctx, (*path, "dbPurge"), given.db_purge),
    )


def parse_nova(ctx: Context, given: schema.Nova, namespace: str, catalog: OptionCatalog | None) -> Nova:
    path: Path = ("nova",)
    api_bus = _bus(ctx, (*path, "messagingBus"), given.messaging_bus, "rabbitmq", "nova-api")
    notifications = None
    if given.notifications_bus is not None:
        notifications = _bus(ctx, (*path, "notificationsBus"), given.notifications_bus, "rabbitmq",
                             "nova-notifications")
    cells = [_cell(ctx, (*path, "cellTemplates", name), name, cell, api_bus, catalog)
             for name, cell in given.cell_templates.items()]
    cells.sort(key=lambda c: (not c.is_cell0, c.name))
    problem = label_problem(given.memcached_instance)
    if problem:
        ctx.problem((*path, "memcachedInstance"), f"{problem} (a Kubernetes Service name)")
    nova = Nova(
        keystone=_keystone(ctx, (*path, "keystone"), given.keystone, namespace),
        api_database=_database(ctx, (*path, "apiDatabase"), given.api_database, "openstack", "nova-api"),
        messaging_bus=api_bus,
        notifications_bus=notifications,
        api_timeout=given.api_timeout,
        memcached_instance=given.memcached_instance,
        metadata_shared_secret=ctx.secret((*path, "metadataSharedSecret"), given.metadata_shared_secret),
        api=_template(ctx, (*path, "apiServiceTemplate"), given.api_service_template, catalog),
        scheduler=_template(ctx, (*path, "schedulerServiceTemplate"), given.scheduler_service_template, catalog),
        metadata=_template(ctx, (*path, "metadataServiceTemplate"), given.metadata_service_template, catalog,
                           True),
        cells=tuple(cells),
    )
    _check_cells(ctx, path, nova)
    _check_bus_clusters(ctx, path, nova)
    return nova


def _check_cells(ctx: Context, path: Path, nova: Nova) -> None:
    """The nova-operator webhook rules that span cells."""
    cells_path = (*path, "cellTemplates")
    names = [c.name for c in nova.cells]
    if CELL0 not in names:
        ctx.problem(cells_path, "cell0 is required (it holds the superconductor); add cellTemplates.cell0")
    for cell in nova.cells:
        if cell.is_cell0 and cell.metadata.enabled:
            ctx.problem(
                (*cells_path, CELL0, "metadataServiceTemplate", "enabled"),
                "cell0 cannot run a metadata service; set it to false",
            )
        if cell.is_cell0 and cell.novncproxy.enabled:
            ctx.problem(
                (*cells_path, CELL0, "noVNCProxyServiceTemplate", "enabled"),
                "cell0 has no computes, so no noVNC proxy; set it to false",
            )
    in_cells = [c.name for c in nova.cells_with_metadata]
    if nova.metadata.enabled and in_cells:
        ctx.problem(
            (*path, "metadataServiceTemplate", "enabled"),
            f"metadata runs at the top level or in cells, not both (enabled in {', '.join(in_cells)}); "
            "set this to false or disable metadataServiceTemplate in those cells",
        )
    seen: dict[tuple[str, str], str] = {}
    for cell in nova.cells:
        if cell.is_cell0:
            continue
        other = seen.setdefault(cell.messaging_bus.identity, cell.name)
        if other != cell.name:
            ctx.problem(
                (*cells_path, cell.name, "messagingBus", "cluster"),
                f"cell {cell.name} shares the message bus of cell {other} "
                f"({cell.messaging_bus.cluster}, vhost {cell.messaging_bus.vhost}); give each cell its own",
            )


def _check_bus_clusters(ctx: Context, path: Path, nova: Nova) -> None:
    """A queue type belongs to a RabbitMQ cluster: buses on one cluster must agree on it."""
    buses: list[tuple[Path, MessageBus]] = [((*path, "messagingBus"), nova.messaging_bus)]
    buses += [((*path, "cellTemplates", c.name, "messagingBus"), c.messaging_bus)
              for c in nova.cells if not c.is_cell0]
    if nova.notifications_bus is not None:
        buses.append(((*path, "notificationsBus"), nova.notifications_bus))
    first: dict[str, tuple[Path, MessageBus]] = {}
    for bus_path, bus in buses:
        seen_path, seen = first.setdefault(bus.cluster, (bus_path, bus))
        if seen.queue_type is not bus.queue_type:
            where = format_path((*seen_path, "queueType"), project=False)
            ctx.problem(
                (*bus_path, "queueType"),
                f"{bus.queue_type.value} differs from {seen.queue_type.value}, the queue type of cluster "
                f"{bus.cluster} at {where}; a cluster has one queue type: set the same on both",
            )
