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
    """The host-key lines of a known_hosts file (CA and revoked lines are not host keys;
    wildcard and negated patterns name no node of their own and never match one)."""
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


def _hashed_match(pattern: str, name: str) -> bool:
    """True if `name` is the name hashed into `pattern` (|1|salt|HMAC-SHA1)."""
    try:
        _, _, salt, digest = pattern.split("|")
        mac = hmac.new(base64.b64decode(salt), name.encode(), hashlib.sha1).digest()
        return hmac.compare_digest(mac, base64.b64decode(digest))
    except (ValueError, binascii.Error):
        return False


def patterns_match(entry: KnownHost, name: str) -> bool:
    """True if one of the entry's patterns is `name`, plainly or hashed."""
    return any(p == name or (p.startswith("|1|") and _hashed_match(p, name)) for p in entry.patterns)


class KnownHosts:
    """A known_hosts file indexed by name: looking up every node of a large node set
    costs one pass over the file, not one per node."""

    def __init__(self, text: str) -> None:
        self._by_name: dict[str, list[str]] = {}
        self._hashed: list[KnownHost] = []  # HashKnownHosts entries: matched by trying each
        for entry in parse(text):
            for pattern in entry.patterns:
                if pattern.startswith("|1|"):
                    self._hashed.append(KnownHost((pattern,), entry.key))
                else:
                    self._by_name.setdefault(pattern, []).append(entry.key)

    def keys_for(self, names: Iterable[str]) -> tuple[str, ...]:
        """Each key of a host known by any of `names`, once."""
        wanted = list(names)
        keys = [k for n in wanted for k in self._by_name.get(n, [])]
        keys += [e.key for e in self._hashed if any(_hashed_match(e.patterns[0], n) for n in wanted)]
        return tuple(dict.fromkeys(keys))
