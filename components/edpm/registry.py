"""The EDPM services a node set may run: the built-in ones, one module each in
`components/edpm/services/` (found there, in upstream's order), and the stack's
custom ones (`dataplane.customServices`)."""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from components.settings import CustomService

from . import services as _package
from .custom import custom_service
from .service import EdpmService

# Built-in services registered at run time rather than found as a module (tests).
_REGISTERED: dict[str, EdpmService] = {}


@dataclass(frozen=True)
class BuiltinServices:
    """The built-in services, in upstream's order."""

    services: tuple[EdpmService, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.services)

    @property
    def default(self) -> tuple[str, ...]:
        """What a node set that lists no services runs: upstream's default list."""
        return tuple(s.name for s in self.services if s.default)

    def get(self, name: str) -> EdpmService | None:
        return next((s for s in self.services if s.name == name), None)

    def in_order(self, names: Iterable[str]) -> tuple[str, ...]:
        """Built-in `names` in upstream's order."""
        wanted = set(names)
        return tuple(s.name for s in self.services if s.name in wanted)


def _checked(services: Iterable[EdpmService]) -> tuple[EdpmService, ...]:
    """`services` in order; an error for a service without a place or sharing one, or a name."""
    result: list[EdpmService] = []
    for service in services:
        if service.order is None:
            raise ValueError(f"built-in EDPM service {service.name} has no place in the order (set `order`)")
        clash = next((s for s in result if s.name == service.name or s.order == service.order), None)
        if clash is not None:
            raise ValueError(f"built-in EDPM services {clash.name} and {service.name} share a name or a place in "
                             f"the order ({service.order})")
        result.append(service)
    return tuple(sorted(result, key=lambda s: s.order or 0))


@functools.cache
def _modules() -> tuple[EdpmService, ...]:
    """The `SERVICE` of every module of components/edpm/services/."""
    found = []
    for module in sorted(m.name for m in pkgutil.iter_modules(_package.__path__)):
        loaded = importlib.import_module(f"{_package.__name__}.{module}")
        service = getattr(loaded, "SERVICE", None)
        if not isinstance(service, EdpmService):
            raise TypeError(f"{loaded.__name__} defines no SERVICE (an EdpmService)")
        found.append(service)
    return _checked(found)


def builtin() -> BuiltinServices:
    """The built-in services, in upstream's order."""
    return BuiltinServices(_checked([*_modules(), *_REGISTERED.values()]) if _REGISTERED else _modules())


def of_node_set(services: Sequence[str], custom: Mapping[str, CustomService]) -> list[EdpmService]:
    """The services a node set lists, in its order (the settings have checked every name)."""
    known = builtin()
    return [known.get(name) or custom_service(custom[name]) for name in services]


@contextmanager
def registered(service: EdpmService) -> Iterator[EdpmService]:
    """`service` as a built-in service while the block runs, as if it were a module of services/."""
    _checked([*builtin().services, service])
    _REGISTERED[service.name] = service
    try:
        yield service
    finally:
        del _REGISTERED[service.name]
