"""A test-only built-in EDPM service, written as a module of components/edpm/services/ is:
`greeting` gives each node /etc/greeting, made of the stack config's `dataplane.greeting.text` and
a value derived from the control plane (the hash of the node's cell's compute config), through
playbook greeting.yml and role edpm_greeting (tests/unit/data/edpm_greeting/; never run).

tests/unit/test_edpm_registry.py adds it to a copy of the tree as the module, the schema key and
the role it would be, and uses it here as it is."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pulumi

from components.edpm.context import NodeSetContext, StackContext
from components.edpm.service import EdpmService, RunInputs, derive
from components.render import config_hash
from components.settings import Node, ServiceSpec, Settings
from components.settings.errors import Path

NAME = "greeting"
DEFAULT_TEXT = "hello"


@dataclass(frozen=True)
class Greeting:
    """What the service gets from the stack."""

    text: str  # dataplane.greeting.text
    cell_configs: Mapping[str, pulumi.Output[dict[str, str]]]  # the control plane's, per cell


def _text(settings: Settings) -> str:
    given: Any = settings.dataplane.service_configs.get(NAME)
    return given.text if given is not None else DEFAULT_TEXT


def _stack(stack: StackContext) -> Greeting:
    return Greeting(text=_text(stack.settings), cell_configs=stack.control_plane.compute_configs)


def _check(settings: Settings) -> Iterator[tuple[Path, str]]:
    if not _text(settings).strip():
        yield ("dataplane", NAME, "text"), "is empty: a greeting says something"


def _greeting(text: str, host: str, cell_config: dict[str, str]) -> dict[str, str]:
    return {"greeting": f"{text}, {host} (cell config {config_hash(cell_config)[:12]})\n"}


def _node_inputs(context: NodeSetContext, node: Node) -> RunInputs:
    greeting: Greeting = context.stack
    return RunInputs(public_files=derive(_greeting, greeting.text, node.host_name, greeting.cell_configs[node.cell],
                                         secret=False))


# between neutron-metadata (30) and libvirt (40), in upstream's default list
SPEC = ServiceSpec(name=NAME, playbook="greeting.yml", order=35, default=True, check=_check)
SERVICE = EdpmService(SPEC, stack=_stack, node_inputs=_node_inputs)
