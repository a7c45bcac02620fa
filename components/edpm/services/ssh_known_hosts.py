"""ssh-known-hosts: every node gets the host keys of every node of the stack (a
managed block of /etc/ssh/ssh_known_hosts), so that computes verify each other
when they migrate. The keys are those the stack trusts: each node set's
nodeTemplate.knownHostsFile, which Ansible verifies the nodes against."""

from __future__ import annotations

from components.edpm.context import NodeSetContext, StackContext
from components.edpm.service import EdpmService, RunInputs
from components.render import SSH_KNOWN_HOSTS_BLOCK, known_hosts_block
from components.settings import Node, ServiceSpec

NAME = "ssh-known-hosts"


def _stack(stack: StackContext) -> str:
    """The host keys of every node of the stack."""
    return known_hosts_block(stack.settings.dataplane.node_sets)


def _node_inputs(context: NodeSetContext, _node: Node) -> RunInputs:
    return RunInputs(public_files={SSH_KNOWN_HOSTS_BLOCK: context.stack})


SPEC = ServiceSpec(name=NAME, playbook="ssh-known-hosts.yml", order=10, default=True, shares_known_hosts=True)
SERVICE = EdpmService(SPEC, stack=_stack, node_inputs=_node_inputs)
