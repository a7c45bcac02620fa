"""Throw-away stacks of the project for tests that change config or fail on purpose."""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from components.ansible_runner.playbook import TYPE as PLAYBOOK_RUN
from tests.integration.local_env import ROOT, pulumi

# the built-in EDPM services of the dev stack's node set, in upstream's order
BUILTIN_SERVICES = ("ssh-known-hosts", "neutron-metadata", "libvirt", "nova")


def copy_project(dest: Path, keep_stacks: tuple[str, ...] = ()) -> Path:
    """A copy of the project sharing the venv, so tests never touch the checkout's stacks/.

    `keep_stacks` are stack configs copied along: a test may change them, and the
    stack itself (its state) is the checkout's.
    """
    skip = shutil.ignore_patterns(".git", ".venv", "__pycache__", ".*_cache", "Pulumi.*.yaml")
    shutil.copytree(ROOT, dest, ignore=skip)
    for stack in keep_stacks:
        shutil.copy2(ROOT / "stacks" / f"Pulumi.{stack}.yaml", dest / "stacks")
    (dest / ".venv").symlink_to(os.readlink(ROOT / ".venv") if (ROOT / ".venv").is_symlink() else ROOT / ".venv")
    return dest


class Stack:
    """A stack of a project copy whose config the test writes."""

    def __init__(self, project: Path, name: str) -> None:
        self.project, self.name = project, name
        self.namespace = "openstack"
        self.file = project / "stacks" / f"Pulumi.{name}.yaml"

    def write(self, config: dict[str, Any]) -> None:
        document: dict[str, Any] = {"config": {f"openstack-nova:{k}": v for k, v in config.items()}}
        if self.file.exists():
            salt = yaml.safe_load(self.file.read_text()).get("encryptionsalt")
            if salt:
                document["encryptionsalt"] = salt
        self.file.write_text(yaml.safe_dump(document))

    def with_custom_service(self, name: str, service: dict[str, Any], playbook: str | None = None) -> None:
        """The stack config with custom service `name` run after the built-in services on the dev node
        set's nodes; `playbook`: the text of its playbook, written under the copy's ansible/playbooks."""
        if playbook is not None:
            (self.project / "ansible" / "playbooks" / service["playbook"]).write_text(playbook)
        config = yaml.safe_load(self.file.read_text())
        dataplane = config["config"]["openstack-nova:dataplane"]
        dataplane["customServices"] = {name: service}
        dataplane["nodeSets"]["edpm-compute"]["services"] = [*BUILTIN_SERVICES, name]
        self.file.write_text(yaml.safe_dump(config))

    def cli(self, *args: str, check: bool = True) -> Any:
        return pulumi(*args, "-s", self.name, check=check, cwd=self.project)

    def init(self) -> None:
        """A new stack; one left by an interrupted run is forgotten (its namespace was its own)."""
        pulumi("stack", "rm", "--yes", "--force", "--preserve-config", self.name, cwd=self.project, check=False)
        pulumi("stack", "init", self.name, cwd=self.project)

    def resources(self) -> list[dict[str, Any]]:
        """The resources in state, secrets decrypted: every write re-encrypts them
        with a new nonce, so only plain values compare."""
        state = json.loads(self.cli("stack", "export", "--show-secrets").stdout)
        return state["deployment"].get("resources", [])

    def _runs(self) -> list[dict[str, Any]]:
        """The node runs in state (secrets left encrypted)."""
        state = json.loads(self.cli("stack", "export").stdout)
        return [r for r in state["deployment"].get("resources", []) if r["type"] == PLAYBOOK_RUN]

    def _refresh(self, urns: list[str]) -> None:
        self.cli("refresh", "--yes", "--skip-preview", *(arg for urn in urns for arg in ("--target", urn)))

    def refresh_runs(self, names: list[str]) -> None:
        """`pulumi refresh` of the node runs `names` only (e.g. "edpm-compute-0-nova"): each checked
        on its node, none of the stack's other runs and resources read."""
        urns = [r["urn"] for r in self._runs() if r["urn"].rsplit("::", 1)[-1] in names]
        assert sorted(u.rsplit("::", 1)[-1] for u in urns) == sorted(names), (names, urns)
        self._refresh(urns)

    def refresh_node(self, node: str) -> None:
        """`pulumi refresh` of every run of the stack on `node` only: the node checked, the
        other nodes and the control plane not read."""
        urns = [r["urn"] for r in self._runs() if r["inputs"]["host"]["name"] == node]
        assert urns, f"the stack {self.name} has no run on {node}"
        self._refresh(urns)

    def preview_steps(self) -> list[dict[str, Any]]:
        """The steps of `pulumi preview --json` that change something."""
        out = json.loads(self.cli("preview", "--json", "--diff").stdout)
        return [s for s in out.get("steps", []) if s.get("op") != "same"]

    def destroy(self) -> None:
        self.cli("destroy", "--yes", "--skip-preview", check=False)
        pulumi("stack", "rm", "--yes", "--force", self.name, cwd=self.project, check=False)


@contextmanager
def copy_of(stack: str, parent: Path) -> Iterator[Stack]:
    """`stack` driven from a copy of the project under `parent`, whose stack config the test
    edits; afterwards the checkout's config is applied again."""
    copy = Stack(copy_project(parent / "project", keep_stacks=(stack,)), stack)
    try:
        yield copy
    finally:
        pulumi("up", "--yes", "--skip-preview", "-s", stack)


def name_of(step: dict[str, Any]) -> str:
    return str(step["urn"]).rsplit("::", 1)[-1]


def type_of(step: dict[str, Any]) -> str:
    return str(step["urn"]).split("::")[-2].rsplit("$", 1)[-1]


def throwaway_stack(parent: Path, name: str, config: Callable[[str], dict[str, Any]]) -> Iterator[Stack]:
    """A stack of its own, in a namespace of its own (a deleted namespace never goes away
    without controllers), brought up with `config(namespace)` and destroyed afterwards."""
    stack = Stack(copy_project(parent / "project"), name)
    stack.namespace = f"{name}-{secrets.token_hex(3)}"
    stack.write(config(stack.namespace))
    stack.init()
    stack.cli("up", "--yes", "--skip-preview")
    yield stack
    stack.write(config(stack.namespace))
    stack.destroy()
