"""Kubernetes objects are built from pulumi_kubernetes' typed Args (ObjectMetaArgs, PodSpecArgs,
ContainerArgs, ...), never from a plain dict where such a class exists: mypy checks an Args' field
names and types, and every object reads the same way; a dict in a nested part needs a type: ignore
to pass mypy at all, and its keys meet no check before the API server's.

The check runs the whole program (`__main__.py`) under Pulumi mocks, catches each Kubernetes
resource's arguments as pulumi_kubernetes hands them over, and walks them against the type hints
of the Args classes. The one dict allowed is an extraMounts volume: the user's own Kubernetes
volume object, passed on as given (components/workload.py: extra_volumes)."""

from __future__ import annotations

import collections.abc
import re
import typing
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

from tests.unit import EXTRA_MOUNTS
from tests.unit.test_components import RecordingMocks
from tests.unit.test_rotation import _dev_config, run_main

ROOT = Path(__file__).resolve().parents[2]
# What the forward references in pulumi.Input (Output[T]) name.
_HINT_NAMES = {"Output": pulumi.Output, "T": typing.TypeVar("T")}


def _is_args(cls: Any) -> bool:
    return isinstance(cls, type) and cls.__module__.startswith("pulumi_kubernetes.") and cls.__name__.endswith("Args")


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls.__init__, localns=_HINT_NAMES)


def _alternatives(hint: Any) -> Iterator[Any]:
    """The types a value of `hint` (a tuple: of any of them) may be, through Optional, Union and
    Input's Awaitable."""
    origin = typing.get_origin(hint)
    if isinstance(hint, tuple):
        for each in hint:
            yield from _alternatives(each)
    elif origin is typing.Union or origin is collections.abc.Awaitable:
        for arg in typing.get_args(hint):
            yield from _alternatives(arg)
    else:
        yield hint


def _inside(hint: Any, container: type) -> tuple[Any, ...]:
    """The hints of an element of a Sequence (`container`) or a value of a Mapping of `hint`."""
    return tuple(typing.get_args(a)[-1] for a in _alternatives(hint) if typing.get_origin(a) is container)


def untyped(value: Any, hint: Any, path: str) -> Iterator[tuple[str, Any]]:
    """(where, what) below `value` (declared as `hint`) a dict stands in for an Args class."""
    if _is_args(type(value)):
        hints = _hints(type(value))
        for name, field in vars(value).items():
            yield from untyped(field, hints.get(name), f"{path}.{name}")
    elif isinstance(value, collections.abc.Mapping):
        if any(_is_args(a) for a in _alternatives(hint)):
            yield path, value
        else:
            for key, item in value.items():
                yield from untyped(item, _inside(hint, collections.abc.Mapping), f"{path}[{key!r}]")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from untyped(item, _inside(hint, collections.abc.Sequence), f"{path}[{index}]")


@pytest.fixture()
def kubernetes_args(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """(resource name, its arguments) of each Kubernetes resource built while the fixture is up."""
    caught: list[tuple[str, Any]] = []
    init = pulumi.CustomResource.__init__

    def catching(self: pulumi.CustomResource, t: str, name: str, props: Any = None, *args: Any, **kwargs: Any) -> None:
        if type(self).__module__.startswith("pulumi_kubernetes"):
            caught.append((f"{t} {name}", props))
        init(self, t, name, props, *args, **kwargs)

    monkeypatch.setattr(pulumi.CustomResource, "__init__", catching)
    return caught


def test_every_kubernetes_object_of_the_program_is_built_from_typed_args(
        tmp_path: Path, kubernetes_args: list[tuple[str, Any]]) -> None:
    config = _dev_config(tmp_path)
    config["extraMounts"] = EXTRA_MOUNTS
    run_main(config, RecordingMocks())
    given = [volume for mount in EXTRA_MOUNTS for volume in mount["volumes"]]
    kinds = {name.split(" ")[0] for name, _ in kubernetes_args}
    # the walk saw the objects that have nested parts
    assert {"kubernetes:core/v1:Namespace", "kubernetes:apps/v1:StatefulSet", "kubernetes:core/v1:Service",
            "kubernetes:batch/v1:Job", "kubernetes:batch/v1:CronJob", "kubernetes:core/v1:Secret"} <= kinds
    found = [path for name, props in kubernetes_args for path, value in untyped(props, type(props), name)
             if not (re.search(r"\.volumes\[\d+\]$", path) and value in given)]
    assert not found, "dicts where pulumi_kubernetes has an Args class:\n" + "\n".join(found)
    # ...and it did meet the user's volumes, and let exactly those through
    api = next(props for name, props in kubernetes_args if name == "kubernetes:apps/v1:StatefulSet nova-api")
    assert [v for v in api.spec.template.spec.volumes if isinstance(v, dict)] == [given[0]]


def test_the_walk_finds_a_dict_where_an_args_class_exists() -> None:
    env = [{"name": "A", "value": "1"}]
    container = k8s.core.v1.ContainerArgs(name="c", image="i", env=env)  # type: ignore[arg-type]
    metadata = {"labels": {"a": "b"}}
    spec = k8s.apps.v1.StatefulSetSpecArgs(
        selector=k8s.meta.v1.LabelSelectorArgs(match_labels={"a": "b"}),  # a map: no Args class, no finding
        service_name="s",
        template=k8s.core.v1.PodTemplateSpecArgs(
            metadata=metadata,  # type: ignore[arg-type]
            spec=k8s.core.v1.PodSpecArgs(containers=[container]),
        ),
    )
    assert list(untyped(spec, k8s.apps.v1.StatefulSetSpecArgs, "spec")) == [
        ("spec.template.metadata", metadata), ("spec.template.spec.containers[0].env[0]", env[0])]


@pulumi.runtime.test
def test_the_catch_sees_a_resource_given_a_dict(kubernetes_args: list[tuple[str, Any]]) -> pulumi.Output[Any]:
    pulumi.runtime.set_mocks(RecordingMocks(), project="openstack-nova", stack="unit", preview=False)
    # the Namespace's metadata as it was given before it became an ObjectMetaArgs
    namespace = k8s.core.v1.Namespace("deliberate", metadata={"name": "ns"})
    ((name, props),) = kubernetes_args
    assert [path for path, _ in untyped(props, type(props), name)] == [
        "kubernetes:core/v1:Namespace deliberate.metadata"]
    return namespace.urn
