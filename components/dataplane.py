"""The data plane: `EdpmDataPlane` makes each listed service's stack part once,
the node sets, and each cell's host discovery after its computes;
`EdpmNodeSet`, one node set and the services run on its nodes.

One `PlaybookRun` per node per service, in the node set's service order, so a
change re-runs Ansible exactly on the nodes whose files change. What each
service's run gets is the service's own (components/edpm/services/): neither
class knows any of them by name.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pulumi
import pulumi_kubernetes as k8s

from components.ansible_runner.playbook import PlaybookRun
from components.controlplane import NovaControlPlane
from components.edpm import registry
from components.edpm.context import ControlPlaneFiles, NodeSetContext, StackContext
from components.edpm.marker import MARKER
from components.edpm.service import Derived, EdpmService
from components.migrationkey import NovaMigrationSSHKey
from components.mountedfiles import EdpmMountedObjects, NodeSetFiles, no_files
from components.settings import NOVA, CustomService, Node, NodeSet, Settings
from components.settings.knownhosts import lookup_name

__all__ = ["CELL_IS_PINNED", "EdpmDataPlane", "EdpmNodeSet", "NovaMigrationSSHKey", "node_known_hosts"]

T = TypeVar("T")

CELL_IS_PINNED = (
    "nova cannot move a compute between cells: remove the node from the stack config and run "
    "`pulumi up` (its services are stopped and its compute service goes away), then add it back "
    "with its new cell."
)


def node_known_hosts(node: Node, port: int) -> str:
    """The known_hosts lines of the keys the node set trusts for `node`."""
    name = lookup_name(node.ansible_host, port)
    return "".join(f"{name} {key}\n" for key in node.host_keys)


def _read(path: str | None) -> str:
    return Path(path).read_text() if path else ""


class _Identity:
    """A key part that stands for one object (an Output): equal only to itself."""

    def __init__(self, obj: object) -> None:
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Identity) and other.obj is self.obj


class _SharedInputs:
    """Turns the `Derived` inputs of a node set's runs into Outputs, one per distinct derivation:
    nodes whose runs derive the same thing from the same parts share it (each Output costs the
    program a little, and a node set may have hundreds of nodes)."""

    def __init__(self) -> None:
        self._made: dict[Hashable, pulumi.Output[Any]] = {}

    def _key(self, value: Any) -> Hashable:
        if isinstance(value, Derived):
            return ("derived", value.make, tuple(self._key(p) for p in value.parts), value.secret)
        if isinstance(value, Mapping):
            return ("map", tuple(sorted((k, self._key(v)) for k, v in value.items())))
        if isinstance(value, list | tuple):
            return (type(value).__name__, tuple(self._key(v) for v in value))
        if isinstance(value, set | frozenset):
            return ("set", frozenset(value))
        if isinstance(value, str | int | float | bool | type(None)):
            return value
        return _Identity(value)

    def resolve(self, value: Any) -> Any:
        """`value` with each `Derived` in it (at its top, or a mapping's value) made an Output."""
        if isinstance(value, Mapping) and any(isinstance(v, Derived) for v in value.values()):
            return {k: self.resolve(v) for k, v in value.items()}
        if not isinstance(value, Derived):
            return value
        key = self._key(value)
        if key not in self._made:
            make = value.make
            made = pulumi.Output.all(*[self.resolve(p) for p in value.parts]).apply(lambda v: make(*v))
            if value.secret is True:
                made = pulumi.Output.secret(made)
            elif value.secret is False:
                made = pulumi.Output.unsecret(made)
            self._made[key] = made
        return self._made[key]


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
        services: Sequence[tuple[EdpmService, Any]],
        *,
        mounted: NodeSetFiles | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """`services`: the node set's services in its order, each with its stack part (what
        EdpmDataPlane made of it); `mounted`: the files its extraMounts give its services (see
        EdpmMountedObjects)."""
        super().__init__(self.TYPE, name, {}, opts)
        self._node_set = node_set
        self._shared = _SharedInputs()
        mounted = mounted or no_files()
        template = node_set.node_template
        key = (template.ssh_private_key.reveal() if template.ssh_private_key is not None
               else _read(template.ssh_private_key_file))
        self._ssh_key = pulumi.Output.secret(key)
        # runs[node][service]: the node's marker first, then its services in order, each after the one before
        self.runs: dict[str, dict[str, PlaybookRun]] = {}
        # what each service draws on, the same for every node of the node set
        self._contexts = [(service, NodeSetContext(node_set, stack_part, mounted))
                          for service, stack_part in ((MARKER, None), *services)]
        for node in node_set.nodes:
            previous: PlaybookRun | None = None
            for service, context in self._contexts:
                previous = self._run(node, service, context, previous)
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

    def _run(self, node: Node, service: EdpmService, context: NodeSetContext,
             after: PlaybookRun | None) -> PlaybookRun:
        """`service` on `node`, once `after` has run."""
        inputs = service.node_inputs(context, node)
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
            files=self._shared.resolve(inputs.files),
            public_files=self._shared.resolve(inputs.public_files),
            variables=self._shared.resolve(inputs.variables),
            pinned={"cell": node.cell},
            pinned_reason=CELL_IS_PINNED,
            stop_playbook=service.stop_playbook,
            timeouts=asdict(template.timeouts),
            known_hosts_file=template.known_hosts_file,
            node_set=self._node_set.name,
            parent_type=self.TYPE,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[after] if after else []),
        )


