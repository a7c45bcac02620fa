"""Problems found in the stack config, reported all at once."""

from __future__ import annotations

import difflib
from collections.abc import Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from .secret import SecretStr

PROJECT = "openstack-nova"

# A config path: top-level key, then mapping keys (str) and list indexes (int).
Path = tuple[str | int, ...]
T = TypeVar("T")
_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "a boolean", list: "a list",
               dict: "an object", type(None): "null"}


def _segment(key: str) -> str:
    # Pulumi's --path syntax needs brackets for keys that hold separators.
    if any(c in key for c in '.[]"') or not key:
        return f'["{key}"]'
    return f".{key}"


def format_path(path: Path, *, project: bool = True) -> str:
    """`("nova", "cellTemplates", "cell1")` -> `openstack-nova:nova.cellTemplates.cell1`."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else _segment(part)
    text = text.removeprefix(".")
    return f"{PROJECT}:{text}" if project else text


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """'; did you mean X?' when a close match exists, else ''."""
    # compare case-insensitively: "NovaApi" should suggest "NovaAPI"
    by_lower = {choice.lower(): choice for choice in choices}
    close = difflib.get_close_matches(word.lower(), list(by_lower), n=1)
    return f"; did you mean {by_lower[close[0]]}?" if close else ""


def type_name(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the config: where (`path`) and what to do (`message`)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class SettingsError(Exception):
    """The stack config is invalid; `problems` lists every problem found."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems: list[Problem] = list(problems)
        super().__init__(str(self))

    def __str__(self) -> str:
        count = len(self.problems)
        header = f"the stack config has {count} problem{'s' if count != 1 else ''}:"
        return "\n".join([header, *(f"  {p}" for p in self.problems)])


class Context:
    """Shared state of one load: the problems so far and which top-level keys are secret."""

    def __init__(self, secret_keys: Collection[str]) -> None:
        self.problems: list[Problem] = []
        self.secret_keys = frozenset(secret_keys)
        # Results of pure checks by their input, so that a value many nodes share (a
        # customServiceConfig snippet) is checked once per load, not once per node.
        self.checked: dict[Hashable, Any] = {}
        # The indexes of list items left out as invalid, by the list's path (see items()).
        self.removed: dict[Path, list[int]] = {}

    def problem(self, path: Path, message: str) -> None:
        self.problems.append(Problem(format_path(path), message))

    def has_problem(self, path: Path) -> bool:
        return any(p.path == format_path(path) for p in self.problems)

    def items(self, path: Path, values: Sequence[T]) -> list[tuple[Path, T]]:
        """The items of the list at `path`, each with its path as given (counting the invalid ones left out)."""
        removed = self.removed.get(path, [])
        indexes = [i for i in range(len(values) + len(removed)) if i not in removed]
        return [((*path, index), value) for index, value in zip(indexes, values, strict=True)]

    def is_secret(self, path: Path) -> bool:
        """True if Pulumi holds the value at `path` as a secret (its top-level key is one)."""
        return str(path[0]) in self.secret_keys

    def secret(self, path: Path, value: str | None) -> SecretStr | None:
        """The value at `path` as a secret; a problem unless Pulumi holds it as one."""
        if value is None:
            return None
        if not self.is_secret(path):
            where = format_path(path, project=False)
            self.problem(path, f"is in plain text; set it with `pulumi config set --secret --path '{where}' <value>`")
        return SecretStr(value)
