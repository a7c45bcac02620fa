"""Reaching a node over SSH: the options every connection to it uses, and what
SSH's refusals mean.

Ansible's connections and the runner's own (the one that holds the node's run
lock) check the node's host key the same way: against the run's known_hosts
file only (the keys its node set trusts), never the user's or the system's
files, and never accepting a key on first sight. The options are given on the
command line, so no ssh_config can loosen them.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_TRUE = ("true", "yes", "on", "1")


@dataclass(frozen=True)
class Target:
    """One node as SSH reaches it."""

    name: str
    address: str
    port: int
    user: str
    become: bool  # escalate with sudo (ansible_become)
    extra_args: tuple[str, ...] = ()  # the node's own ansible_ssh_common_args, e.g. a ProxyJump

    def __str__(self) -> str:
        return f"{self.name} ({self.address}:{self.port})"


def target(host: Mapping[str, Any], host_vars: Mapping[str, Any]) -> Target:
    """The node of a run: its host entry with the node's variables, as Ansible merges them."""
    become = host_vars.get("ansible_become", False)
    extra = host_vars.get("ansible_ssh_common_args", "")
    return Target(
        name=host["name"],
        address=str(host_vars.get("ansible_host", host["address"])),
        port=int(host_vars.get("ansible_port", host.get("port", 22))),
        user=str(host_vars.get("ansible_user", host.get("user", "root"))),
        become=become is True or (isinstance(become, str) and become.lower() in _TRUE),
        # Jinja only Ansible can expand; the runner's own connection goes without it
        extra_args=tuple(shlex.split(extra)) if isinstance(extra, str) and "{{" not in extra else (),
    )


def check_options(known_hosts: Path) -> list[str]:
    """SSH options that accept exactly the keys in `known_hosts` for the node."""
    return ["-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={known_hosts}",
            "-o", "GlobalKnownHostsFile=/dev/null", "-o", "UpdateHostKeys=no", "-o", "IdentitiesOnly=yes"]


def ansible_common_args(known_hosts: Path, node_args: str = "") -> str:
    """ansible_ssh_common_args of a node: the checks first (SSH keeps the first value of an
    option), then the node's own."""
    return " ".join([*(shlex.quote(a) for a in check_options(known_hosts)), node_args]).strip()


def ssh_argv(node: Target, key_file: Path, known_hosts: Path, connect_timeout: int, command: str) -> list[str]:
    """ssh running `command` on the node (as root through sudo when the node's runs become root).
    It never prompts, and gives up on a node that stops answering within a minute."""
    remote = f"sudo -n {command}" if node.become and node.user != "root" else command
    return ["ssh", "-T", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={connect_timeout}",
            "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4", *check_options(known_hosts),
            "-i", str(key_file), "-p", str(node.port), "-l", node.user, *node.extra_args, node.address, remote]


@dataclass(frozen=True)
class Refusal:
    """Why SSH would not, or could not, run anything on a node."""

    kind: str  # "changed" | "unknown" | "denied" | "unreachable"
    detail: str  # SSH's own words; for "changed", the key the node showed ("ED25519 SHA256:...")


_CHANGED = re.compile(r"REMOTE HOST IDENTIFICATION HAS CHANGED")
_SHOWN_KEY = re.compile(
    r"fingerprint for the (\S+) key sent by the remote host is(?:\s|\\r|\\n)*(SHA256:[A-Za-z0-9+/=]+)")
_UNKNOWN = re.compile(r"No \S+ host key is known for \S+|Host key verification failed")
_DENIED = re.compile(r"Permission denied \([^)]*\)")
_UNREACHABLE = re.compile(
    r"ssh: connect to host \S+ port \d+: [^'\"\r\n\\]+|Connection timed out during banner exchange|"
    r"ssh: Could not resolve hostname [^'\"\r\n\\]+|Connection (?:closed|reset) by \S+ port \d+|"
    r"kex_exchange_identification: [^'\"\r\n\\]+|Timeout, server \S+ not responding")


def refusal(output: str) -> Refusal | None:
    """The refusal in SSH's (or Ansible's) output, if any; a changed key wins over the rest."""
    if _CHANGED.search(output):
        shown = _SHOWN_KEY.search(output)
        return Refusal("changed", f"{shown.group(1)} {shown.group(2)}" if shown else "a key not in the file")
    for kind, pattern in (("unknown", _UNKNOWN), ("denied", _DENIED), ("unreachable", _UNREACHABLE)):
        if found := pattern.search(output):
            return Refusal(kind, found.group(0).strip().rstrip("."))
    return None
