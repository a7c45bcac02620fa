"""Reading the stack config from the Pulumi runtime: the only Pulumi-aware module here.

Raw runtime access (not `pulumi.Config.get_object`) so that secret keys are
read without warnings; `load()` is told which keys are secret instead.
"""

from __future__ import annotations

import json
from typing import Any

from pulumi.runtime import config as runtime_config

from .errors import PROJECT
from .load import load
from .model import Settings

_PREFIX = f"{PROJECT}:"
_STRING_KEYS = frozenset({"namespace"})  # Pulumi keeps top-level scalars as strings


def _decode(key: str, text: Any) -> Any:
    if key in _STRING_KEYS or not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text  # load() reports the wrong type with its path


def from_pulumi_config() -> Settings:
    """The settings of the running stack; raises SettingsError."""
    # Every project key, known or not, so that load() can flag typos.
    keys = (*runtime_config.CONFIG.get(), *runtime_config.get_config_env())
    names = {k for k in keys if k.startswith(_PREFIX)}
    raw: dict[str, Any] = {}
    secret: set[str] = set()
    for full in sorted(names):
        key = full.removeprefix(_PREFIX)
        value = runtime_config.get_config(full)
        if value is None:
            continue
        raw[key] = _decode(key, value)
        if runtime_config.is_config_secret(full):
            secret.add(key)
    return load(raw, secret_keys=secret)
