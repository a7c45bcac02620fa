"""neutron-metadata: the OVN metadata agent, laid out as edpm-ansible does (its
config directory with upstream's defaults, rootwrap's config, nova's
05-nova-metadata.conf, the OVN database's 10-neutron-metadata.conf; the kolla
config, the haproxy wrapper and its kill script) and run as Quadlet units.

It reaches nova's metadata service through the control plane's
`*-metadata-neutron-config` (the shared secret) and OVN through
dataplane.ovn.sbConnection.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pulumi

from components.edpm.context import NodeSetContext, StackContext, with_secret_files
from components.edpm.service import EdpmService, RunInputs, derive, merged
from components.render import agent_layout, names, neutron_metadata_agent_files, neutron_metadata_extra_files
from components.settings import (
    INTERNAL,
    METALLB_POOL,
    NEUTRON_METADATA,
    Node,
    Ovn,
    ServiceSpec,
    ServiceTemplate,
    Settings,
    override_path,
)
from components.settings.agentvars import IMAGE as AGENT_IMAGE_VAR
from components.settings.errors import Path

NAME = NEUTRON_METADATA  # named with the settings, which read its customServiceConfig and dataplane.ovn
SECRET_FILES_VAR = "edpm_neutron_metadata_secret_files"


@dataclass(frozen=True)
class NeutronMetadataAgent:
    """The stack's inputs of each node's neutron-metadata service."""

    image: str  # images.neutronMetadataAgent; a node's ansibleVars may name another, as upstream
    ovn: Ovn | None  # dataplane.ovn: the OVN southbound database
    # the control plane's metadata configs: None for the top-level metadata service, else per cell
    metadata_configs: Mapping[str | None, pulumi.Output[dict[str, str]]]


def _stack(stack: StackContext) -> NeutronMetadataAgent:
    settings = stack.settings
    return NeutronMetadataAgent(image=settings.images.neutron_metadata_agent, ovn=settings.dataplane.ovn,
                                metadata_configs=stack.control_plane.metadata_configs)


def _check(settings: Settings) -> Iterator[tuple[Path, str]]:
    """Each node that runs the agent reaches a metadata service: the top-level one, else its cell's;
    and reaches it from the data plane, through a LoadBalancer Service, as upstream's nodes do."""
    nova = settings.nova
    cells = {c.name: c for c in nova.cells}
    exposed: set[str | None] = set()  # the metadata services whose Service was checked
    for node_set in settings.dataplane.node_sets:
        if NAME not in node_set.services:
            continue
        for node in node_set.nodes:
            used: tuple[str | None, ServiceTemplate]
            if nova.metadata.enabled:
                used = (None, nova.metadata)
            else:
                cell = cells.get(node.cell)  # an unknown cell is a problem of its own
                if cell is None:
                    continue
                if not cell.metadata.enabled:
                    yield (("dataplane", "nodeSets", node_set.name, "services"),
                           f"{NAME} needs a metadata service for {node.name}; enable nova.metadataServiceTemplate "
                           f"or nova.cellTemplates.{node.cell}.metadataServiceTemplate")
                    continue
                used = (cell.name, cell.metadata)
            if used[0] not in exposed:
                exposed.add(used[0])
                yield from _reachable(settings, node_set.name, *used)


def _reachable(settings: Settings, node_set: str, cell: str | None,
               template: ServiceTemplate) -> Iterator[tuple[Path, str]]:
    kind = template.service(INTERNAL).type
    if template.service(INTERNAL).load_balancer:
        return
    host = names.service_host(names.metadata_service(cell), settings.namespace)
    yield ((*override_path(cell, "metadataServiceTemplate"), "spec", "type"),
           f"is {kind or 'ClusterIP (the default)'}, but the {NAME} agents of node set {node_set} reach this "
           f"metadata service as {host} from the data plane, which cannot reach a ClusterIP; set LoadBalancer, "
           f"with the pool of the nodes' network in metadata.annotations (e.g. {METALLB_POOL}: internalapi), "
           "as upstream exposes nova-metadata-internal")


def _node_inputs(context: NodeSetContext, node: Node) -> RunInputs:
    node_set = context.node_set
    agent: NeutronMetadataAgent = context.stack
    configs = agent.metadata_configs
    assert agent.ovn is not None, "the settings require dataplane.ovn.sbConnection for this service"
    layout = agent_layout(node_set, node, agent.image)
    secret_extra = neutron_metadata_extra_files(node_set, node, secret=True)
    metadata = configs[None if None in configs else node.cell]  # the settings checked it is there
    # Shown in preview line by line: all but nova's 05-nova-metadata.conf (the shared secret)
    # and snippets that set secret options.
    public = {**neutron_metadata_agent_files(layout, agent.ovn), **neutron_metadata_extra_files(node_set, node)}
    return RunInputs(files=derive(merged, metadata, secret_extra) if secret_extra else metadata,
                     public_files=public,
                     variables=with_secret_files(context.secret_file_names(node, SECRET_FILES_VAR), SECRET_FILES_VAR,
                                                 list(secret_extra)),
                     default_host_vars={AGENT_IMAGE_VAR: agent.image})


SPEC = ServiceSpec(name=NAME, playbook="neutron-metadata.yml", stop_playbook="neutron-metadata-stop.yml",
                   order=30, default=True, check=_check)
SERVICE = EdpmService(SPEC, stack=_stack, node_inputs=_node_inputs)
