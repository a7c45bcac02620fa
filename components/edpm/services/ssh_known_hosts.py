"""ssh-known-hosts: every node gets the host keys of every node of the stack (a
managed block of /etc/ssh/ssh_known_hosts), so that computes verify each other
when they migrate. The keys are those the stack trusts: each node set's
nodeTemplate.knownHostsFile, which Ansible verifies the nodes against."""

from __future__ import annotations

from components.edpm.context import NodeSetContext
from components.edpm.service import EdpmService, RunInputs
from components.render import SSH_KNOWN_HOSTS_BLOCK
from components.settings import Node

NAME = "ssh-known-hosts"


def _node_inputs(context: NodeSetContext, _node: Node) -> RunInputs:
    return RunInputs(public_files={SSH_KNOWN_HOSTS_BLOCK: context.stack.known_hosts_block})


SERVICE = EdpmService(name=NAME, playbook="ssh-known-hosts.yml", node_inputs=_node_inputs, order=10, default=True,
                      shares_known_hosts=True)
