"""extraMounts: parsing, and which pods a mount propagates to (lib-common rules).

Tags a pod carries (lib-common's "service types"):
  control plane: "Nova" (every pod), its group (NovaAPI, NovaScheduler,
  NovaConductor, NovaMetadata, NovaNoVNCProxy) and, for pods of a cell, the
  cell name (instance level, e.g. "cell1");
  EDPM nodes: "Compute", and the node set name (instance level).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from types import MappingProxyType
from typing import Any

from . import schema
from .errors import Context, Path, did_you_mean
from .model import ExtraMount, VolumeMount

ALL = "All"
NOVA = "Nova"
COMPUTE = "Compute"
GROUPS = ("NovaAPI", "NovaScheduler", "NovaConductor", "NovaMetadata", "NovaNoVNCProxy")
FIXED_TAGS = (ALL, NOVA, COMPUTE, *GROUPS)


def propagates(propagation: Sequence[str] | None, service_tags: Sequence[str]) -> bool:
    """Whether a mount with `propagation` goes to a pod tagged `service_tags`.

    None or empty: everywhere; "All": everywhere; else any exact match.
    """
    if not propagation or ALL in propagation:
        return True
    return any(tag in service_tags for tag in propagation)


def control_plane_tags(group: str, cell: str | None = None) -> tuple[str, ...]:
    """The tags of a control-plane pod, e.g. ("Nova", "NovaConductor", "cell1")."""
    return (NOVA, group) if cell is None else (NOVA, group, cell)


def edpm_tags(node_set: str) -> tuple[str, ...]:
    return (COMPUTE, node_set)


def _volume(ctx: Context, path: Path, given: dict[str, Any]) -> bool:
    if not isinstance(given.get("name"), str) or not given["name"]:
        ctx.problem((*path, "name"), "every volume needs a name")
        return False
    return True


def _mount(ctx: Context, path: Path, given: schema.VolumeMount, volumes: Collection[str]) -> VolumeMount | None:
    name, mount_path = given.name, given.mount_path
    if name is None:
        if not ctx.has_problem((*path, "name")):
            ctx.problem((*path, "name"), "is required: the name of a volume of this entry")
    elif name not in volumes:
        ctx.problem((*path, "name"), f"no volume '{name}' in this extraMounts entry{did_you_mean(name, volumes)}")
    if (mount_path is None or not mount_path.startswith("/")) and not ctx.has_problem((*path, "mountPath")):
        ctx.problem((*path, "mountPath"), "is required: an absolute path in the container")
    if not name or name not in volumes or not mount_path:
        return None
    return VolumeMount(name=name, mount_path=mount_path, read_only=given.read_only, sub_path=given.sub_path,
                       path=path)


def parse_extra_mount(ctx: Context, path: Path, given: schema.ExtraMount, known_tags: Collection[str]) -> ExtraMount:
    for tag_path, tag in ctx.items((*path, "propagation"), given.propagation or []):
        if tag not in known_tags:
            ctx.problem(tag_path, f"'{tag}' matches no pod or node set{did_you_mean(tag, known_tags)}")
    volumes = [(p, v) for p, v in ctx.items((*path, "volumes"), given.volumes) if _volume(ctx, p, v)]
    names = {v["name"] for _, v in volumes}
    mounts = [m for p, v in ctx.items((*path, "mounts"), given.mounts) if (m := _mount(ctx, p, v, names))]
    return ExtraMount(
        propagation=tuple(given.propagation) if given.propagation is not None else None,
        volumes=tuple(MappingProxyType(v) for _, v in volumes),
        mounts=tuple(mounts),
        volume_paths=tuple(p for p, _ in volumes),
    )
