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
_PATTERN_CHARS = frozenset("*?!")  # wildcards and negation: a line ssh may match to any host


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


@dataclass(frozen=True)
class HostLookup:
    keys: tuple[str, ...]  # each key of the host, once, in file order
    known_hosts: str  # the lines of the file that ssh may use to verify the host


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
        # The file's lines by the hosts they can verify: plain names, hashed names, and
        # lines that may match any host (CA and revoked markers, wildcards, negations).
        self._lines: list[str] = []
        self._lines_by_name: dict[str, list[int]] = {}
        self._hashed_lines: list[tuple[str, int]] = []
        self._general_lines: list[int] = []
        for line in text.splitlines():
            fields = line.split()
            if len(fields) < 3 or fields[0].startswith("#"):
                continue
            index = len(self._lines)
            self._lines.append(line.strip())
            patterns = fields[1] if fields[0] in _MARKERS else fields[0]
            if fields[0] in _MARKERS or _PATTERN_CHARS & set(patterns):
                self._general_lines.append(index)
                continue
            for pattern in patterns.split(","):
                if pattern.startswith("|1|"):
                    self._hashed_lines.append((pattern, index))
                else:
                    self._lines_by_name.setdefault(pattern, []).append(index)
        self._hashed_patterns = tuple(dict.fromkeys([*(e.patterns[0] for e in self._hashed),
                                                     *(p for p, _ in self._hashed_lines)]))

    def lookup(self, names: Iterable[str]) -> HostLookup:
        """What the file holds for a host that ssh looks up by any of `names`: its keys, and
        the lines that verify it exactly as the whole file does (lines naming only other
        hosts never match it), so a run that reaches one node needs only these."""
        wanted = list(names)
        hashed = {p for p in self._hashed_patterns if any(_hashed_match(p, n) for n in wanted)}
        keys = [k for n in wanted for k in self._by_name.get(n, [])]
        keys += [e.key for e in self._hashed if e.patterns[0] in hashed]
        chosen = {*self._general_lines, *(i for n in wanted for i in self._lines_by_name.get(n, [])),
                  *(i for p, i in self._hashed_lines if p in hashed)}
        return HostLookup(keys=tuple(dict.fromkeys(keys)),
                          known_hosts="".join(self._lines[i] + "\n" for i in sorted(chosen)))

    def keys_for(self, names: Iterable[str]) -> tuple[str, ...]:
        """Each key of a host known by any of `names`, once."""
        return self.lookup(names).keys

    def lines_for(self, names: Iterable[str]) -> str:
        """The lines that verify a host known by any of `names` (see lookup())."""
        return self.lookup(names).known_hosts
