"""A test-only built-in EDPM service, shaped as a module of components/edpm/services/ is:
`motd` gives each node a message of the day through playbook motd.yml (which the tests never run)."""

from __future__ import annotations

from components.edpm.context import NodeSetContext
from components.edpm.service import EdpmService, RunInputs
from components.settings import Node

NAME = "motd"


def _node_inputs(context: NodeSetContext, node: Node) -> RunInputs:
    return RunInputs(public_files={"motd": f"{node.host_name}, node set {context.node_set.name}\n"})


# between neutron-metadata (30) and libvirt (40), in upstream's default list
SERVICE = EdpmService(name=NAME, playbook="motd.yml", node_inputs=_node_inputs, order=35, default=True)
