"""Parsing and checking the `nova` key: keystone, databases, buses, cells."""

from __future__ import annotations

from collections.abc import Mapping

from .catalog import OptionCatalog
from .checks import cron_problem, label_problem, url_problem
from .customconfig import read_snippet
from .errors import Path, format_path
from .model import CELL0, Cell, Database, DBPurge, Keystone, MessageBus, Nova, QueueType, ServiceTemplate
from .reader import Obj

MAX_CELL_NAME = 35  # nova-operator: cell CR names are derived from it
MAX_REPLICAS = 32
DEFAULT_CELLS: Mapping[str, object] = {CELL0: {}, "cell1": {}}


def parse_template(
    obj: Obj, catalog: OptionCatalog | None, *, enabled: bool | None = None
) -> ServiceTemplate:
    """A service template; `enabled` is the default of its `enabled` key, None if it has none."""
    config, _ = read_snippet(obj, "customServiceConfig", catalog)  # rendered into Secrets either way
    template = ServiceTemplate(
        replicas=obj.integer("replicas", 1, lo=0, hi=MAX_REPLICAS),
        custom_service_config=config,
        node_selector=obj.str_map("nodeSelector") if obj.has("nodeSelector") else None,
        enabled=obj.flag("enabled", enabled) if enabled is not None else True,
    )
    obj.close()
    return template


def _database(obj: Obj, instance: str, account: str) -> Database:
    database = Database(
        instance=obj.text("instance", instance, allow_empty=False),
        account=obj.text("account", account, allow_empty=False),
        password=obj.secret("password"),
    )
    obj.close()
    return database


def _queue_type(obj: Obj) -> QueueType:
    """The cluster's queue type; Quorum by default, as infra-operator defaults a RabbitMq."""
    text = obj.text("queueType", QueueType.QUORUM.value, allow_empty=False)
    if text not in {q.value for q in QueueType}:
        obj.ctx.problem(obj.at("queueType"), f"'{text}' is not one of: {', '.join(q.value for q in QueueType)}")
        return QueueType.QUORUM
    return QueueType(text)


def parse_bus(obj: Obj, cluster: str, user: str) -> MessageBus:
    bus = MessageBus(
        cluster=obj.text("cluster", cluster, allow_empty=False),
        user=obj.text("user", user, allow_empty=False),
        vhost=obj.text("vhost", "/", allow_empty=False),
        port=obj.integer("port", 5672, lo=1, hi=65535),
        password=obj.secret("password"),
        queue_type=_queue_type(obj),
    )
    obj.close()
    return bus


def _service_name(obj: Obj, key: str, default: str) -> str:
    name = obj.text(key, default, allow_empty=False)
    problem = label_problem(name)
    if problem:
        obj.ctx.problem(obj.at(key), f"{problem} (a Kubernetes Service name)")
    return name


def _db_purge(obj: Obj) -> DBPurge:
    """Upstream's defaults: every midnight, archive after 30 days, purge after 90."""
    schedule = obj.text("schedule", "0 0 * * *", allow_empty=False)
    problem = cron_problem(schedule)
    if problem:
        obj.ctx.problem(obj.at("schedule"), problem)
    purge = DBPurge(
        schedule=schedule,
        archive_age=obj.integer("archiveAge", 30, lo=1),
        purge_age=obj.integer("purgeAge", 90, lo=1),
    )
    obj.close()
    return purge


def _keystone(obj: Obj, namespace: str) -> Keystone:
    urls = {}
    for key, prefix in (("internalURL", "keystone-internal"), ("publicURL", "keystone-public")):
        urls[key] = obj.text(key, f"http://{prefix}.{namespace}.svc:5000", allow_empty=False)
        problem = url_problem(urls[key])
        if problem:
            obj.ctx.problem(obj.at(key), problem)
    keystone = Keystone(
        internal_url=urls["internalURL"].rstrip("/"),
        public_url=urls["publicURL"].rstrip("/"),
        region=obj.text("region", "regionOne", allow_empty=False),
        service_user=obj.text("serviceUser", "nova", allow_empty=False),
        password=obj.secret("password"),
    )
    obj.close()
    return keystone


