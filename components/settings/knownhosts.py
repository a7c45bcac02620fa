"""Host keys in an OpenSSH known_hosts file, looked up by the names of a node.

The keys a stack trusts for its nodes are the ones in each node set's
`knownHostsFile`: Ansible verifies nodes against them, and the
`ssh-known-hosts` service hands the same keys to every node, so that computes
verify each other when they migrate.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Iterable
from dataclasses import dataclass

_MARKERS = ("@cert-authority", "@revoked")


@dataclass(frozen=True)
class KnownHost:
    patterns: tuple[str, ...]  # plain names, [name]:port, or |1|salt|hash
    key: str  # "<type> <base64>"


def parse(text: str) -> list[KnownHost]:
    """The plain host-key lines of a known_hosts file (CA and revoked lines are not host keys)."""
    entries = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 3 or fields[0].startswith("#") or fields[0] in _MARKERS:
            continue
        entries.append(KnownHost(tuple(fields[0].split(",")), f"{fields[1]} {fields[2]}"))
    return entries


def lookup_name(host: str, port: int) -> str:
    """The name ssh looks up for host:port."""
    return host if port == 22 else f"[{host}]:{port}"


def _matches(pattern: str, name: str) -> bool:
    if pattern.startswith("|1|"):
        try:
            _, _, salt, digest = pattern.split("|")
            mac = hmac.new(base64.b64decode(salt), name.encode(), hashlib.sha1).digest()
            return hmac.compare_digest(mac, base64.b64decode(digest))
        except (ValueError, binascii.Error):
            return False
    return pattern == name  # wildcards and negations name no node of their own


def keys_for(entries: Iterable[KnownHost], names: Iterable[str]) -> tuple[str, ...]:
    """Each key of a host known by any of `names`, once, in file order."""
    wanted = list(names)
    keys: list[str] = []
    for entry in entries:
        if entry.key not in keys and any(_matches(p, n) for p in entry.patterns for n in wanted):
            keys.append(entry.key)
    return tuple(keys)
