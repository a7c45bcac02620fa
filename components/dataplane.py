"""`EdpmNodeSet`: the EDPM nodes of one node set and the services run on them.

One `PlaybookRun` per node per service, in the node set's service order, so a
change re-runs Ansible exactly on the nodes whose files change.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

import pulumi
import pulumi_kubernetes as k8s

from components import k8s as kube
from components.generated import GeneratedSSHKey
from components.playbook import PlaybookRun
from components.render import (
    HOST_SPECIFIC_CONF,
    SSH_KNOWN_HOSTS_BLOCK,
    agent_layout,
    host_specific_conf,
    libvirt_config_files,
    names,
    neutron_metadata_agent_files,
    neutron_metadata_extra_files,
    nova_extra_files,
)
from components.settings import (
    LIBVIRT,
    NEUTRON_METADATA,
    SSH_KNOWN_HOSTS,
    CustomService,
    Node,
    NodeSet,
    Ovn,
    Settings,
)
from components.settings.agentvars import IMAGE as AGENT_IMAGE_VAR

T = TypeVar("T")

CELL_IS_PINNED = (
    "nova cannot move a compute between cells: remove the node from the stack config and run "
    "`pulumi up` (its services are stopped and its compute service goes away), then add it back "
    "with its new cell."
)


@dataclass(frozen=True)
class ControlPlaneFiles:
    """What the control plane hands to the data plane (all secret)."""

    compute_configs: Mapping[str, pulumi.Output[dict[str, str]]]  # per cell
    metadata_configs: Mapping[str | None, pulumi.Output[dict[str, str]]]  # None: the top-level metadata
    migration_private_key: pulumi.Output[str]
    migration_public_key: pulumi.Output[str]


@dataclass(frozen=True)
class NeutronMetadataAgent:
    """The stack's inputs of each node's neutron-metadata service."""

    image: str  # images.neutronMetadataAgent; a node's ansibleVars may name another, as upstream
    ovn: Ovn | None  # dataplane.ovn: the OVN southbound database

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


def _read(path: str | None) -> str:
    return Path(path).read_text() if path else ""


class EdpmNodeSet(pulumi.ComponentResource):
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
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """`known_hosts_block`: the host keys of every node of the stack, for ssh-known-hosts."""
        super().__init__("openstack-nova:dataplane:EdpmNodeSet", name, {}, opts)
        self._node_set, self._control_plane, self._custom = node_set, control_plane, custom_services
        self._known_hosts_block = known_hosts_block
        self._agent = neutron_metadata
        self._nova_files: dict[str, pulumi.Output[dict[str, str]]] = {}
        template = node_set.node_template
        key = (template.ssh_private_key.reveal() if template.ssh_private_key is not None
               else _read(template.ssh_private_key_file))
        self._ssh_key = pulumi.Output.secret(key)
        # runs[node][service]: the node's marker first, then its services in order
        self.runs: dict[str, dict[str, PlaybookRun]] = {}
        for node in node_set.nodes:
            previous = self._marker(node)
            self.runs[node.name] = {"marker": previous}
            for service in node_set.services:
                previous = self._service(node, service, previous)
                self.runs[node.name][service] = previous
        self.deployed_hashes = self._per_run(lambda r: r.deployed_hash, include_marker=False)
        self.in_sync = self._per_run(lambda r: r.in_sync, include_marker=True)
        self.register_outputs({"deployedHashes": self.deployed_hashes, "inSync": self.in_sync})

    def _per_run(self, output: Callable[[PlaybookRun], pulumi.Output[T]], *,
                 include_marker: bool) -> pulumi.Output[dict[str, dict[str, T]]]:
        """One output of every run, as {node: {service: value}}: one Output.all over the whole
        node set, not one per node (each Output costs the program a little)."""
        keys = [(node, s) for node, runs in self.runs.items() for s in runs if include_marker or s != "marker"]

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

    def _run(self, node: Node, service: str, playbook: str, after: PlaybookRun | None, *,
             files: pulumi.Input[Mapping[str, str]] | None = None,
             public_files: Mapping[str, str] | None = None, stop_playbook: str | None = None,
             variables: Mapping[str, Any] | None = None,
             default_host_vars: Mapping[str, str] | None = None) -> PlaybookRun:
        """`default_host_vars`: the node's variables unless its ansibleVars set them (as upstream's
        inventory sets image variables)."""
        template = self._node_set.node_template
        return PlaybookRun(
            f"{node.name}-{service}",
            playbook=playbook,
            host={"name": node.name, "address": node.ansible_host, "port": template.ansible_port,
                  "user": template.ansible_user},
            host_vars={**(default_host_vars or {}), **template.ansible_vars, **node.ansible_vars},
            ssh_private_key=self._ssh_key,
            known_hosts=node.known_hosts,
            files=files,
            public_files=public_files,
            variables=variables,
            pinned={"cell": node.cell},
            pinned_reason=CELL_IS_PINNED,
            stop_playbook=stop_playbook,
            timeouts=asdict(template.timeouts),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[after] if after else []),
        )

    def _marker(self, node: Node) -> PlaybookRun:
        """Records on the node which node set and cell manage it."""
        marker = {"node": node.name, "hostName": node.host_name, "nodeSet": self._node_set.name, "cell": node.cell}
        return self._run(node, "marker", "node-marker.yml", None,
                         public_files={"edpm-node.json": json.dumps(marker, indent=2) + "\n"})

    def _service(self, node: Node, service: str, after: PlaybookRun) -> PlaybookRun:
        if service == "nova":
            return self._nova(node, after)
        if service == NEUTRON_METADATA:
            return self._neutron_metadata(node, after)
        if service == LIBVIRT:
            return self._run(node, service, "libvirt.yml", after, public_files=libvirt_config_files())
        if service == SSH_KNOWN_HOSTS:
            return self._run(node, service, "ssh-known-hosts.yml", after,
                             public_files={SSH_KNOWN_HOSTS_BLOCK: self._known_hosts_block})
        custom = self._custom[service]
        return self._run(node, service, custom.playbook, after, public_files=dict(custom.files),
                         variables={"edpm_service_name": service})

    def _secret_file_vars(self, node: Node, variable: str, names: list[str]) -> dict[str, Any]:
        """The role's list of secret file names, with `names` added (nothing when none)."""
        if not names:
            return {}
        given = {**self._node_set.node_template.ansible_vars, **node.ansible_vars}.get(variable) or []
        return {variable: sorted({*given, *names})}

    def _cell_files(self, cell: str) -> pulumi.Output[dict[str, str]]:
        """The secret files every compute of `cell` gets: one Output per cell, not per node."""
        if cell not in self._nova_files:
            cp = self._control_plane
            self._nova_files[cell] = pulumi.Output.secret(pulumi.Output.all(
                cp.compute_configs[cell], cp.migration_private_key, cp.migration_public_key,
            ).apply(lambda v: {**v[0], "ssh-privatekey": v[1], "ssh-publickey": v[2]}))
        return self._nova_files[cell]

    def _nova(self, node: Node, after: PlaybookRun) -> PlaybookRun:
        secret_extra = nova_extra_files(self._node_set, node, secret=True)
        files = self._cell_files(node.cell)
        if secret_extra:
            files = files.apply(lambda f: {**f, **secret_extra})
        # Shown in preview line by line: the node's own files.
        public = {
            HOST_SPECIFIC_CONF: host_specific_conf(node.ansible_host, node.host_name),
            **nova_extra_files(self._node_set, node),
        }
        return self._run(node, "nova", "nova.yml", after, files=files, public_files=public,
                         variables=self._secret_file_vars(node, "edpm_nova_secret_files", list(secret_extra)),
                         stop_playbook="nova-stop.yml")

    def _neutron_metadata(self, node: Node, after: PlaybookRun) -> PlaybookRun:
        configs = self._control_plane.metadata_configs
        source = None if None in configs else node.cell
        where = f"openstack-nova:dataplane.nodeSets.{self._node_set.name}.services"
        if source not in configs:
            raise pulumi.RunError(
                f"{where}: {NEUTRON_METADATA} needs a metadata service for {node.name}; enable "
                f"nova.metadataServiceTemplate or nova.cellTemplates.{node.cell}.metadataServiceTemplate")
        agent = self._agent
        if agent.ovn is None:
            raise pulumi.RunError(f"{where}: {NEUTRON_METADATA} needs the OVN southbound database of "
                                  "dataplane.ovn.sbConnection")
        layout = agent_layout(self._node_set, node, agent.image)
        secret_extra = neutron_metadata_extra_files(self._node_set, node, secret=True)
        metadata = configs[source]
        if secret_extra:
            metadata = metadata.apply(lambda files: {**files, **secret_extra})
        # Shown in preview line by line: all but nova's 05-nova-metadata.conf (the shared secret)
        # and snippets that set secret options.
        public = {**neutron_metadata_agent_files(layout, agent.ovn),
                  **neutron_metadata_extra_files(self._node_set, node)}
        return self._run(node, NEUTRON_METADATA, "neutron-metadata.yml", after, files=metadata,
                         public_files=public, stop_playbook="neutron-metadata-stop.yml",
                         variables=self._secret_file_vars(node, "edpm_neutron_metadata_secret_files",
                                                          list(secret_extra)),
                         default_host_vars={AGENT_IMAGE_VAR: agent.image})
