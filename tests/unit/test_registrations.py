"""components.registrations: a program run as the CLI's executor runs it (the SDK's
`run_in_stack`, here with mocks for the engine) waits for its registrations one at a time,
and never waits over all its Outputs at once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pulumi
import pytest
from pulumi.runtime import settings
from pulumi.runtime.stack import run_in_stack, wait_for_rpcs
from pulumi.runtime.sync_await import _sync_await

from components.registrations import start_before_waiting

RESOURCES = 40


class _Mocks(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.names: list[str] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.names.append(args.name)
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        return {}, []


class _Thing(pulumi.CustomResource):
    def __init__(self, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("test:index:Thing", name, props, opts)


@pytest.fixture()
def waits(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many awaitables each asyncio.wait was given."""
    sizes: list[int] = []
    real = asyncio.wait

    async def wait(fs: Any, *args: Any, **kwargs: Any) -> Any:
        sizes.append(len(fs))
        return await real(fs, *args, **kwargs)

    monkeypatch.setattr(asyncio, "wait", wait)
    yield sizes


def _run_as_the_executor(program: Callable[[], None]) -> _Mocks:
    """`program` as the CLI's executor runs a program: inside a Stack of its own (run_in_stack),
    which accepts an entry point, and then the SDK's wait for what the program started."""
    mocks = _Mocks()
    pulumi.runtime.set_mocks(mocks, project="openstack-nova", stack="unit", preview=True)
    _sync_await(wait_for_rpcs())  # the mocks' own root stack, registered before the program starts
    settings.set_root_resource(None)  # run_in_stack makes its own, as under the CLI
    mocks.names.clear()
    try:
        _sync_await(run_in_stack(program))
    finally:
        settings.set_root_resource(None)
    return mocks


def _program(*, start: bool) -> Callable[[], None]:
    def program() -> None:
        previous: _Thing | None = None
        for index in range(RESOURCES):
            previous = _Thing(f"thing-{index}", {"a": str(index), "b": {"c": index}, "d": [index]},
                              pulumi.ResourceOptions(depends_on=[previous] if previous else []))
            previous.urn.apply(lambda urn: urn.upper())
        pulumi.export("last", previous.urn if previous else None)
        if start:
            start_before_waiting()

    return program


def test_without_it_the_sdk_waits_over_every_output_at_once(waits: list[int]) -> None:
    mocks = _run_as_the_executor(_program(start=False))
    assert len(mocks.names) == RESOURCES
    # the situation the module is for: rounds over about every Output of every resource
    assert max(waits) > 3 * RESOURCES


def test_with_it_the_same_resources_and_no_wait_over_all_outputs(waits: list[int]) -> None:
    mocks = _run_as_the_executor(_program(start=True))
    assert mocks.names == [f"thing-{index}" for index in range(RESOURCES)]
    assert max(waits, default=0) < RESOURCES


@pulumi.runtime.test
def test_under_mocks_it_changes_nothing() -> None:
    pulumi.runtime.set_mocks(_Mocks(), project="openstack-nova", stack="unit", preview=False)
    start_before_waiting()  # the mocks' root stack takes no entry point: no error either
