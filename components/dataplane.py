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
from components.libvirt import LibvirtFiles
from components.mountedfiles import NodeSetFiles, no_files
from components.playbook import PlaybookRun
from components.render import (
    HOST_SPECIFIC_CONF,
    SSH_KNOWN_HOSTS_BLOCK,
    TLS_CA,
    TLS_CERT,
    CephSecretError,
    agent_layout,
    ceph_secret_files,
    ceph_secrets,
    config_hash,
    host_specific_conf,
    libvirt_config_files,
    libvirt_secret_files,
    names,
    neutron_metadata_agent_files,
    neutron_metadata_extra_files,
    nova_extra_files,
)
from components.settings import (
    CEPH_CLIENT,
    LIBVIRT,
    NEUTRON_METADATA,
    NOVA,
    SSH_KNOWN_HOSTS,
    CustomService,
    Node,
    NodeSet,
    Ovn,
    Settings,
)
from components.settings.agentvars import IMAGE as AGENT_IMAGE_VAR
from components.settings.knownhosts import lookup_name

T = TypeVar("T")

# edpm_nova's variable for the nova_compute container's image (upstream's inventory sets it).
COMPUTE_IMAGE_VAR = "edpm_nova_compute_image"

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
        """`known_hosts_block`: the host keys of every node of the stack, for ssh-known-hosts;
        `compute_image`: the nova_compute container's image (images.compute), unless a node's
        ansibleVars name another, as upstream;
        `libvirt`: what the libvirt service gets from the stack (see LibvirtSecrets);
        `mounted`: the files its extraMounts give its services (see EdpmMountedObjects)."""
        super().__init__(self.TYPE, name, {}, opts)
        self._node_set, self._control_plane, self._custom = node_set, control_plane, custom_services
        self._known_hosts_block = known_hosts_block
        self._agent = neutron_metadata
        self._compute_image = compute_image
        self._libvirt_files = libvirt
        self._mounted = mounted or no_files()
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
             public_files: pulumi.Input[Mapping[str, str]] | None = None, stop_playbook: str | None = None,
             variables: pulumi.Input[Mapping[str, pulumi.Input[Any]]] | None = None,
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
            # the node's own keys: trusting another node re-runs no service of this one
            known_hosts=node_known_hosts(node, template.ansible_port),
            files=files,
            public_files=public_files,
            variables=variables,
            pinned={"cell": node.cell},
            pinned_reason=CELL_IS_PINNED,
            stop_playbook=stop_playbook,
            timeouts=asdict(template.timeouts),
            known_hosts_file=template.known_hosts_file,
            node_set=self._node_set.name,
            parent_type=self.TYPE,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[after] if after else []),
        )

    def _marker(self, node: Node) -> PlaybookRun:
        """Records on the node which node set and cell manage it."""
        marker = {"node": node.name, "hostName": node.host_name, "nodeSet": self._node_set.name, "cell": node.cell}
        return self._run(node, "marker", "node-marker.yml", None,
                         public_files={"edpm-node.json": json.dumps(marker, indent=2) + "\n"})

    def _service(self, node: Node, service: str, after: PlaybookRun) -> PlaybookRun:
        if service == NOVA:
            return self._nova(node, after)
        if service == CEPH_CLIENT:
            secret, public = self._mounted.of(CEPH_CLIENT)
            return self._run(node, service, "ceph-client.yml", after, files=secret, public_files=public,
                             stop_playbook="ceph-client-stop.yml")
        if service == NEUTRON_METADATA:
            return self._neutron_metadata(node, after)
        if service == LIBVIRT:
            return self._libvirt(node, after)
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
        mounted_secret, mounted_public = self._mounted.of(NOVA)
        secret_extra = nova_extra_files(self._node_set, node, secret=True)
        own_files = self._cell_files(node.cell)
        if secret_extra:
            own_files = own_files.apply(lambda f: {**f, **secret_extra})
        # Shown in preview line by line: the node's own files, and those of ConfigMaps.
        own_public = {
            HOST_SPECIFIC_CONF: host_specific_conf(node.ansible_host, node.host_name,
                                                   tls=self._node_set.tls_enabled),
            **nova_extra_files(self._node_set, node),
        }
        taken = own_files.apply(lambda f: set(f) | set(own_public))
        files: pulumi.Output[dict[str, str]] = pulumi.Output.secret(
            pulumi.Output.all(own_files, mounted_secret, taken).apply(lambda v: {**v[0], **_not_taken(v[1], v[2])}))
        public = pulumi.Output.all(mounted_public, pulumi.Output.unsecret(taken)).apply(
            lambda v: {**own_public, **_not_taken(v[0], v[1])})
        # the role copies these as it does nova's own secret files (0600, never logged): snippets that set
        # secret options, and a Secret's mounted files
        secret_var = "edpm_nova_secret_files"
        variables: dict[str, pulumi.Input[Any]] = dict(self._secret_file_vars(node, secret_var, list(secret_extra)))
        if any(m.secret for m in self._node_set.mounted_for(NOVA)):
            variables[secret_var] = pulumi.Output.unsecret(mounted_secret.apply(
                lambda m: self._secret_file_vars(node, secret_var, [*secret_extra, *m])[secret_var]))
        if CEPH_CLIENT in self._node_set.services:
            # a change of the Ceph client files re-runs nova, which restarts nova-compute
            ceph_secret, ceph_public = self._mounted.of(CEPH_CLIENT)
            variables["edpm_nova_ceph_files_hash"] = pulumi.Output.unsecret(
                pulumi.Output.all(ceph_secret, ceph_public).apply(lambda v: config_hash({**v[0], **v[1]})))
        # the stop playbook runs with the same host variables: its quadlet mode runs the image
        return self._run(node, NOVA, "nova.yml", after, files=files, public_files=public,
                         stop_playbook="nova-stop.yml", variables=variables,
                         default_host_vars={COMPUTE_IMAGE_VAR: self._compute_image})

    def _ceph_secrets(self) -> pulumi.Output[tuple[dict[str, str], dict[str, str]]]:
        """(public, secret) files of the libvirt secrets of the node set's Ceph client files."""
        if CEPH_CLIENT not in self._node_set.services:
            return pulumi.Output.from_input(({}, {}))
        where = f"openstack-nova:extraMounts: the Ceph client files of node set {self._node_set.name}"

        def files(mounted: list[dict[str, str]]) -> tuple[dict[str, str], dict[str, str]]:
            try:
                return ceph_secret_files(ceph_secrets({**mounted[0], **mounted[1]}))
            except CephSecretError as err:
                raise pulumi.RunError(f"{where}: {err}") from None

        return pulumi.Output.all(*self._mounted.of(CEPH_CLIENT)).apply(files)

    def _libvirt(self, node: Node, after: PlaybookRun) -> PlaybookRun:
        tls = self._node_set.tls_enabled
        stack = self._libvirt_files
        if tls and node.name not in stack.tls:
            raise pulumi.RunError(f"{node.name}: its node set has TLS, but the stack issued it no libvirt certificate")
        certs: pulumi.Output[dict[str, str]] = stack.tls[node.name] if tls else pulumi.Output.from_input({})
        ceph = self._ceph_secrets()

        def secret_files(values: list[Any]) -> dict[str, str]:
            password, node_certs, (_, ceph_values) = values
            keys = {k: v for k, v in node_certs.items() if k not in _PUBLIC_TLS}
            return {**libvirt_secret_files(password, tls=tls), **keys, **ceph_values}

        # Shown in preview: the config, the certificates (not their keys) and the Ceph secrets'
        # definitions (a cluster's fsid, also nova's rbd_secret_uuid); never a key.
        def public_files(values: list[Any]) -> dict[str, str]:
            node_certs, (ceph_definitions, _) = values
            shown = {k: v for k, v in node_certs.items() if k in _PUBLIC_TLS}
            return {**libvirt_config_files(tls=tls), **shown, **ceph_definitions}

        files: pulumi.Output[dict[str, str]] = pulumi.Output.secret(
            pulumi.Output.all(stack.password, certs, ceph).apply(secret_files))
        public = pulumi.Output.unsecret(pulumi.Output.all(certs, ceph).apply(public_files))
        return self._run(node, LIBVIRT, "libvirt.yml", after, files=files, public_files=public,
                         variables={"edpm_libvirt_tls_certs_enabled": tls})

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


_PUBLIC_TLS = (TLS_CERT, TLS_CA)  # a node's certificate and its CA's: no secret


def _not_taken(mounted: Mapping[str, str], taken: set[str]) -> dict[str, str]:
    """`mounted`, or an error naming a file that would replace one of the program's own."""
    clash = sorted(set(mounted) & taken)
    if clash:
        raise pulumi.RunError(f"extraMounts give nova {', '.join(clash)}, which the program makes itself; "
                              "name the mounted files otherwise")
    return dict(mounted)
