"""nova.conf snippets and the files of each nova service's config Secret."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from components.settings import CELL0, Cell, Nova, ServiceTemplate
from components.settings.releases import NovaRelease, WsgiApp

from . import kolla, names
from .credentials import Credentials, database_url
from .engine import render
from .scope import NovaScope

NOVA_CONF = "01-nova.conf"
OVERRIDE_CONF = "02-nova-override.conf"
BLANK_CONF = "nova-blank.conf"
HOST_SPECIFIC_CONF = "02-nova-host-specific.conf"
# the other files of a cell's compute config Secret
_COMPUTE_KOLLA = "nova-compute-config.json"
_BUS_USER = "rabbitmq_user_name"
_NOTIFICATIONS_USER = "notification_rabbitmq_user_name"


class NovaService(StrEnum):
    """A control-plane service; the value is its binary name."""

    API = "nova-api"
    SCHEDULER = "nova-scheduler"
    METADATA = "nova-metadata"
    CONDUCTOR = "nova-conductor"
    NOVNCPROXY = "nova-novncproxy"


HTTPD_COMMAND = "/usr/sbin/httpd -DFOREGROUND"
# Where kolla puts the WSGI entry files; mod_wsgi loads them from here.
WSGI_DIR = "/var/www/cgi-bin/nova"


@dataclass(frozen=True)
class Runtime:
    """How a service runs in its pod: kolla's command, and for the WSGI APIs where the
    release defines the application httpd + mod_wsgi serve."""

    command: str
    port: int | None = None
    wsgi_app: Callable[[NovaRelease], WsgiApp] | None = None


RUNTIMES = {
    NovaService.API: Runtime(HTTPD_COMMAND, names.API_PORT, lambda release: release.api),
    NovaService.METADATA: Runtime(HTTPD_COMMAND, names.METADATA_PORT, lambda release: release.metadata),
    NovaService.SCHEDULER: Runtime("/usr/bin/nova-scheduler"),
    NovaService.CONDUCTOR: Runtime("/usr/bin/nova-conductor"),
    # the console page and its scripts, from the image's noVNC
    NovaService.NOVNCPROXY: Runtime("/usr/bin/nova-novncproxy --web /usr/share/novnc/", names.NOVNCPROXY_PORT),
}


@dataclass(frozen=True)
class Placement:
    """Where a service runs, and which service template of the settings configures it there:
    `top_level` picks it from nova's settings, `per_cell` from a cell; None: it does not run there."""

    top_level: Callable[[Nova], ServiceTemplate] | None = None
    per_cell: Callable[[Cell], ServiceTemplate] | None = None


# The one map from a service to its service template (nova.<x>ServiceTemplate,
# nova.cellTemplates.<cell>.<x>ServiceTemplate): its config files and its pods read it through
# service_template.
SERVICE_TEMPLATES: dict[NovaService, Placement] = {
    NovaService.API: Placement(top_level=lambda nova: nova.api),
    NovaService.SCHEDULER: Placement(top_level=lambda nova: nova.scheduler),
    NovaService.METADATA: Placement(top_level=lambda nova: nova.metadata, per_cell=lambda cell: cell.metadata),
    NovaService.CONDUCTOR: Placement(per_cell=lambda cell: cell.conductor),
    NovaService.NOVNCPROXY: Placement(per_cell=lambda cell: cell.novncproxy),
}


def service_template(scope: NovaScope, service: NovaService, cell: Cell | None) -> ServiceTemplate:
    """The template of `service` at the top level (`cell` None) or in `cell`; ValueError
    where the service does not run."""
    placement = SERVICE_TEMPLATES[service]
    if cell is None:
        if placement.top_level is None:
            raise ValueError(f"{service} runs in a cell; pass the cell")
        return placement.top_level(scope.nova)
    if placement.per_cell is None:
        raise ValueError(f"{service} is not a per-cell service")
    return placement.per_cell(cell)


@dataclass(frozen=True)
class _Wiring:
    """Which bus and databases a service talks to."""

    transport_url: str
    quorum_queues: bool  # the bus's cluster serves quorum queues
    database: str | None
    api_database: str | None


def _cell_database(scope: NovaScope, cell: Cell, creds: Credentials) -> str:
    return database_url(
        cell.database.account,
        creds.db_password(cell.name),
        cell.database.instance,
        scope.namespace,
        names.database_name(cell.name),
    )


def _wiring(scope: NovaScope, service: NovaService, cell: Cell | None, creds: Credentials) -> _Wiring:
    ns = scope.nova
    api_db = database_url(
        ns.api_database.account,
        creds.api_db_password,
        ns.api_database.instance,
        scope.namespace,
        names.database_name(None),
    )
    if cell is None:  # api, scheduler, top-level metadata: API bus, API database, cell0's database
        return _Wiring(creds.api_transport_url, ns.messaging_bus.quorum_queues,
                       _cell_database(scope, ns.cell(CELL0), creds), api_db)
    cell_db = _cell_database(scope, cell, creds)
    # cell0's conductor is the superconductor: on the API bus, with API access. A cell's metadata
    # service answers from the cell's database alone (local_metadata_per_cell), as upstream's
    needs_api_db = service == NovaService.CONDUCTOR and (cell.is_cell0 or cell.has_api_access)
    return _Wiring(creds.transport_url(cell.name), cell.messaging_bus.quorum_queues, cell_db,
                   api_db if needs_api_db else None)


def _keystone(scope: NovaScope, creds: Credentials) -> dict[str, str]:
    keystone = scope.nova.keystone
    return {
        "internal_url": keystone.internal_url,
        "public_url": keystone.public_url,
        "region": keystone.region,
        "username": keystone.service_user,
        "password": creds.keystone_password,
    }


