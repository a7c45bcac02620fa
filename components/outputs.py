"""The stack outputs a user reads after `pulumi up`: where to reach Keystone, nova's API and
each cell's noVNC proxy, and which node of which node set runs which services in which cell.

Pure functions of the settings, exported by `export`; `tools/up` prints them as the table
at the end of `make up`.
"""

from __future__ import annotations

import pulumi

from components.render import compute_endpoints, novncproxy_base_url
from components.settings import Settings


def endpoints(settings: Settings) -> dict[str, object]:
    """The public URLs a user points a client at: Keystone, nova's API and, per cell with a
    proxy, the noVNC console page."""
    proxies = {cell.name: url for cell in settings.nova.cells
               if not cell.is_cell0 and (url := novncproxy_base_url(settings, cell)) is not None}
    return {
        "keystone": settings.nova.keystone.public_url,
        "compute": compute_endpoints(settings.namespace)["public"],
        "novncproxy": proxies,
    }


def nodes(settings: Settings) -> dict[str, dict[str, dict[str, object]]]:
    """{node set: {node: {cell, hostName, services}}}, the services in the order they run."""
    return {
        node_set.name: {
            node.name: {"cell": node.cell, "hostName": node.host_name, "services": list(node_set.services)}
            for node in node_set.nodes
        }
        for node_set in settings.dataplane.node_sets
    }


def export(settings: Settings) -> None:
    pulumi.export("endpoints", endpoints(settings))
    pulumi.export("nodes", nodes(settings))
