"""The built-in EDPM services as the stack config sees them: their names,
upstream's default order and their own rules, from components.edpm's registry.

The services' modules build on this package's model, so the registry is
imported when a stack config is loaded, not when this package is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from components.edpm.registry import BuiltinServices


def builtin_services() -> BuiltinServices:
    from components.edpm import registry

    return registry.builtin()
