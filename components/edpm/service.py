"""`EdpmService`: what one service is and does on an EDPM node, declared once.

A built-in service is a module of `components/edpm/services/` that defines
`SERVICE`; the registry finds it there. The stack config's checks take its
name, its place in upstream's order and its own rules from that object, and
`EdpmNodeSet` makes one `PlaybookRun` per node from it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pulumi

from components.settings import Node

if TYPE_CHECKING:
    from .context import NodeSetContext


@dataclass(frozen=True)
class RunInputs:
    """What one node's run of a service hands to its playbook, besides the node itself."""

    files: pulumi.Input[Mapping[str, str]] | None = None  # secret: masked in preview, 0600 on the node
    public_files: pulumi.Input[Mapping[str, str]] | None = None  # shown in preview line by line
    variables: pulumi.Input[Mapping[str, pulumi.Input[Any]]] | None = None  # the playbook's extra variables
    # the node's variables unless its ansibleVars set them (as upstream's inventory sets image variables)
    default_host_vars: Mapping[str, str] | None = None


@dataclass(frozen=True)
class MountPoint:
    """Where an extraMounts entry mounts files for the service to get them (where upstream's
    Ansible pod has them), and what the node set is told when it does not list the service."""

    path: str
    what: str  # for messages: "the Ceph client files"
    # the problem of a node set that lists its services without this one: (where the files come
    # from, the services the node set would run had it listed none) -> message
    unlisted: Callable[[str, tuple[str, ...]], str]
    # what is wrong with a mounted file's name, if anything (e.g. a file the service never reads)
    file_problem: Callable[[str], str | None] | None = None


@dataclass(frozen=True)
class RunsBefore:
    """The service must run before `service` when a node set lists both, for `reason`."""

    service: str
    reason: str


@dataclass(frozen=True)
class EdpmService:
    """One service a node set may run on its nodes: its playbooks and what each node's run gets.

    `order` and `default` place a built-in service: its position in upstream's order of the
    built-in services (a node set's services run in the order it lists them), and whether a node
    set that lists none runs it. `runs_before` and `mounts` are its own rules, which the stack
    config's checks apply at preview.
    """

    name: str
    playbook: str  # under ansible/playbooks/
    node_inputs: Callable[[NodeSetContext, Node], RunInputs]
    stop_playbook: str | None = None  # run when a node leaves the service
    order: int | None = None  # None: not a built-in service (the marker, a custom service)
    default: bool = False
    runs_before: tuple[RunsBefore, ...] = ()
    mounts: MountPoint | None = None  # extraMounts can give it files
    # it gives every node the host keys of nodeTemplate.knownHostsFile (that key's problem says so)
    shares_known_hosts: bool = False