def control_plane_files(control_plane: NovaControlPlane) -> ControlPlaneFiles:
    """What the control plane hands the data plane: each cell's compute config and the metadata
    agents' config (the top-level metadata service's when there is one, else each cell's)."""
    cells = control_plane.cells
    top = control_plane.metadata_neutron_config
    metadata: dict[str | None, pulumi.Output[dict[str, str]]] = (
        {None: top} if top is not None
        else {n: c.metadata_neutron_config for n, c in cells.items() if c.metadata_neutron_config is not None})
    return ControlPlaneFiles(
        compute_configs={n: c.compute_config for n, c in cells.items() if c.compute_config is not None},
        metadata_configs=metadata,
    )


class HostDiscovery(Protocol):
    """A cell that maps its computes once they are deployed (NovaCell)."""

    def discover_hosts(self, hosts: Sequence[str], depends_on: Sequence[pulumi.Resource]) -> pulumi.Resource: ...


class EdpmDataPlane:
    """Every node set of the stack and what their services share: each built-in service gets its
    stack part made once (e.g. libvirt's Secrets, nova's migration key), whether or not a node set
    lists it, so that a stack keeps them as node sets come and go; the node sets get their runs,
    and each cell's host discovery waits for its computes.

    Not a resource of its own: the node sets and stack parts keep the places (URNs) they
    have in existing stacks, at the top of the stack."""

    def __init__(self, settings: Settings, control_plane: ControlPlaneFiles, *,
                 provider: k8s.Provider | None = None, namespace: pulumi.Resource | None = None,
                 cells: Mapping[str, HostDiscovery] | None = None,
                 services: Sequence[EdpmService] | None = None) -> None:
        """`control_plane`: what the control plane hands the data plane; `provider` and `namespace`:
        where the stack parts' Kubernetes objects go (the stack's provider, after its namespace);
        `cells`: the cells whose host discovery runs after their computes; `services`: the
        built-in services (default: the registry's)."""
        builtin = registry.builtin_services() if services is None else tuple(services)
        dataplane = settings.dataplane
        stack = StackContext(settings=settings, control_plane=control_plane, provider=provider, namespace=namespace)
        self.stack_parts: dict[str, Any] = {s.name: s.stack(stack) for s in builtin}
        # The Secrets and ConfigMaps extraMounts give the nodes (e.g. Ceph's), read from the namespace.
        mounted = (EdpmMountedObjects("edpm-mounted", settings.namespace, dataplane.node_sets,
                                      opts=pulumi.ResourceOptions(providers=[provider] if provider else None))
                   if any(s.mounted_files for s in dataplane.node_sets) else None)
        self.node_sets = [
            EdpmNodeSet(s.name, s, self._services(s, builtin, dataplane.custom_services),
                        mounted=mounted.for_node_set(s) if mounted else None)
            for s in dataplane.node_sets]
        # Once a cell's computes are deployed, its host discovery runs (again for each new compute).
        self.host_discovery: dict[str, pulumi.Resource] = {}
        for cell_name, cell in (cells or {}).items():
            computes = [(s, n) for s in self.node_sets for n in s.nodes_of_cell(cell_name)]
            if computes:
                self.host_discovery[cell_name] = cell.discover_hosts(
                    hosts=[n.host_name for _, n in computes],
                    depends_on=[s.runs[n.name][NOVA] for s, n in computes if NOVA in s.runs[n.name]],
                )

    def _services(self, node_set: NodeSet, builtin: Sequence[EdpmService],
                  custom: Mapping[str, CustomService]) -> list[tuple[EdpmService, Any]]:
        return [(s, self.stack_parts.get(s.name)) for s in registry.of_node_set(node_set.services, custom, builtin)]

    @property
    def deployed_hashes(self) -> dict[str, pulumi.Output[dict[str, dict[str, str]]]]:
        return {s.node_set_name: s.deployed_hashes for s in self.node_sets}

    @property
    def in_sync(self) -> dict[str, pulumi.Output[dict[str, dict[str, bool]]]]:
        return {s.node_set_name: s.in_sync for s in self.node_sets}
