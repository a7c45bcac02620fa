"""What the stack config knows of an EDPM service: its `ServiceSpec`, pure data.

Each built-in service's module (components/edpm/services/) declares its spec;
the caller of `load()` hands the specs in (`ServiceSpecs`), so that this
package never imports the services: their names, upstream's default order,
where extraMounts give them files, which must run before which, and the
service's own rules (`check`), reported with every other problem at preview.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .errors import Path
from .model import Settings

# A service's own rules: the problems of the settings for it, each with its config path.
Check = Callable[[Settings], Iterable[tuple[Path, str]]]


@dataclass(frozen=True)
class MountPoint:
    """Where an extraMounts entry mounts files for the service to get them (where upstream's
    Ansible pod has them), and what the node set is told when it does not list the service."""

    path: str
    what: str  # for messages: "the Ceph client files"
    # the problem of a node set that lists its services without this one: (where the files come
    # from, the services the node set would run had it listed none) -> message
    unlisted: Callable[[str, tuple[str, ...]], str]
    # what is wrong with a mounted file's name, if anything (e.g. a file the service never reads)
    file_problem: Callable[[str], str | None] | None = None


@dataclass(frozen=True)
class RunsBefore:
    """The service must run before `service` when a node set lists both, for `reason`."""

    service: str
    reason: str


def _no_problems(_settings: Settings) -> Iterable[tuple[Path, str]]:
    return ()


@dataclass(frozen=True)
class ServiceSpec:
    """One EDPM service as the stack config sees it.

    `order` and `default` place a built-in service: its position in upstream's order of the
    built-in services (a node set's services run in the order it lists them), and whether a node
    set that lists none runs it. `runs_before`, `mounts` and `check` are its own rules, which
    `load()` applies with every other check.
    """

    name: str
    playbook: str  # under ansible/playbooks/
    stop_playbook: str | None = None  # run when a node leaves the service
    order: int | None = None  # None: not a built-in service (the marker, a custom service)
    default: bool = False
    runs_before: tuple[RunsBefore, ...] = ()
    mounts: MountPoint | None = None  # extraMounts can give it files
    # it gives every node the host keys of nodeTemplate.knownHostsFile (that key's problem says so)
    shares_known_hosts: bool = False
    check: Check = _no_problems


@dataclass(frozen=True)
class ServiceSpecs:
    """The built-in services, in upstream's order (see `ordered`)."""

    specs: tuple[ServiceSpec, ...] = ()

    @classmethod
    def ordered(cls, specs: Iterable[ServiceSpec]) -> ServiceSpecs:
        """`specs` in upstream's order; an error for one without a place, or sharing a place or a name."""
        result: list[ServiceSpec] = []
        for spec in specs:
            if spec.order is None:
                raise ValueError(f"built-in EDPM service {spec.name} has no place in the order (set `order`)")
            clash = next((s for s in result if s.name == spec.name or s.order == spec.order), None)
            if clash is not None:
                raise ValueError(f"built-in EDPM services {clash.name} and {spec.name} share a name or a place in "
                                 f"the order ({spec.order})")
            result.append(spec)
        return cls(tuple(sorted(result, key=lambda s: s.order or 0)))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.specs)

    @property
    def default(self) -> tuple[str, ...]:
        """What a node set that lists no services runs: upstream's default list."""
        return tuple(s.name for s in self.specs if s.default)

    def get(self, name: str) -> ServiceSpec | None:
        return next((s for s in self.specs if s.name == name), None)

    def in_order(self, names: Iterable[str]) -> tuple[str, ...]:
        """Built-in `names` in upstream's order."""
        wanted = set(names)
        return tuple(s.name for s in self.specs if s.name in wanted)
