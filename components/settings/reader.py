"""Reading raw (JSON-decoded) config while collecting problems.

Every accessor records a Problem and returns a fallback instead of raising,
so one pass over the config reports everything that is wrong.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping
from types import MappingProxyType
from typing import Any

from .errors import Path, Problem, did_you_mean, format_path
from .secret import SecretStr

_TYPE_NAMES = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
    list: "a list",
    dict: "an object",
    type(None): "null",
}


def type_name(value: Any) -> str:
    for kind, name in _TYPE_NAMES.items():
        if type(value) is kind:
            return name
    return type(value).__name__


class Context:
    """Shared state of one load: the problems so far and which top-level keys are secret."""

    def __init__(self, secret_keys: Collection[str]) -> None:
        self.problems: list[Problem] = []
        self.secret_keys = frozenset(secret_keys)
        # Results of pure checks by their input, so that a value many nodes share (a
        # customServiceConfig snippet) is checked once per load, not once per node.
        self.checked: dict[Hashable, Any] = {}

    def problem(self, path: Path, message: str) -> None:
        self.problems.append(Problem(format_path(path), message))

    def wrong_type(self, path: Path, expected: str, value: Any) -> None:
        self.problem(path, f"expected {expected}, got {type_name(value)}")


def is_int(value: Any) -> bool:
    # bool is a subclass of int; `replicas: true` must not mean 1.
    return isinstance(value, int) and not isinstance(value, bool)


class Obj:
    """A config object (mapping) at `path`; absent or wrongly typed reads as empty."""

    def __init__(self, ctx: Context, path: Path, value: Any) -> None:
        self.ctx = ctx
        self.path = path
        self.present = value is not None
        self.valid = value is None or isinstance(value, Mapping)
        self._seen: set[str] = set()
        self._data: Mapping[str, Any] = {}
        if isinstance(value, Mapping):
            self._data = value
        elif value is not None:
            ctx.wrong_type(path, "an object", value)

    def at(self, key: str | int) -> Path:
        return (*self.path, key)

    def has(self, key: str) -> bool:
        self._seen.add(key)
        return self._data.get(key) is not None

    def raw(self, key: str) -> Any:
        self._seen.add(key)
        return self._data.get(key)

    def names(self) -> list[str]:
        return list(self._data)

    def text(self, key: str, default: str, *, allow_empty: bool = True) -> str:
        value = self.raw(key)
        if value is None:
            return default
        if not isinstance(value, str):
            self.ctx.wrong_type(self.at(key), "a string", value)
            return default
        if not allow_empty and not value.strip():
            self.ctx.problem(self.at(key), "must not be empty; remove the key to use the default")
            return default
        return value

    def opt_text(self, key: str) -> str | None:
        if self.raw(key) is None:
            return None
        return self.text(key, "", allow_empty=False) or None

    def integer(self, key: str, default: int, *, lo: int | None = None, hi: int | None = None) -> int:
        value = self.raw(key)
        if value is None:
            return default
        if not is_int(value):
            self.ctx.wrong_type(self.at(key), "an integer", value)
            return default
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            bounds = f"{lo if lo is not None else '-inf'}..{hi if hi is not None else 'inf'}"
            self.ctx.problem(self.at(key), f"{value} is out of range; expected {bounds}")
            return default
        return int(value)

    def flag(self, key: str, default: bool) -> bool:
        value = self.raw(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.ctx.wrong_type(self.at(key), "a boolean (true/false)", value)
            return default
        return value

    def obj(self, key: str) -> Obj:
        return Obj(self.ctx, self.at(key), self.raw(key))

    def entries(self, key: str) -> list[tuple[str, Obj]]:
        """A map of names to objects, in the order given."""
        holder = self.obj(key)
        result = [(name, holder.obj(name)) for name in holder.names()]
        holder.close()
        return result

    def str_map(self, key: str) -> Mapping[str, str]:
        holder = self.obj(key)
        result: dict[str, str] = {}
        for name in holder.names():
            value = holder.raw(name)
            if isinstance(value, str):
                result[name] = value
            else:
                self.ctx.wrong_type(holder.at(name), "a string", value)
        return MappingProxyType(result)

    def any_map(self, key: str) -> Mapping[str, Any]:
        holder = self.obj(key)
        return MappingProxyType({name: holder.raw(name) for name in holder.names()})

    def items(self, key: str) -> list[tuple[Path, Any]]:
        """A list: each element with its path; absent reads as empty."""
        value = self.raw(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.ctx.wrong_type(self.at(key), "a list", value)
            return []
        return [((*self.at(key), index), item) for index, item in enumerate(value)]

    def str_list(self, key: str) -> tuple[str, ...] | None:
        """A list of strings; None when absent (distinct from an empty list)."""
        if self.raw(key) is None:
            return None
        result: list[str] = []
        for path, item in self.items(key):
            if isinstance(item, str):
                result.append(item)
            else:
                self.ctx.wrong_type(path, "a string", item)
        return tuple(result)

    def is_secret(self, key: str) -> bool:
        """True if Pulumi holds the value at `key` as a secret (its top-level key is one)."""
        return (str(self.path[0]) if self.path else key) in self.ctx.secret_keys

    def secret(self, key: str) -> SecretStr | None:
        value = self.raw(key)
        if value is None:
            return None
        if not isinstance(value, str):
            self.ctx.wrong_type(self.at(key), "a string", value)
            return None
        if not self.is_secret(key):
            where = format_path(self.at(key), project=False)
            self.ctx.problem(
                self.at(key),
                f"is in plain text; set it with `pulumi config set --secret --path '{where}' <value>`",
            )
        return SecretStr(value)

    def close(self) -> None:
        """Report keys nobody asked for (typos, unsupported fields)."""
        known = sorted(self._seen)
        for key in self._data:
            if key not in self._seen:
                self.ctx.problem(self.at(key), f"unknown key '{key}'{did_you_mean(key, known)}")
