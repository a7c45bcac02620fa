"""The stack config checked against its shape (schema.py): pydantic's errors
in the project's words, each at its config path, and the config without the
values at fault (their defaults apply), so that load() goes on to find the rest."""

from __future__ import annotations

from collections.abc import Mapping
from types import NoneType, UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from annotated_types import Ge, Le
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from .errors import Context, Path, did_you_mean, type_name
from .schema import NOT_EMPTY, StackConfig

_EXPECTED = {
    "string_type": "a string",
    "int_type": "an integer",
    "bool_type": "a boolean (true/false)",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "enum": "a string",  # for a value that is no string; a string that is no choice is worded apart
}


def read(ctx: Context, raw: Mapping[str, Any]) -> StackConfig:
    """The config's shape; each problem of it recorded in `ctx`, and left out."""
    data = dict(raw)
    try:
        return StackConfig.model_validate(data)
    except ValidationError as error:
        errors = error.errors(include_url=False)
    for detail in errors:
        ctx.problem(_location(detail), _message(detail))
    data = _copy(data)
    _leave_out(ctx, data, [_location(detail) for detail in errors])
    return StackConfig.model_validate(data)  # every key left has a valid value, every other its default


def _copy(value: Any) -> Any:
    """A copy of `value` in which no two places share a dict or list (as copy.deepcopy keeps them)."""
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    return [_copy(item) for item in value] if isinstance(value, list) else value


def _leave_out(ctx: Context, data: dict[str, Any], locations: list[Path]) -> None:
    """Removes the key or list item at each of `locations`; ctx remembers the list items."""
    items: dict[Path, tuple[list[Any], set[int]]] = {}
    for location in sorted(locations, key=len):  # an entry before what is wrong within it
        parent: Any = data
        try:
            for part in location[:-1]:
                parent = parent[part]
        except (KeyError, TypeError):
            continue  # in an entry left out already
        last = location[-1]
        if isinstance(parent, list) and isinstance(last, int):
            items.setdefault(location[:-1], (parent, set()))[1].add(last)
        else:
            parent.pop(last, None)
    for path, (values, indexes) in items.items():
        ctx.removed[path] = sorted(indexes)
        for index in sorted(indexes, reverse=True):
            del values[index]


def _location(detail: ErrorDetails) -> Path:
    """Where the error is; a map's key of the wrong type (from YAML, not through Pulumi) is its entry's."""
    location = tuple(detail["loc"])
    return location[:-1] if location[-1:] == ("[key]",) else location


def _message(detail: ErrorDetails) -> str:
    kind, location, value = detail["type"], tuple(detail["loc"]), detail["input"]
    if location[-1:] == ("[key]",):
        return f"expected a string key, got {type_name(value)}"
    if kind == "extra_forbidden":
        model, _ = _declared(location[:-1])
        known = [f.alias or n for n, f in model.model_fields.items()] if _is_model(model) else []
        return f"unknown key '{location[-1]}'{did_you_mean(str(location[-1]), known)}"
    if kind == "enum" and isinstance(value, str):
        choices, _ = _declared(location)
        return f"'{value}' is not one of: {', '.join(str(c.value) for c in choices)}"
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {type_name(value)}"
    if kind in ("greater_than_equal", "less_than_equal"):
        _, field = _declared(location)
        metadata = field.metadata if field else []
        low = next((m.ge for m in metadata if isinstance(m, Ge)), "-inf")
        high = next((m.le for m in metadata if isinstance(m, Le)), "inf")
        return f"{value} is out of range; expected {low}..{high}"
    if kind == "string_pattern_mismatch" and detail.get("ctx", {}).get("pattern") == NOT_EMPTY:
        return "must not be empty; remove the key to use the default"
    return "is not a value this key takes"  # never reached: schema.py declares nothing else


def _is_model(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, BaseModel)


def _bare(kind: Any) -> Any:
    """`kind` without Annotated's metadata and without None (Optional)."""
    while True:
        origin = get_origin(kind)
        if origin is Annotated:
            kind = get_args(kind)[0]
        elif origin in (Union, UnionType):
            kind = next(k for k in get_args(kind) if k is not NoneType)
        else:
            return kind


def _declared(location: Path) -> tuple[Any, FieldInfo | None]:
    """The type schema.py declares at `location`, and its field when a model's key."""
    kind: Any = StackConfig
    field: FieldInfo | None = None
    for part in location:
        if _is_model(kind):
            field = next((f for n, f in kind.model_fields.items() if (f.alias or n) == part), None)
            kind = _bare(field.annotation) if field else None
        else:  # a map's value or a list's item
            kind, field = _bare((get_args(kind) or (None,))[-1]), None
    return kind, field

