"""05-nova-metadata.conf: how the neutron metadata agent on EDPM nodes reaches nova."""

from __future__ import annotations

from components.settings import Cell, Settings

from . import names
from .engine import render

METADATA_CONF = "05-nova-metadata.conf"


def metadata_host(settings: Settings, cell: Cell | None) -> str:
    service = names.metadata_service(cell.name if cell else None)
    return names.service_host(service, settings.namespace)


def metadata_neutron_config(settings: Settings, cell: Cell | None, shared_secret: str) -> dict[str, str]:
    """The `*-metadata-neutron-config` Secret for the top-level (None) or a cell's metadata."""
    text = render(
        "neutron-metadata.conf.j2",
        host=metadata_host(settings, cell),
        port=names.METADATA_PORT,
        protocol="http",  # no TLS inside the cluster yet
        shared_secret=shared_secret,
    )
    return {METADATA_CONF: text}
