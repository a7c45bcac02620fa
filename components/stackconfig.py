"""The stack config as the program reads it: `components.settings` given the built-in EDPM
services' specs (components/edpm/registry.py), which that package never imports itself."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.edpm import registry
from components.settings import Settings
from components.settings import load as _load
from components.settings.source import from_pulumi_config as _from_pulumi_config


def load(raw: Mapping[str, Any], **options: Any) -> Settings:
    """`components.settings.load(raw, **options)` with the built-in EDPM services."""
    return _load(raw, services=registry.specs(), **options)


def from_pulumi_config() -> Settings:
    """The running stack's settings, with the built-in EDPM services; raises SettingsError."""
    return _from_pulumi_config(registry.specs())
