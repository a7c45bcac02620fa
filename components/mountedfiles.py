"""`EdpmMountedObjects`: the Secrets and ConfigMaps that extraMounts give EDPM
nodes, read from the stack's namespace.

Each object is read once per `pulumi preview` or `up` (a Pulumi read, shown
as such), so a change of its content reaches exactly the node runs that use
it. What a Secret holds stays secret: encrypted in state, masked in preview.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.render.mounts import MountedFilesError, ServiceFiles, object_files, service_files
from components.settings import NodeSet


def _files(kind: str, name: str, data: Any, binary: Any = None) -> dict[str, str]:
    try:
        return object_files(kind, name, {"data": data or {}, "binaryData": binary or {}})
    except MountedFilesError as err:
        raise pulumi.RunError(str(err)) from None


class EdpmMountedObjects(pulumi.ComponentResource):
    """Reads every object some node set's extraMounts name, once."""

    def __init__(self, name: str, namespace: str, node_sets: Sequence[NodeSet],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        """Reads, from `namespace`, the objects the mounted files of `node_sets` come from."""
        super().__init__("openstack-nova:dataplane:EdpmMountedObjects", name, {}, opts)
        wanted = sorted({(m.kind, m.name) for s in node_sets for m in s.mounted_files})
        self.objects: dict[tuple[str, str], pulumi.Output[dict[str, str]]] = {}
        for kind, obj_name in wanted:
            self.objects[(kind, obj_name)] = self._read(name, kind, f"{namespace}/{obj_name}")
        self.register_outputs({})

    def _read(self, name: str, kind: str, ident: str) -> pulumi.Output[dict[str, str]]:
        """The key -> text of the object `ident` ("namespace/name")."""
        obj_name = ident.split("/", 1)[1]
        child = pulumi.ResourceOptions(parent=self)
        if kind == "Secret":
            # belt and braces: the provider marks a Secret's data secret too
            secret = k8s.core.v1.Secret.get(f"{name}-secret-{obj_name}", ident, opts=pulumi.ResourceOptions.merge(
                child, pulumi.ResourceOptions(additional_secret_outputs=["data", "stringData"])))

            def secret_files(data: Any) -> dict[str, str]:
                return _files(kind, obj_name, data)

            return pulumi.Output.secret(secret.data.apply(secret_files))
        config_map = k8s.core.v1.ConfigMap.get(f"{name}-configmap-{obj_name}", ident, opts=child)

        def config_map_files(data: Any) -> dict[str, str]:
            return _files(kind, obj_name, data)

        # data only: a read leaves binaryData out when the ConfigMap has none, which a preview
        # cannot tell from "not known yet", so every preview would show the node runs changing.
        # Config files are text; binaryData keys are not delivered.
        return config_map.data.apply(config_map_files)

    def for_node_set(self, node_set: NodeSet) -> NodeSetFiles:
        """The files the node set's extraMounts give its services."""
        wanted = sorted({(m.kind, m.name) for m in node_set.mounted_files})

        def build(values: list[Mapping[str, str]]) -> dict[str, ServiceFiles]:
            try:
                return service_files(node_set.mounted_files, dict(zip(wanted, values, strict=True)))
            except MountedFilesError as err:
                raise pulumi.RunError(str(err)) from None

        # secret as soon as one Secret is among them; the ConfigMaps' part is not
        every = pulumi.Output.all(*[self.objects[key] for key in wanted]).apply(build)
        return NodeSetFiles(
            secret=pulumi.Output.secret(every.apply(lambda f: {s: dict(v.secret) for s, v in f.items()})),
            public=pulumi.Output.unsecret(every.apply(lambda f: {s: dict(v.public) for s, v in f.items()})),
        )


@dataclass(frozen=True)
class NodeSetFiles:
    """Per service, the mounted files of one node set: from Secrets, and from ConfigMaps."""

    secret: pulumi.Output[dict[str, dict[str, str]]]
    public: pulumi.Output[dict[str, dict[str, str]]]
    # one pair of Outputs per service, whichever of the node set's nodes asks
    _of: dict[str, tuple[pulumi.Output[dict[str, str]], pulumi.Output[dict[str, str]]]] = field(
        default_factory=dict, compare=False, repr=False)

    def of(self, service: str) -> tuple[pulumi.Output[dict[str, str]], pulumi.Output[dict[str, str]]]:
        """(secret files, public files) of `service`; empty when it gets none."""
        if service not in self._of:
            self._of[service] = (self.secret.apply(lambda f: f.get(service, {})),
                                 self.public.apply(lambda f: f.get(service, {})))
        return self._of[service]


def no_files() -> NodeSetFiles:
    """What a node set without mounted files gets."""
    return NodeSetFiles(secret=pulumi.Output.from_input({}), public=pulumi.Output.from_input({}))
