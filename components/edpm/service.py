"""`EdpmService`: one service on EDPM nodes, declared once, in one module.

A built-in service is a module of `components/edpm/services/` that defines
`SERVICE`: its `ServiceSpec` (what the stack config knows of it: name,
playbooks, place in upstream's order, its own rules), its stack part (`stack`,
made once per stack from what the data plane is given) and what each node's
run gets (`node_inputs`). The registry finds it there; `EdpmDataPlane` makes
its stack part once and `EdpmNodeSet` one `PlaybookRun` per node from it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from components.settings import MountPoint, Node, RunsBefore, ServiceSpec

if TYPE_CHECKING:
    from .context import NodeSetContext, StackContext

__all__ = ["Derived", "EdpmService", "MountPoint", "RunInputs", "RunsBefore", "ServiceSpec", "derive", "merged"]


@dataclass(frozen=True, eq=False)
class Derived:
    """`make(*values)` of `parts` (Outputs, other `Derived`, or plain values), made into an Output
    by the node set: nodes whose inputs derive the same thing from the same parts share one
    Output, so a service writes plain functions of plain values and the node set minds the cost
    of Outputs. `secret`: True marks it secret, False not, None as its parts make it."""

    make: Callable[..., Any]
    parts: tuple[Any, ...]
    secret: bool | None = None


def derive(make: Callable[..., Any], *parts: Any, secret: bool | None = None) -> Derived:
    return Derived(make, parts, secret)


def merged(files: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """`files` with `extra` over them: what a service derives when it adds a node's own files."""
    return {**files, **extra}


@dataclass(frozen=True)
class RunInputs:
    """What one node's run of a service hands to its playbook, besides the node itself. Each may
    be a plain value, an Output or a `Derived` (the variables' values too)."""

    files: Any = None  # secret: masked in preview, 0600 on the node
    public_files: Any = None  # shown in preview line by line
    variables: Mapping[str, Any] | Derived | None = None  # the playbook's extra variables
    # the node's variables unless its ansibleVars set them (as upstream's inventory sets image variables)
    default_host_vars: Mapping[str, str] | None = None


def _no_stack_part(_stack: StackContext) -> None:
    return None


@dataclass(frozen=True)
class EdpmService:
    """One service a node set may run on its nodes: its spec, its stack part and each node's inputs.

    `stack(stack_context)` is made once per stack (for a built-in service, listed or not); its
    node sets' contexts hold it as `context.stack`."""

    spec: ServiceSpec
    node_inputs: Callable[[NodeSetContext, Node], RunInputs]
    stack: Callable[[StackContext], Any] = _no_stack_part

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def playbook(self) -> str:
        return self.spec.playbook

    @property
    def stop_playbook(self) -> str | None:
        return self.spec.stop_playbook
