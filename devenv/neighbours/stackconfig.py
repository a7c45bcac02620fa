"""A stack's settings read the way the program reads them, through `pulumi config`.

`pulumi config --show-secrets --json` gives every key with its value (objects
also JSON-decoded as objectValue) and whether Pulumi holds it as a secret;
`load()` gets the project's keys without their prefix, as the program does.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from typing import Any

from components.settings import Settings
from components.settings.load import CONFIG_PREFIX, decode_value
from components.stackconfig import load


def _value(key: str, entry: Mapping[str, Any]) -> Any:
    if "objectValue" in entry:
        return entry["objectValue"]
    return decode_value(key, entry.get("value"))


def raw_config(config: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, Any], set[str]]:
    """The project's keys (prefix removed, values decoded) and which of them are secret."""
    raw: dict[str, Any] = {}
    secret: set[str] = set()
    for full, entry in sorted(config.items()):
        if not full.startswith(CONFIG_PREFIX):
            continue
        key = full.removeprefix(CONFIG_PREFIX)
        value = _value(key, entry)
        if value is None:
            continue
        raw[key] = value
        if entry.get("secret"):
            secret.add(key)
    return raw, secret


def pulumi_config(stack: str) -> dict[str, Any]:
    """The stack's config with secrets revealed (kept in memory, never printed)."""
    done = subprocess.run(
        ["pulumi", "config", "--show-secrets", "--json", "-s", stack],
        capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["(no output)"]
        raise RuntimeError(f"pulumi config -s {stack} failed: {lines[-1]}")
    data = json.loads(done.stdout)
    if not isinstance(data, dict):
        raise RuntimeError(f"pulumi config -s {stack} did not print an object")
    return data


def stack_settings(stack: str) -> Settings:
    """Raises SettingsError (every problem) or RuntimeError (pulumi failed)."""
    raw, secret = raw_config(pulumi_config(stack))
    return load(raw, secret_keys=secret, catalog=None)
