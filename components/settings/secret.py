"""A string that does not show itself in logs, reprs or tracebacks."""

from __future__ import annotations

from dataclasses import dataclass, field

MASK = "[secret]"


@dataclass(frozen=True)
class SecretStr:
    """Holds a secret; only `reveal()` returns the plaintext."""

    _value: str = field(repr=False)

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return MASK

    def __str__(self) -> str:
        return MASK

    def __bool__(self) -> bool:
        return bool(self._value)
