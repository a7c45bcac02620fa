"""The EDPM services a node set may run: the built-in ones, one module each in
`components/edpm/services/` (found there, in upstream's order), and the stack's
custom ones (`dataplane.customServices`)."""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Mapping, Sequence
from types import ModuleType

from components.settings import CustomService, ServiceSpecs

from . import services as _package
from .custom import custom_service
from .service import EdpmService


def found_in(package: ModuleType) -> tuple[EdpmService, ...]:
    """The `SERVICE` of every module of `package`, in upstream's order (an error for a module
    without one, or two services sharing a name or a place)."""
    found = []
    for module in sorted(m.name for m in pkgutil.iter_modules(package.__path__)):
        loaded = importlib.import_module(f"{package.__name__}.{module}")
        service = getattr(loaded, "SERVICE", None)
        if not isinstance(service, EdpmService):
            raise TypeError(f"{loaded.__name__} defines no SERVICE (an EdpmService)")
        found.append(service)
    order = {s.name: i for i, s in enumerate(ServiceSpecs.ordered(s.spec for s in found).specs)}
    return tuple(sorted(found, key=lambda s: order[s.name]))


@functools.cache
def builtin_services() -> tuple[EdpmService, ...]:
    """The built-in services, in upstream's order."""
    return found_in(_package)


def specs() -> ServiceSpecs:
    """What the stack config knows of the built-in services (what `settings.load()` is given)."""
    return ServiceSpecs(tuple(s.spec for s in builtin_services()))


def of_node_set(services: Sequence[str], custom: Mapping[str, CustomService],
                builtin: Sequence[EdpmService]) -> list[EdpmService]:
    """The services a node set lists, in its order (the settings have checked every name)."""
    known = {s.name: s for s in builtin}
    return [known.get(name) or custom_service(custom[name]) for name in services]
