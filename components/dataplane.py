"""`EdpmNodeSet`: the EDPM nodes of one node set and the services run on them."""

from __future__ import annotations

import json
from pathlib import Path

import pulumi

from components.playbook import PlaybookRun
from components.settings import Node, NodeSet


def _read(path: str | None) -> str:
    return Path(path).read_text() if path else ""


class EdpmNodeSet(pulumi.ComponentResource):
    deployed_hashes: pulumi.Output[dict[str, str]]
    """Per node, the hash of what its last run deployed."""

    def __init__(self, name: str, node_set: NodeSet, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("openstack-nova:dataplane:EdpmNodeSet", name, {}, opts)
        template = node_set.node_template
        key = (template.ssh_private_key.reveal() if template.ssh_private_key is not None
               else _read(template.ssh_private_key_file))
        self._ssh_key = pulumi.Output.secret(key)
        self._known_hosts = _read(template.known_hosts_file)
        self.runs: dict[str, PlaybookRun] = {}
        for node in node_set.nodes:
            self.runs[node.name] = self._marker(node_set, node)
        self.deployed_hashes = pulumi.Output.all(
            **{n: r.deployed_hash for n, r in self.runs.items()})
        self.register_outputs({"deployedHashes": self.deployed_hashes})

    def _host(self, node_set: NodeSet, node: Node) -> dict[str, object]:
        template = node_set.node_template
        return {"name": node.name, "address": node.ansible_host, "port": template.ansible_port,
                "user": template.ansible_user}

    def _host_vars(self, node_set: NodeSet, node: Node) -> dict[str, object]:
        """Inventory variables: the node set's, then the node's own (node wins)."""
        return {**node_set.node_template.ansible_vars, **node.ansible_vars}

    def _marker(self, node_set: NodeSet, node: Node) -> PlaybookRun:
        """Records on the node which node set and cell manage it."""
        marker = {"node": node.name, "hostName": node.host_name, "nodeSet": node_set.name, "cell": node.cell}
        return PlaybookRun(
            f"{node.name}-marker",
            playbook="node-marker.yml",
            host=self._host(node_set, node),
            ssh_private_key=self._ssh_key,
            known_hosts=self._known_hosts,
            public_files={"edpm-node.json": json.dumps(marker, indent=2) + "\n"},
            host_vars=self._host_vars(node_set, node),
            opts=pulumi.ResourceOptions(parent=self),
        )