def _nova_conf(scope: NovaScope, service: str, creds: Credentials, *, quorum_queues: bool, **context: Any) -> str:
    """01-nova.conf of `service`; `quorum_queues`: its RPC bus serves quorum queues (upstream
    takes this from the bus's TransportURL, so notifications follow the RPC bus)."""
    if (scope.nova.notifications_bus is None) != (creds.notification_transport_url is None):
        raise ValueError("notification_transport_url must be given exactly when nova.notificationsBus is set")
    defaults: dict[str, Any] = {
        "database": None,
        "api_database": None,
        "notification_transport_url": creds.notification_transport_url,
        "local_metadata_per_cell": False,
        "metadata_shared_secret": "",
        "novncproxy_port": names.NOVNCPROXY_PORT,
        "novncproxy_base_url": None,
    }
    return render(
        "nova.conf.j2",
        **{**defaults, **context},
        service=service,
        release=scope.images.release,
        quorum_queues=quorum_queues,
        keystone=_keystone(scope, creds),
        memcached_servers=names.memcached_servers(scope.nova.memcached_instance, scope.namespace),
    )


def service_config_files(
    scope: NovaScope, service: NovaService, cell: Cell | None, creds: Credentials
) -> dict[str, str]:
    """The `<service>-config-data` Secret of a control-plane service."""
    template = service_template(scope, service, cell)
    if not template.enabled:
        where = f"cell {cell.name}" if cell else "the top level"
        raise ValueError(f"{service} is disabled at {where}")
    wiring = _wiring(scope, service, cell, creds)
    conf = _nova_conf(
        scope,
        service.value,
        creds,
        transport_url=wiring.transport_url,
        quorum_queues=wiring.quorum_queues,
        database=wiring.database,
        api_database=wiring.api_database,
        local_metadata_per_cell=cell is not None,
        metadata_shared_secret=creds.metadata_shared_secret,
    )
    uses_db = wiring.database is not None or wiring.api_database is not None
    files = {NOVA_CONF: conf, BLANK_CONF: ""}
    custom = template.custom_service_config
    if custom.strip():
        files[OVERRIDE_CONF] = custom if custom.endswith("\n") else custom + "\n"
    if uses_db:
        files["my.cnf"] = render("my.cnf.j2")
    runtime = RUNTIMES[service]
    if runtime.wsgi_app:
        files.update(_wsgi_files(scope, service, runtime.port, runtime.wsgi_app(scope.images.release)))
    files["config.json"] = kolla.service_config_json(
        runtime.command, uses_database=uses_db, wsgi=_wsgi_names(service) if runtime.wsgi_app else None)
    return files


def _wsgi_names(service: NovaService) -> kolla.WsgiFiles:
    return kolla.WsgiFiles(httpd_conf="httpd.conf", vhost_conf=f"10-{service.value}-wsgi.conf",
                           entry=f"{service.value}-wsgi", entry_dir=WSGI_DIR)


def _wsgi_files(scope: NovaScope, service: NovaService, port: int | None, app: WsgiApp) -> dict[str, str]:
    """httpd.conf, the vhost and the WSGI entry file of a WSGI API serving `app` on `port`."""
    wsgi = _wsgi_names(service)
    return {
        wsgi.httpd_conf: render("httpd.conf.j2", service=service.value),
        wsgi.vhost_conf: render("nova-wsgi.conf.j2", service=service.value, port=port,
                                timeout=scope.nova.api_timeout, script=f"{WSGI_DIR}/{wsgi.entry}",
                                script_dir=WSGI_DIR),
        wsgi.entry: render("nova-wsgi.py.j2", service=service.value, app=app),
    }


def novncproxy_base_url(scope: NovaScope, cell: Cell) -> str | None:
    """The URL computes of `cell` hand to clients for consoles; None without a proxy."""
    if not cell.novncproxy.enabled:
        return None
    host = names.service_host(names.novncproxy_service(cell.name), scope.namespace)
    return f"http://{host}:{names.NOVNCPROXY_PORT}/vnc_lite.html"


def compute_config_files(scope: NovaScope, cell: Cell, creds: Credentials) -> dict[str, str]:
    """The `nova-<cell>-compute-config` Secret for the cell's EDPM computes."""
    if cell.is_cell0:
        raise ValueError("cell0 has no computes")
    conf = _nova_conf(
        scope,
        "nova-compute",
        creds,
        transport_url=creds.transport_url(cell.name),
        quorum_queues=cell.messaging_bus.quorum_queues,
        novncproxy_base_url=novncproxy_base_url(scope, cell),
    )
    files = {
        NOVA_CONF: conf,
        BLANK_CONF: "",
        _COMPUTE_KOLLA: kolla.compute_config_json(),
        # lets the bus owner see which users are in use, as nova-operator does
        _BUS_USER: cell.messaging_bus.user,
    }
    if scope.nova.notifications_bus is not None:
        files[_NOTIFICATIONS_USER] = scope.nova.notifications_bus.user
    return files


def compute_config_names(scope: NovaScope) -> frozenset[str]:
    """The names of `compute_config_files`' files, known before any is rendered."""
    names = {NOVA_CONF, BLANK_CONF, _COMPUTE_KOLLA, _BUS_USER}
    return frozenset({*names, _NOTIFICATIONS_USER} if scope.nova.notifications_bus is not None else names)


def host_specific_conf(my_ip: str, host: str, *, tls: bool) -> str:
    """02-nova-host-specific.conf: the node's address (for $my_ip), its nova host name and,
    as upstream's role, how it migrates: over libvirt's TLS listener with native TLS when
    its node set has TLS, else as 01-nova.conf says (qemu+ssh)."""
    return render("nova-host-specific.conf.j2", my_ip=my_ip, host=host, tls=tls)
