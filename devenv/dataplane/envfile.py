"""The shell assignment files of devenv (network.env, versions.env), read as the scripts
that source them read them."""

from __future__ import annotations

import re
from pathlib import Path

DEVENV = Path(__file__).resolve().parents[1]
_LINE = re.compile(r"^([A-Z_][A-Z0-9_]*)=(.*)$")
_REFERENCE = re.compile(r"\$(?:\{([A-Z_][A-Z0-9_]*)\}|([A-Z_][A-Z0-9_]*))")


class EnvFileError(ValueError):
    """A line the reader does not take (it takes what the files hold, nothing more)."""


def read_env(text: str) -> dict[str, str]:
    """NAME=value lines (comments and blank lines skipped), a value whole in double or single
    quotes or bare; $NAME and ${NAME} of an earlier line are expanded (single quotes keep them)."""
    values: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        if not match:
            raise EnvFileError(f"line {number}: not a NAME=value assignment: {raw!r}")
        name, value = match.groups()
        if len(value) >= 2 and value[0] == value[-1] == "'":
            values[name] = value[1:-1]
            continue
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        elif any(c in value for c in " \t\"'`\\;|&<>()"):
            raise EnvFileError(f"line {number}: quote the value of {name} (it has a shell special character)")
        values[name] = _expand(value, values, number)
    return values


def _expand(value: str, known: dict[str, str], number: int) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name not in known:
            raise EnvFileError(f"line {number}: ${name} is not set by an earlier line")
        return known[name]

    return _REFERENCE.sub(one, value)


def load(name: str) -> dict[str, str]:
    """devenv/<name>, read."""
    return read_env((DEVENV / name).read_text())
