"""05-nova-metadata.conf: how the neutron metadata agent on EDPM nodes reaches nova."""

from __future__ import annotations

from components.settings import Cell

from . import names
from .engine import render
from .scope import NovaScope

METADATA_CONF = "05-nova-metadata.conf"


def metadata_host(scope: NovaScope, cell: Cell | None) -> str:
    service = names.metadata_service(cell.name if cell else None)
    return names.service_host(service, scope.namespace)


def metadata_neutron_config(scope: NovaScope, cell: Cell | None, shared_secret: str) -> dict[str, str]:
    """The `*-metadata-neutron-config` Secret for the top-level (None) or a cell's metadata."""
    text = render(
        "neutron-metadata.conf.j2",
        host=metadata_host(scope, cell),
        port=names.METADATA_PORT,
        protocol="http",  # no TLS inside the cluster yet
        shared_secret=shared_secret,
    )
    return {METADATA_CONF: text}