def _cell(name: str, obj: Obj, api_bus: MessageBus, catalog: OptionCatalog | None) -> Cell:
    problem = label_problem(name, MAX_CELL_NAME)
    if problem:
        obj.ctx.problem(obj.path, f"cell name {problem}")
    is_cell0 = name == CELL0
    if is_cell0:
        if obj.has("messagingBus"):
            obj.ctx.problem(
                obj.at("messagingBus"),
                "cell0 always uses the API message bus (nova.messagingBus); remove this key",
            )
        bus = api_bus
    else:
        bus = parse_bus(obj.obj("messagingBus"), f"rabbitmq-{name}", f"nova-{name}")
    cell = Cell(
        name=name,
        database=_database(
            obj.obj("cellDatabase"), "openstack" if is_cell0 else f"openstack-{name}", f"nova-{name}"
        ),
        messaging_bus=bus,
        has_api_access=obj.flag("hasAPIAccess", True),
        conductor=parse_template(obj.obj("conductorServiceTemplate"), catalog),
        metadata=parse_template(obj.obj("metadataServiceTemplate"), catalog, enabled=False),
        novncproxy=parse_template(obj.obj("noVNCProxyServiceTemplate"), catalog, enabled=not is_cell0),
        db_purge=_db_purge(obj.obj("dbPurge")),
    )
    obj.close()
    return cell


def parse_nova(obj: Obj, namespace: str, catalog: OptionCatalog | None) -> Nova:
    api_bus = parse_bus(obj.obj("messagingBus"), "rabbitmq", "nova-api")
    notifications = None
    if obj.has("notificationsBus"):
        notifications = parse_bus(obj.obj("notificationsBus"), "rabbitmq", "nova-notifications")
    # the defaults apply only when cellTemplates is absent, as in the CRD
    given = obj.has("cellTemplates")
    cells_obj = obj.obj("cellTemplates") if given else Obj(obj.ctx, obj.at("cellTemplates"), DEFAULT_CELLS)
    cells = [_cell(name, cells_obj.obj(name), api_bus, catalog) for name in cells_obj.names()]
    cells.sort(key=lambda c: (not c.is_cell0, c.name))
    nova = Nova(
        keystone=_keystone(obj.obj("keystone"), namespace),
        api_database=_database(obj.obj("apiDatabase"), "openstack", "nova-api"),
        messaging_bus=api_bus,
        notifications_bus=notifications,
        api_timeout=obj.integer("apiTimeout", 60, lo=10),
        memcached_instance=_service_name(obj, "memcachedInstance", "memcached"),
        metadata_shared_secret=obj.secret("metadataSharedSecret"),
        api=parse_template(obj.obj("apiServiceTemplate"), catalog),
        scheduler=parse_template(obj.obj("schedulerServiceTemplate"), catalog),
        metadata=parse_template(obj.obj("metadataServiceTemplate"), catalog, enabled=True),
        cells=tuple(cells),
    )
    obj.close()
    _check_cells(obj, nova)
    _check_bus_clusters(obj, nova)
    return nova


def _check_cells(obj: Obj, nova: Nova) -> None:
    """The nova-operator webhook rules that span cells."""
    ctx, cells_path = obj.ctx, obj.at("cellTemplates")
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
            (*obj.path, "metadataServiceTemplate", "enabled"),
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


def _check_bus_clusters(obj: Obj, nova: Nova) -> None:
    """A queue type belongs to a RabbitMQ cluster: buses on one cluster must agree on it."""
    buses: list[tuple[Path, MessageBus]] = [((*obj.path, "messagingBus"), nova.messaging_bus)]
    buses += [((*obj.path, "cellTemplates", c.name, "messagingBus"), c.messaging_bus)
              for c in nova.cells if not c.is_cell0]
    if nova.notifications_bus is not None:
        buses.append(((*obj.path, "notificationsBus"), nova.notifications_bus))
    first: dict[str, tuple[Path, MessageBus]] = {}
    for path, bus in buses:
        seen_path, seen = first.setdefault(bus.cluster, (path, bus))
        if seen.queue_type is not bus.queue_type:
            where = format_path((*seen_path, "queueType"), project=False)
            obj.ctx.problem(
                (*path, "queueType"),
                f"{bus.queue_type.value} differs from {seen.queue_type.value}, the queue type of cluster "
                f"{bus.cluster} at {where}; a cluster has one queue type: set the same on both",
            )
