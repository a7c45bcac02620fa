"""Per-node extra config files for EDPM services (customServiceConfig of node sets and nodes).

The node set's snippet and the node's own go to separate files, so that
oslo.config layers them per option (node wins) instead of one replacing the
other. Names follow the EDPM contract: nova loads only `*nova*.conf` sorting
after 02-; the neutron metadata role copies only `*metadata*conf`.
"""

from __future__ import annotations

from collections.abc import Iterable

from components.settings import Node, NodeSet
from components.settings.knownhosts import lookup_name

NOVA_EXTRA = "25-nova-extra.conf"
NOVA_EXTRA_HOST = "26-nova-extra-host.conf"
NEUTRON_METADATA_EXTRA = "25-neutron-metadata-extra.conf"
NEUTRON_METADATA_EXTRA_HOST = "26-neutron-metadata-extra-host.conf"
SSH_KNOWN_HOSTS_BLOCK = "ssh_known_hosts"


def _files(pairs: list[tuple[str, str, bool]], secret: bool) -> dict[str, str]:
    return {name: text if text.endswith("\n") else text + "\n"
            for name, text, is_secret in pairs if text.strip() and is_secret == secret}


def nova_extra_files(node_set: NodeSet, node: Node, *, secret: bool = False) -> dict[str, str]:
    """Extra nova-compute snippets for `node`, those that set secret options or the
    others; empty snippets produce no file."""
    set_config, node_config = node_set.custom_service_config, node.custom_service_config
    return _files(
        [
            (NOVA_EXTRA, set_config.nova, set_config.nova_secret),
            (NOVA_EXTRA_HOST, node_config.nova, node_config.nova_secret),
        ],
        secret,
    )


def neutron_metadata_extra_files(node_set: NodeSet, node: Node, *, secret: bool = False) -> dict[str, str]:
    """Extra neutron metadata agent snippets for `node`, secret ones or the others."""
    set_config, node_config = node_set.custom_service_config, node.custom_service_config
    return _files(
        [
            (NEUTRON_METADATA_EXTRA, set_config.neutron_metadata, set_config.neutron_metadata_secret),
            (NEUTRON_METADATA_EXTRA_HOST, node_config.neutron_metadata, node_config.neutron_metadata_secret),
        ],
        secret,
    )


def known_hosts_block(node_sets: Iterable[NodeSet]) -> str:
    """Every node's host keys under each name a peer reaches it by (host name,
    node name, address; `[name]:port` off port 22): the block the
    ssh-known-hosts service keeps in each node's /etc/ssh/ssh_known_hosts."""
    lines: list[str] = []
    for node_set in node_sets:
        port = node_set.node_template.ansible_port
        for node in node_set.nodes:
            names = dict.fromkeys((node.host_name, node.name, node.ansible_host))
            lines.extend(f"{','.join(lookup_name(n, port) for n in names)} {key}" for key in node.host_keys)
    return "".join(line + "\n" for line in sorted(lines))
