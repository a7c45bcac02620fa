"""extraMounts that reach EDPM nodes: which files of which Secret or ConfigMap
each node set's services get.

Upstream mounts every extraMounts entry that propagates to `Compute` into the
Ansible pod of a node set, and a service's playbook copies what it finds at
the paths it reads. Here the same entries name the files that the program
reads from the stack's namespace and hands to the node set's runs, by where
the entry mounts them:

- /etc/ceph: the Ceph client files (ceph.conf, keyrings), which the
  ceph-client service lays out in /var/lib/openstack/config/ceph;
- /var/lib/openstack/configs/nova: more of nova's files, e.g. a
  03-ceph-nova.conf (where the pod holds the nova service's dataSources).

A mount is the whole volume (mountPath the directory itself) or one file of
it (mountPath `<directory>/<file>` with subPath the file in the volume).
Secret, ConfigMap and projected volumes of them can be read; an entry that
names `Compute` or a node set must mount at one of those paths.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .errors import Path, format_path
from .extramounts import COMPUTE, edpm_tags, propagates
from .model import (
    CEPH_CLIENT,
    NOVA,
    SSH_KNOWN_HOSTS,
    Dataplane,
    ExtraMount,
    Kubernetes,
    KubernetesMode,
    MountedFiles,
    NodeSet,
    VolumeMount,
)
from .reader import Context

# Where a mount must be for a node service to read it: directory -> service.
NODE_PATHS = {"/etc/ceph": CEPH_CLIENT, "/var/lib/openstack/configs/nova": NOVA}
_WHERE = "at /etc/ceph (the Ceph client files) or /var/lib/openstack/configs/nova (nova's files)"
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


def _target(mount: VolumeMount) -> tuple[str, str | None] | None:
    """(service, file name or None for the whole volume) the mount gives, or None."""
    mount_path = posixpath.normpath(mount.mount_path)
    if mount_path in NODE_PATHS:
        return NODE_PATHS[mount_path], None
    parent, file = posixpath.split(mount_path)
    if parent in NODE_PATHS:
        return NODE_PATHS[parent], file
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


def _mount_files(ctx: Context, extra: ExtraMount, mount: VolumeMount) -> list[MountedFiles]:
    """What one mount of an entry that reaches EDPM nodes gives them."""
    target = _target(mount)
    if target is None:
        return []
    service, file = target
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
            if service == NOVA and name.endswith(".conf") and "nova" not in name:
                ctx.problem(mount.path, f"nova-compute would never load {name}: only files whose name contains "
                            "'nova' and ends .conf are loaded (e.g. 03-ceph-nova.conf)")
    return mounted


def _entry_files(ctx: Context, extra: ExtraMount, node_sets: Sequence[NodeSet]) -> list[MountedFiles]:
    """What an entry gives EDPM nodes, if it reaches any."""
    named = {COMPUTE, *(s.name for s in node_sets)}
    explicit = bool(extra.propagation) and any(tag in named for tag in extra.propagation or ())
    reaches = any(propagates(extra.propagation, edpm_tags(s.name)) for s in node_sets)
    result: list[MountedFiles] = []
    for mount in extra.mounts:
        if explicit and _target(mount) is None:
            ctx.problem((*mount.path, "mountPath"), f"EDPM nodes get only files mounted {_WHERE}; nothing on them "
                        f"reads {mount.mount_path}")
        elif reaches:
            result += _mount_files(ctx, extra, mount)
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


def _services(ctx: Context, path: Path, node_set: NodeSet, mounted: Sequence[MountedFiles]) -> tuple[str, ...]:
    """The node set's services: ceph-client added to a default list that needs it, or a problem."""
    services = node_set.services
    ceph = [m.origin for m in mounted if m.service == CEPH_CLIENT]
    if ceph and CEPH_CLIENT not in services:
        if not node_set.services_listed:
            after = services.index(SSH_KNOWN_HOSTS) + 1 if SSH_KNOWN_HOSTS in services else 0
            return (*services[:after], CEPH_CLIENT, *services[after:])
        ctx.problem((*path, "services"), f"{_where(ceph[0])} gives this node set Ceph client files: list "
                    f"{CEPH_CLIENT} before {NOVA}, e.g. [{SSH_KNOWN_HOSTS}, {CEPH_CLIENT}, neutron-metadata, "
                    f"libvirt, {NOVA}]")
    if CEPH_CLIENT in services and NOVA in services and services.index(CEPH_CLIENT) > services.index(NOVA):
        ctx.problem((*path, "services"), f"{CEPH_CLIENT} must come before {NOVA}: nova-compute copies the Ceph "
                    "client files when it starts")
    nova = [m.origin for m in mounted if m.service == NOVA]
    if nova and NOVA not in services:
        ctx.problem((*path, "services"), f"{_where(nova[0])} gives nova's files to this node set, which runs no "
                    f"{NOVA}: list {NOVA}")
    return services


def with_mounted_files(ctx: Context, path: Path, dataplane: Dataplane, extra_mounts: Sequence[ExtraMount],
                       kubernetes: Kubernetes) -> Dataplane:
    """`dataplane` with each node set's mounted files (and ceph-client where a default list needs it)."""
    per_entry = [(extra, _entry_files(ctx, extra, dataplane.node_sets)) for extra in extra_mounts]
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
        services = _services(ctx, (*path, "nodeSets", node_set.name), node_set, mounted)
        node_sets.append(replace(node_set, services=services, mounted_files=mounted))
    return replace(dataplane, node_sets=tuple(node_sets))
