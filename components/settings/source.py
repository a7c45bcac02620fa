"""Reading the stack config from the Pulumi runtime: the only Pulumi-aware module here.

Raw runtime access (not `pulumi.Config.get_object`) so that secret keys are
read without warnings; `load()` is told which keys are secret instead.
"""

from __future__ import annotations

from typing import Any

from pulumi.runtime import config as runtime_config

from .load import CONFIG_PREFIX, decode_value, load
from .model import Settings
from .services import ServiceSpecs


def from_pulumi_config(services: ServiceSpecs) -> Settings:
    """The settings of the running stack with the built-in EDPM `services`; raises SettingsError."""
    # Every project key, known or not, so that load() can flag typos.
    keys = (*runtime_config.CONFIG.get(), *runtime_config.get_config_env())
    names = {k for k in keys if k.startswith(CONFIG_PREFIX)}
    raw: dict[str, Any] = {}
    secret: set[str] = set()
    for full in sorted(names):
        key = full.removeprefix(CONFIG_PREFIX)
        value = runtime_config.get_config(full)
        if value is None:
            continue
        raw[key] = decode_value(key, value)
        if runtime_config.is_config_secret(full):
            secret.add(key)
    return load(raw, services=services, secret_keys=secret)
