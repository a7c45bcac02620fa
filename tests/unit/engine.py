"""A Pulumi mock monitor that keeps what the engine is told of each resource: its parent, the
resources it waits for, the outputs it asks to keep secret; and that, as the engine does, hands
those outputs back as secrets.

`waits_for` answers in which order `pulumi up` creates things: a resource is created once its
dependencies are, and it registers only once its parent has, which waits for the parent's own
dependencies (so a component's dependencies hold back its children at creation)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockMonitor, MockResourceArgs
from pulumi.runtime.proto import resource_pb2

SECRET_SIG = rpc._special_secret_sig


def secret(value: Any) -> dict[str, Any]:
    return {rpc._special_sig_key: SECRET_SIG, "value": value}


def is_secret(value: Any) -> bool:
    return isinstance(value, dict) and value.get(rpc._special_sig_key) == SECRET_SIG


def in_clear(value: Any) -> Any:
    """`value` with every secret part left out: what a preview shows, what state keeps unencrypted."""
    if is_secret(value):
        return "[secret]"
    if isinstance(value, dict):
        return {k: in_clear(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [in_clear(v) for v in value]
    return value


@dataclass(frozen=True)
class Registration:
    urn: str
    type: str
    name: str
    parent: str
    custom: bool
    dependencies: frozenset[str]
    secret_outputs: frozenset[str]  # additionalSecretOutputs
    inputs: dict[str, Any]
    state: dict[str, Any]  # the outputs, as the engine would keep them
    aliases: tuple[str, ...] = ()  # the types it is known by besides its own (its aliases')


def name_of(registration: Registration) -> str:
    """A Kubernetes object's name, or the resource's name for anything else."""
    if registration.type.startswith("kubernetes:") and registration.custom:
        return str((registration.inputs.get("metadata") or {}).get("name", registration.name))
    return registration.name


class EngineMonitor(MockMonitor):
    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks)
        self.registered: dict[str, Registration] = {}

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 (the gRPC method's name)
        urn = self.make_urn(request.parent, request.type, request.name)
        if request.type == "pulumi:pulumi:Stack":
            return resource_pb2.RegisterResourceResponse(urn=urn)
        pulumi_mocks._ensure_event_loop()
        inputs = rpc.deserialize_properties(request.object)
        args = MockResourceArgs(typ=request.type, name=request.name, inputs=inputs, provider=request.provider,
                                resource_id=request.importId, custom=request.custom or False)
        id_, state = self.mocks.new_resource(args)
        keep_secret = frozenset(request.additionalSecretOutputs)
        state = {k: secret(v) if k in keep_secret and not is_secret(v) else v for k, v in state.items()}
        obj = pulumi_mocks._sync_await(rpc.serialize_properties(state, {}))
        self.resources[urn] = MockMonitor.ResourceRegistration(urn, id_, state)
        self.registered[urn] = Registration(
            urn=urn, type=request.type, name=request.name, parent=request.parent, custom=bool(request.custom),
            dependencies=frozenset(request.dependencies), secret_outputs=keep_secret, inputs=inputs, state=state,
            aliases=tuple(a.spec.type for a in request.aliases if a.HasField("spec") and a.spec.type))
        return resource_pb2.RegisterResourceResponse(urn=urn, id=id_, object=obj)

    # --- what was registered ------------------------------------------------------------------

    def of_type(self, typ: str) -> dict[str, Registration]:
        """By name (a Kubernetes object's own, as kubectl shows it), the resources of type `typ`."""
        return {name_of(r): r for r in self.registered.values() if r.type == typ}

    def dynamic(self) -> list[Registration]:
        """The program's dynamic resources, whatever their type."""
        return [r for r in self.registered.values() if r.type.startswith("pulumi-python:dynamic")]

    def one(self, typ: str, name: str) -> Registration:
        (found,) = [r for r in self.registered.values() if r.type == typ and name_of(r) == name]
        return found

    def _before(self, urn: str) -> Iterator[str]:
        registration = self.registered.get(urn)
        if registration is None:
            return
        yield from registration.dependencies
        if registration.parent:
            yield registration.parent

    def waits_for(self, later: Registration, earlier: Registration) -> bool:
        """Whether `pulumi up` creates `earlier` before it creates `later`."""
        seen: set[str] = set()
        pending = [later.urn]
        while pending:
            for urn in self._before(pending.pop()):
                if urn == earlier.urn:
                    return True
                if urn not in seen:
                    seen.add(urn)
                    pending.append(urn)
        return False
