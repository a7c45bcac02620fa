"""`EdpmNodeSet`: the EDPM nodes of one node set and the services run on them.

One `PlaybookRun` per node per service, in the node set's service order, so a
change re-runs Ansible exactly on the nodes whose files change. What each
service's run gets is the service's own (components/edpm/services/): the node
set knows none of them by name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import TypeVar

import pulumi
import pulumi_kubernetes as k8s

from components import k8s as kube
from components.ansible_runner.playbook import PlaybookRun
from components.edpm import registry
from components.edpm.context import ControlPlaneFiles, NodeSetContext, StackInputs
from components.edpm.marker import MARKER
from components.edpm.service import EdpmService
from components.edpm.services.neutron_metadata import NeutronMetadataAgent
from components.generated import GeneratedSSHKey
from components.libvirt import LibvirtFiles
from components.mountedfiles import NodeSetFiles, no_files
from components.render import names
from components.settings import CustomService, Node, NodeSet, Settings
from components.settings.knownhosts import lookup_name

T = TypeVar("T")

CELL_IS_PINNED = (
    "nova cannot move a compute between cells: remove the node from the stack config and run "
    "`pulumi up` (its services are stopped and its compute service goes away), then add it back "
    "with its new cell."
)


class NovaMigrationSSHKey(pulumi.ComponentResource):
    """The key pair computes use to reach each other for migration, published as
    the `nova-migration-ssh-key` Secret (keys ssh-privatekey, ssh-publickey)."""

    private_key: pulumi.Output[str]
    public_key: pulumi.Output[str]

    def __init__(self, name: str, settings: Settings, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("openstack-nova:dataplane:NovaMigrationSSHKey", name, {}, opts)
        given = settings.dataplane.migration_ssh_key
        if given is not None:
            self.private_key = pulumi.Output.secret(given.private_key.reveal())
            self.public_key = pulumi.Output.from_input(given.public_key)
        else:
            generated = GeneratedSSHKey(f"{name}-generated", comment="nova-migration",
                                        opts=pulumi.ResourceOptions(parent=self))
            self.private_key, self.public_key = generated.private_key, generated.public_key
        self.secret = k8s.core.v1.Secret(
            name,
            metadata=kube.object_meta(names.MIGRATION_SSH_KEY_SECRET, settings.namespace,
                                          kube.labels("nova-compute"), settings.kubernetes.skip_await),
            string_data={"ssh-privatekey": self.private_key, "ssh-publickey": self.public_key},
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({})


def node_known_hosts(node: Node, port: int) -> str:
    """The known_hosts lines of the keys the node set trusts for `node`."""
    name = lookup_name(node.ansible_host, port)
    return "".join(f"{name} {key}\n" for key in node.host_keys)


def _read(path: str | None) -> str:
    return Path(path).read_text() if path else ""


class EdpmNodeSet(pulumi.ComponentResource):
    TYPE = "openstack-nova:dataplane:EdpmNodeSet"

    deployed_hashes: pulumi.Output[dict[str, dict[str, str]]]
    """Per node and service, the hash of the files its last run deployed."""
    in_sync: pulumi.Output[dict[str, dict[str, bool]]]
    """Per node and service, False once a refresh found the node drifted."""

    def __init__(
        self,
        name: str,
        node_set: NodeSet,
        control_plane: ControlPlaneFiles,
        custom_services: Mapping[str, CustomService],
        known_hosts_block: str,
        neutron_metadata: NeutronMetadataAgent,
        *,
        compute_image: str,
        libvirt: LibvirtFiles,
        mounted: NodeSetFiles | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """The stack's inputs of the services (see StackInputs): `known_hosts_block`, the host keys of
        every node of the stack; `compute_image`, the nova_compute container's image (images.compute);
        `libvirt`, what the libvirt service gets from the stack (see LibvirtSecrets);
        `mounted`: the files its extraMounts give its services (see EdpmMountedObjects)."""
        super().__init__(self.TYPE, name, {}, opts)
        self._node_set = node_set
        stack = StackInputs(control_plane=control_plane, known_hosts_block=known_hosts_block,
                            neutron_metadata=neutron_metadata, compute_image=compute_image, libvirt=libvirt)
        self._context = NodeSetContext(node_set, stack, mounted or no_files())
        template = node_set.node_template
        key = (template.ssh_private_key.reveal() if template.ssh_private_key is not None
               else _read(template.ssh_private_key_file))
        self._ssh_key = pulumi.Output.secret(key)
        services = registry.of_node_set(node_set.services, custom_services)
        # runs[node][service]: the node's marker first, then its services in order, each after the one before
        self.runs: dict[str, dict[str, PlaybookRun]] = {}
        for node in node_set.nodes:
            previous: PlaybookRun | None = None
            for service in (MARKER, *services):
                previous = self._run(node, service, previous)
                self.runs.setdefault(node.name, {})[service.name] = previous
        self.deployed_hashes = self._per_run(lambda r: r.deployed_hash, include_marker=False)
        self.in_sync = self._per_run(lambda r: r.in_sync, include_marker=True)
        self.register_outputs({"deployedHashes": self.deployed_hashes, "inSync": self.in_sync})

    def _per_run(self, output: Callable[[PlaybookRun], pulumi.Output[T]], *,
                 include_marker: bool) -> pulumi.Output[dict[str, dict[str, T]]]:
        """One output of every run, as {node: {service: value}}: one Output.all over the whole
        node set, not one per node (each Output costs the program a little)."""
        keys = [(node, s) for node, runs in self.runs.items() for s in runs if include_marker or s != MARKER.name]

        def nest(values: list[T]) -> dict[str, dict[str, T]]:
            nested: dict[str, dict[str, T]] = {node: {} for node in self.runs}
            for (node, service), value in zip(keys, values, strict=True):
                nested[node][service] = value
            return nested

        return pulumi.Output.all(*[output(self.runs[n][s]) for n, s in keys]).apply(nest)

    @property
    def node_set_name(self) -> str:
        return self._node_set.name

    def nodes_of_cell(self, cell: str) -> list[Node]:
        return [n for n in self._node_set.nodes if n.cell == cell]

    def _run(self, node: Node, service: EdpmService, after: PlaybookRun | None) -> PlaybookRun:
        """`service` on `node`, once `after` has run."""
        inputs = service.node_inputs(self._context, node)
        template = self._node_set.node_template
        return PlaybookRun(
            f"{node.name}-{service.name}",
            playbook=service.playbook,
            host={"name": node.name, "address": node.ansible_host, "port": template.ansible_port,
                  "user": template.ansible_user},
            host_vars={**(inputs.default_host_vars or {}), **template.ansible_vars, **node.ansible_vars},
            ssh_private_key=self._ssh_key,
            # the node's own keys: trusting another node re-runs no service of this one
            known_hosts=node_known_hosts(node, template.ansible_port),
            files=inputs.files,
            public_files=inputs.public_files,
            variables=inputs.variables,
            pinned={"cell": node.cell},
            pinned_reason=CELL_IS_PINNED,
            stop_playbook=service.stop_playbook,
            timeouts=asdict(template.timeouts),
            known_hosts_file=template.known_hosts_file,
            node_set=self._node_set.name,
            parent_type=self.TYPE,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[after] if after else []),
        )
