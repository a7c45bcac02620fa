"""extraMounts that reach EDPM nodes: which files of which Secret or ConfigMap
each node set's services get.

Upstream mounts every extraMounts entry that propagates to `Compute` into the
Ansible pod of a node set, and a service's playbook copies what it finds at
the paths it reads. Here the same entries name the files that the program
reads from the stack's namespace and hands to the node set's runs, by where
the entry mounts them: the path a service declares (its `MountPoint`), e.g.
/etc/ceph for ceph-client's Ceph client files, /var/lib/openstack/configs/nova
for more of nova's files (where the pod holds the nova service's dataSources).

A mount is the whole volume (mountPath the directory itself) or one file of
it (mountPath `<directory>/<file>` with subPath the file in the volume).
Secret, ConfigMap and projected volumes of them can be read; an entry that
names `Compute` or a node set must mount at one of those paths.

A node set that lists no services gets a service such files are for, in its
place; one that lists them is told to list it.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .errors import Context, Path, format_path
from .extramounts import COMPUTE, edpm_tags, propagates
from .model import (
    Dataplane,
    ExtraMount,
    Kubernetes,
    KubernetesMode,
    MountedFiles,
    NodeSet,
    VolumeMount,
)
from .services import MountPoint, ServiceSpecs

# Where a mount must be for a service on the nodes to read it: directory -> (service, its mount point).
NodePaths = Mapping[str, tuple[str, MountPoint]]
_FILE_NAME = re.compile(r"^[-._a-zA-Z0-9]+$")  # a Secret or ConfigMap key


@dataclass(frozen=True)
class _Source:
    kind: str
    name: str
    items: Mapping[str, str] | None  # path in the volume -> key; None: every key


def _where(path: Path) -> str:
    return format_path(path, project=False)


def _object_source(ctx: Context, path: Path, kind: str, spec: Any, name_key: str) -> _Source | None:
    if not isinstance(spec, Mapping) or not isinstance(spec.get(name_key), str) or not spec[name_key]:
        ctx.problem(path, f"names no {kind}: set {name_key}")
        return None
    if spec.get("optional"):
        ctx.problem((*path, "optional"), f"{kind} {spec[name_key]} must exist to reach EDPM nodes (the program "
                    "reads it when it runs): remove optional")
    items: dict[str, str] | None = None
    if spec.get("items") is not None:
        items = {}
        for index, item in enumerate(spec["items"] if isinstance(spec["items"], list) else []):
            item_path = (*path, "items", index)
            key, file = (item.get("key"), item.get("path")) if isinstance(item, Mapping) else (None, None)
            if not isinstance(key, str) or not isinstance(file, str):
                ctx.problem(item_path, "needs key and path")
            elif not _FILE_NAME.match(file):
                ctx.problem((*item_path, "path"), f"'{file}' must be a plain file name: EDPM nodes get the files "
                            "of a volume side by side, in one directory")
            else:
                items[file] = key
    return _Source(kind, spec[name_key], items)


def _sources(ctx: Context, path: Path, volume: Mapping[str, Any]) -> list[_Source]:
    """The Secrets and ConfigMaps a volume is made of; a problem for any other volume."""
    if "secret" in volume:
        found = _object_source(ctx, (*path, "secret"), "Secret", volume["secret"], "secretName")
        return [found] if found else []
    if "configMap" in volume:
        found = _object_source(ctx, (*path, "configMap"), "ConfigMap", volume["configMap"], "name")
        return [found] if found else []
    projected = volume.get("projected")
    if isinstance(projected, Mapping):
        result: list[_Source] = []
        for index, source in enumerate(projected.get("sources") or []):
            source_path = (*path, "projected", "sources", index)
            if isinstance(source, Mapping) and "secret" in source:
                found = _object_source(ctx, (*source_path, "secret"), "Secret", source["secret"], "name")
            elif isinstance(source, Mapping) and "configMap" in source:
                found = _object_source(ctx, (*source_path, "configMap"), "ConfigMap", source["configMap"], "name")
            else:
                ctx.problem(source_path, "only secret and configMap sources of a projected volume can reach EDPM "
                            "nodes")
                continue
            if found:
                result.append(found)
        return result
    kind = next((k for k in volume if k != "name"), "an empty")
    ctx.problem(path, f"a {kind} volume cannot reach EDPM nodes: the program reads the files it gives them from "
                "a Secret, a ConfigMap or a projected volume of them, in the stack's namespace (or keep this entry "
                "to control-plane pods with a propagation that names neither Compute nor a node set)")
    return []


def _node_paths(builtin: ServiceSpecs) -> dict[str, tuple[str, MountPoint]]:
    return {s.mounts.path: (s.name, s.mounts) for s in builtin.specs if s.mounts is not None}


def _target(mount: VolumeMount, paths: NodePaths) -> tuple[str, MountPoint, str | None] | None:
    """(service, its mount point, file name or None for the whole volume) the mount gives, or None."""
    mount_path = posixpath.normpath(mount.mount_path)
    if mount_path in paths:
        return *paths[mount_path], None
    parent, file = posixpath.split(mount_path)
    if parent in paths:
        return *paths[parent], file
    return None


def _one_file(ctx: Context, mount: VolumeMount, file: str, sources: Sequence[_Source]) -> list[tuple[_Source, str]]:
    """The source and key of the single file a subPath mount gives."""
    assert mount.sub_path is not None
    named = [(s, s.items[mount.sub_path]) for s in sources if s.items is not None and mount.sub_path in s.items]
    if named:
        return named[:1]
    open_sources = [s for s in sources if s.items is None]
    if len(open_sources) == 1:
        return [(open_sources[0], mount.sub_path)]
    if open_sources:
        ctx.problem((*mount.path, "subPath"), f"'{mount.sub_path}' may be in any of {len(open_sources)} sources of "
                    f"volume {mount.name}: list it under the items of the one that has it")
    elif sources:
        ctx.problem((*mount.path, "subPath"), f"'{mount.sub_path}' is no file of volume {mount.name}")
    return []


def _mount_files(ctx: Context, extra: ExtraMount, mount: VolumeMount, paths: NodePaths) -> list[MountedFiles]:
    """What one mount of an entry that reaches EDPM nodes gives them."""
    target = _target(mount, paths)
    if target is None:
        return []
    service, point, file = target
    if file is not None and not mount.sub_path:
        ctx.problem((*mount.path, "subPath"), f"is required: the file of volume {mount.name} that becomes "
                    f"{mount.mount_path} (or mount the whole volume at {posixpath.dirname(mount.mount_path)})")
        return []
    if file is None and mount.sub_path:
        ctx.problem((*mount.path, "mountPath"), f"with subPath, name the file: {mount.mount_path}/{mount.sub_path}")
        return []
    index = next(i for i, v in enumerate(extra.volumes) if v["name"] == mount.name)
    sources = _sources(ctx, extra.volume_paths[index], extra.volumes[index])
    if file is None:
        mounted = [MountedFiles(service, s.kind, s.name, s.items, mount.path) for s in sources]
    else:
        mounted = [MountedFiles(service, s.kind, s.name, {file: key}, mount.path)
                   for s, key in _one_file(ctx, mount, file, sources)]
    for files in mounted:
        for name in files.files or {}:
            problem = point.file_problem(name) if point.file_problem else None
            if problem:
                ctx.problem(mount.path, problem)
    return mounted


def _entry_files(ctx: Context, extra: ExtraMount, node_sets: Sequence[NodeSet],
                 paths: NodePaths) -> list[MountedFiles]:
    """What an entry gives EDPM nodes, if it reaches any."""
    named = {COMPUTE, *(s.name for s in node_sets)}
    explicit = bool(extra.propagation) and any(tag in named for tag in extra.propagation or ())
    reaches = any(propagates(extra.propagation, edpm_tags(s.name)) for s in node_sets)
    result: list[MountedFiles] = []
    for mount in extra.mounts:
        if explicit and _target(mount, paths) is None:
            where = " or ".join(f"{path} ({point.what})" for path, (_, point) in paths.items())
            ctx.problem((*mount.path, "mountPath"), f"EDPM nodes get only files mounted at {where}; nothing on "
                        f"them reads {mount.mount_path}")
        elif reaches:
            result += _mount_files(ctx, extra, mount, paths)
    return result


def _unique(ctx: Context, mounted: Sequence[MountedFiles], reported: set[tuple[Path, str]]) -> None:
    """File names known now are unique per service of a node set (each clash reported once)."""
    seen: dict[tuple[str, str], Path] = {}
    for files in mounted:
        for file in files.files or {}:
            first = seen.setdefault((files.service, file), files.origin)
            if first != files.origin and (files.origin, file) not in reported:
                reported.add((files.origin, file))
                ctx.problem(files.origin, f"{file} for {files.service} also comes from {_where(first)}")


def final_services(ctx: Context, path: Path, node_set: NodeSet, mounted: Sequence[MountedFiles],
                   builtin: ServiceSpecs) -> tuple[str, ...]:
    """The node set's services: one its mounted files are for added to a default list, in its place,
    or a problem; then each service's rules of order. (Once extraMounts are read: only then is a
    default list final.)"""
    services = node_set.services
    at = (*path, "services")
    for service in builtin.specs:
        given = [m.origin for m in mounted if m.service == service.name]
        if given and service.mounts is not None and service.name not in services:
            if not node_set.services_listed:
                services = builtin.in_order((*services, service.name))
            else:
                ctx.problem(at, service.mounts.unlisted(_where(given[0]),
                                                        builtin.in_order((*builtin.default, service.name))))
        for rule in service.runs_before:
            if service.name in services and rule.service in services and (
                    services.index(service.name) > services.index(rule.service)):
                ctx.problem(at, f"{service.name} must come before {rule.service}: {rule.reason}")
    return services


def with_mounted_files(ctx: Context, path: Path, dataplane: Dataplane, extra_mounts: Sequence[ExtraMount],
                       kubernetes: Kubernetes, builtin: ServiceSpecs) -> Dataplane:
    """`dataplane` with each node set's mounted files (and the services they are for where a default
    list needs them)."""
    paths = _node_paths(builtin)
    per_entry = [(extra, _entry_files(ctx, extra, dataplane.node_sets, paths)) for extra in extra_mounts]
    if kubernetes.mode is KubernetesMode.RENDER:
        for _, files in per_entry:
            for first in files[:1]:
                ctx.problem(first.origin, f"gives EDPM nodes files of {first.kind} {first.name}, which the program "
                            "reads from the cluster; kubernetes.mode render has none (use mode cluster)")
    node_sets = []
    reported: set[tuple[Path, str]] = set()
    for node_set in dataplane.node_sets:
        tags = edpm_tags(node_set.name)
        mounted = tuple(f for extra, files in per_entry if propagates(extra.propagation, tags) for f in files)
        _unique(ctx, mounted, reported)
        services = final_services(ctx, (*path, "nodeSets", node_set.name), node_set, mounted, builtin)
        node_sets.append(replace(node_set, services=services, mounted_files=mounted))
    return replace(dataplane, node_sets=tuple(node_sets))
