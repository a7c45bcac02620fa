"""The node marker: the first run on every node, which records there which node
set and cell manage it. No node set lists it, and it has nothing to stop."""

from __future__ import annotations

import json

from components.settings import Node, ServiceSpec

from .context import NodeSetContext
from .service import EdpmService, RunInputs


def _node_inputs(context: NodeSetContext, node: Node) -> RunInputs:
    marker = {"node": node.name, "hostName": node.host_name, "nodeSet": context.node_set.name, "cell": node.cell}
    return RunInputs(public_files={"edpm-node.json": json.dumps(marker, indent=2) + "\n"})


MARKER = EdpmService(ServiceSpec(name="marker", playbook="node-marker.yml"), node_inputs=_node_inputs)
