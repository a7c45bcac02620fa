"""Problems found in the stack config, reported all at once."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

PROJECT = "openstack-nova"

# A config path: top-level key, then mapping keys (str) and list indexes (int).
Path = tuple[str | int, ...]


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
