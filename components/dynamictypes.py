"""The type names of the program's dynamic resources, and what keeps the stacks made before
they had them.

Every dynamic resource used to have the Python SDK's one type, LEGACY_TYPE, whatever it was;
each class now names its own (the `module` and `name` of pulumi.dynamic.Resource:
`pulumi-python:dynamic/<module>:<name>`), with an alias to that one type, so that the engine
takes a resource recorded under it for the same resource: nothing is replaced and nothing runs
again (tests/unit/test_dynamic_state.py).
"""

from __future__ import annotations

import pulumi

LEGACY_TYPE = "pulumi-python:dynamic:Resource"


def type_of(module: str, name: str) -> str:
    """The type of a dynamic resource class declared with `module` and `name`."""
    return f"pulumi-python:dynamic/{module}:{name}"


def type_token(cls: type[pulumi.dynamic.Resource]) -> str:
    """The type the SDK registers a resource of dynamic resource class `cls` under."""
    return f"pulumi-python:{cls._resource_type_name}"


def with_legacy_alias(opts: pulumi.ResourceOptions | None) -> pulumi.ResourceOptions:
    """`opts` with the alias to the type the resource had before its class named its own."""
    return pulumi.ResourceOptions.merge(pulumi.ResourceOptions(aliases=[pulumi.Alias(type_=LEGACY_TYPE)]), opts)


def renamed_urn(urn: str, new_type: str) -> str:
    """The URN a resource recorded under LEGACY_TYPE has once the engine has applied its alias
    (`urn` itself for any other)."""
    head, sep, name = urn.rpartition("::")
    if head.endswith(LEGACY_TYPE):
        head = head[: -len(LEGACY_TYPE)] + new_type
    return head + sep + name
