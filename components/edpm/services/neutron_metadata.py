"""neutron-metadata: the OVN metadata agent, laid out as edpm-ansible does (its
config directory with upstream's defaults, rootwrap's config, nova's
05-nova-metadata.conf, the OVN database's 10-neutron-metadata.conf; the kolla
config, the haproxy wrapper and its kill script) and run as Quadlet units.

It reaches nova's metadata service through the control plane's
`*-metadata-neutron-config` (the shared secret) and OVN through
dataplane.ovn.sbConnection.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.edpm.context import NodeSetContext
from components.edpm.service import EdpmService, RunInputs
from components.render import agent_layout, neutron_metadata_agent_files, neutron_metadata_extra_files
from components.settings import NEUTRON_METADATA, Node, Ovn
from components.settings.agentvars import IMAGE as AGENT_IMAGE_VAR

NAME = NEUTRON_METADATA  # named with the settings, which read its customServiceConfig and dataplane.ovn


@dataclass(frozen=True)
class NeutronMetadataAgent:
    """The stack's inputs of each node's neutron-metadata service."""

    image: str  # images.neutronMetadataAgent; a node's ansibleVars may name another, as upstream
    ovn: Ovn | None  # dataplane.ovn: the OVN southbound database


def _node_inputs(context: NodeSetContext, node: Node) -> RunInputs:
    node_set = context.node_set
    configs = context.stack.control_plane.metadata_configs
    source = None if None in configs else node.cell
    where = f"openstack-nova:dataplane.nodeSets.{node_set.name}.services"
    if source not in configs:
        raise pulumi.RunError(
            f"{where}: {NAME} needs a metadata service for {node.name}; enable "
            f"nova.metadataServiceTemplate or nova.cellTemplates.{node.cell}.metadataServiceTemplate")
    agent = context.stack.neutron_metadata
    if agent.ovn is None:
        raise pulumi.RunError(f"{where}: {NAME} needs the OVN southbound database of dataplane.ovn.sbConnection")
    layout = agent_layout(node_set, node, agent.image)
    secret_extra = neutron_metadata_extra_files(node_set, node, secret=True)
    metadata = configs[source]
    if secret_extra:
        metadata = metadata.apply(lambda files: {**files, **secret_extra})
    # Shown in preview line by line: all but nova's 05-nova-metadata.conf (the shared secret)
    # and snippets that set secret options.
    public = {**neutron_metadata_agent_files(layout, agent.ovn), **neutron_metadata_extra_files(node_set, node)}
    return RunInputs(files=metadata, public_files=public,
                     variables=context.secret_file_vars(node, "edpm_neutron_metadata_secret_files", list(secret_extra)),
                     default_host_vars={AGENT_IMAGE_VAR: agent.image})


SERVICE = EdpmService(name=NAME, playbook="neutron-metadata.yml", stop_playbook="neutron-metadata-stop.yml",
                      node_inputs=_node_inputs, order=30, default=True)
