"""The files extraMounts give a node set's services, made from the Secrets and
ConfigMaps they name (their content as read from the cluster).

Files of a Secret stay secret on their way to the nodes (masked in preview,
encrypted in state); files of a ConfigMap are shown in preview line by line.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from components.settings import NOVA, MountedFiles
from components.settings.errors import format_path

# What edpm_nova lays out in nova's directory itself: a mounted file may not take their place.
NOVA_ROLE_FILES = ("ssh-config", "run-on-host", "nova_statedir_ownership.py", "ceph")


def nova_skips(file: str) -> bool:
    """Whether `file` is a config file nova-compute never loads: of the .conf files in its
    directory it loads only those whose name contains 'nova' (the EDPM contract)."""
    return file.endswith(".conf") and "nova" not in file


class MountedFilesError(ValueError):
    """A mounted file cannot be made: a key is missing, a name is taken twice."""


@dataclass
class ServiceFiles:
    """One service's mounted files on one node set."""

    secret: dict[str, str] = field(default_factory=dict)  # from Secrets
    public: dict[str, str] = field(default_factory=dict)  # from ConfigMaps

    def names(self) -> set[str]:
        return set(self.secret) | set(self.public)


def _decoded(kind: str, name: str, key: str, value: str) -> str:
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        # the error's own words may quote the content: not in a message
        raise MountedFilesError(f"{kind} {name}: key {key} is not UTF-8 text; EDPM nodes get text files") from None


def object_files(kind: str, name: str, obj: Mapping[str, Any]) -> dict[str, str]:
    """Key -> text of a Secret (`data`, base64) or a ConfigMap (`data`, and base64 `binaryData`)."""
    data = dict(obj.get("data") or {})
    if kind == "Secret":
        return {key: _decoded(kind, name, key, value) for key, value in data.items()}
    binary = {key: _decoded(kind, name, key, value) for key, value in (obj.get("binaryData") or {}).items()}
    return {**data, **binary}


def service_files(
    mounted: Sequence[MountedFiles],
    objects: Mapping[tuple[str, str], Mapping[str, str]],
    taken: Mapping[str, Collection[str]] | None = None,
) -> dict[str, ServiceFiles]:
    """Per service, the files `mounted` gives it.

    `objects`: (kind, name) -> key -> text, from `object_files`. `taken`: per
    service, file names the program already gives it (nova's own files).
    """
    result: dict[str, ServiceFiles] = {}
    origins: dict[tuple[str, str], str] = {}
    for entry in mounted:
        content = objects[(entry.kind, entry.name)]
        where = format_path(entry.origin)
        mapping = entry.files if entry.files is not None else {key: key for key in content}
        files = result.setdefault(entry.service, ServiceFiles())
        for file, key in mapping.items():
            if key not in content:
                raise MountedFilesError(f"{where}: {entry.kind} {entry.name} has no key {key}; "
                                        f"its keys: {', '.join(sorted(content)) or 'none'}")
            first = origins.setdefault((entry.service, file), f"{entry.kind} {entry.name} ({where})")
            if file in files.names():
                raise MountedFilesError(f"{where}: {file} for {entry.service} comes from {first} and from "
                                        f"{entry.kind} {entry.name}; give each file one source")
            reserved = set((taken or {}).get(entry.service, ())) | (set(NOVA_ROLE_FILES) if entry.service == NOVA
                                                                     else set())
            if file in reserved:
                raise MountedFilesError(f"{where}: {file} is one of the program's own files for {entry.service}; "
                                        "name the mounted file otherwise")
            if entry.service == NOVA and nova_skips(file):
                raise MountedFilesError(f"{where}: nova-compute would never load {file} from {entry.kind} "
                                        f"{entry.name}: only files whose name contains 'nova' and ends .conf are")
            (files.secret if entry.secret else files.public)[file] = content[key]
    return result
