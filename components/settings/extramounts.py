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

from .errors import did_you_mean
from .model import ExtraMount, VolumeMount
from .reader import Obj

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


def _volume(obj: Obj, path_index: tuple[Any, ...], item: Any) -> dict[str, Any] | None:
    if not isinstance(item, dict):
        obj.ctx.wrong_type(path_index, "a Kubernetes volume object", item)
        return None
    if not isinstance(item.get("name"), str) or not item["name"]:
        obj.ctx.problem((*path_index, "name"), "every volume needs a name")
        return None
    return item


def _mount(obj: Obj, volumes: Collection[str]) -> VolumeMount | None:
    if not obj.valid:
        return None
    name = obj.opt_text("name")
    mount_path = obj.opt_text("mountPath")
    mount = VolumeMount(
        name=name or "",
        mount_path=mount_path or "",
        read_only=obj.flag("readOnly", False),
        sub_path=obj.opt_text("subPath"),
        path=obj.path,
    )
    obj.close()
    if name is None:
        obj.ctx.problem(obj.at("name"), "is required: the name of a volume of this entry")
    elif name not in volumes:
        hint = did_you_mean(name, volumes)
        obj.ctx.problem(obj.at("name"), f"no volume '{name}' in this extraMounts entry{hint}")
    if mount_path is None or not mount_path.startswith("/"):
        obj.ctx.problem(obj.at("mountPath"), "is required: an absolute path in the container")
    return mount if name and mount_path else None


def parse_extra_mount(obj: Obj, known_tags: Collection[str]) -> ExtraMount:
    propagation = obj.str_list("propagation")
    for index, tag in enumerate(propagation or ()):
        if tag not in known_tags:
            obj.ctx.problem(
                (*obj.at("propagation"), index),
                f"'{tag}' matches no pod or node set{did_you_mean(tag, known_tags)}",
            )
    volumes = [(path, v) for path, item in obj.items("volumes") if (v := _volume(obj, path, item)) is not None]
    names = {v["name"] for _, v in volumes}
    mounts = [m for path, item in obj.items("mounts") if (m := _mount(Obj(obj.ctx, path, item), names))]
    extra = ExtraMount(
        propagation=propagation,
        volumes=tuple(MappingProxyType(v) for _, v in volumes),
        mounts=tuple(mounts),
        volume_paths=tuple(path for path, _ in volumes),
    )
    obj.close()
    return extra
