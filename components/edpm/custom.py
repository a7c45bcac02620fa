"""A service of `dataplane.customServices`: the stack's own playbook and files."""

from __future__ import annotations

from typing import TYPE_CHECKING

from components.settings import CustomService, Node, ServiceSpec

from .service import EdpmService, RunInputs

if TYPE_CHECKING:
    from .context import NodeSetContext


def custom_service(service: CustomService) -> EdpmService:
    """Its files go to the playbook as they are, shown in preview; its name tells the playbook
    where they belong (custom-files.yml: /var/lib/openstack/custom/<name>/)."""

    def node_inputs(_context: NodeSetContext, _node: Node) -> RunInputs:
        return RunInputs(public_files=dict(service.files), variables={"edpm_service_name": service.name})

    return EdpmService(ServiceSpec(name=service.name, playbook=service.playbook), node_inputs=node_inputs)
