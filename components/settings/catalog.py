"""The catalogs of nova's config options, one per nova release, used to check
`customServiceConfig` against the release the stack deploys.

Each catalog is a JSON file in `catalogs/`, `nova-<release>.json`, written by
`tools/nova_catalog.py` from that release's own option registration (`make
catalog NOVA_RELEASE=<release>` builds the release's venv and runs it), so that
checking a stack needs only this module, not nova's 130 dependencies:

    {"format": 1, "nova": "<release>", "libraries": {dist: version},
     "namespaces": [...], "groups": {group: {option: spec}}}

A spec has `type` and, when they apply, `item_type` (a list's items), `multi`,
`choices`, `ignore_case`, `min`, `max`, `secret` and `deprecated_names`
(`[group, name]` pairs that oslo.config still accepts). A group name with `*`
stands for the groups nova registers only at run time, e.g. `neutron_physnet_*`,
one per physnet of `[neutron] physnets`.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

# The file layout this module reads (tools/nova_catalog.py FORMAT).
FORMAT = 1
CATALOG_DIR = Path(__file__).with_name("catalogs")
# stands for any name in a group that nova registers at run time
DYNAMIC_WILDCARD = "*"
# A nova version as PyPI names it (34.0.0, 27.5.1, 35.0.0.0rc1); never a path.
_RELEASE = re.compile(r"[0-9]+(\.[0-9A-Za-z]+)*")
_SERIES = re.compile(r"20[0-9]{2}\.[12]")
_SERIES_HINT = " (nova's own version, not the OpenStack series: 2023.1 antelope is nova 27)"


def regenerate_command(release: str) -> str:
    """The one command that (re)writes the catalog of `release`."""
    return f"make catalog NOVA_RELEASE={release}"


def not_a_version(release: str) -> str | None:
    """Why `release` is not a nova version (nor safe in a file name); None when it is one."""
    if _RELEASE.fullmatch(release):
        return None
    return f"'{release}' is not a nova version like 34.0.0{_SERIES_HINT}"


def series_hint(release: str) -> str:
    """A note for a value that looks like an OpenStack series (2023.1) rather than nova's version."""
    return _SERIES_HINT if _SERIES.fullmatch(release) else ""


class CatalogError(Exception):
    """No usable catalog for a release; the message says how to make one."""


@dataclass(frozen=True)
class OptionSpec:
    """What the catalog knows about one option."""

    type: str
    item_type: str | None = None
    multi: bool = False
    choices: tuple[Any, ...] = ()
    ignore_case: bool = False
    min: float | None = None
    max: float | None = None
    secret: bool = False


@dataclass(frozen=True)
class OptionCatalog:
    """Options by group; deprecated names resolve to their current spec."""

    groups: Mapping[str, Mapping[str, OptionSpec]]
    aliases: Mapping[tuple[str, str], OptionSpec]
    release: str | None = None  # the nova release the options come from, when known

    @property
    def subject(self) -> str:
        """What the options belong to, for messages: "nova 27.5.1" or "nova"."""
        return f"nova {self.release}" if self.release else "nova"

    def _options(self, group: str) -> Mapping[str, OptionSpec] | None:
        if group in self.groups:
            return self.groups[group]
        for pattern, options in self.groups.items():
            if DYNAMIC_WILDCARD in pattern and fnmatch.fnmatchcase(group, pattern):
                return options
        return None

    def lookup(self, group: str, name: str) -> OptionSpec | None:
        found = (self._options(group) or {}).get(name)
        return found if found is not None else self.aliases.get((group, name))

    def has_group(self, group: str) -> bool:
        return self._options(group) is not None or any(g == group for g, _ in self.aliases)

    def names_in(self, group: str) -> list[str]:
        names = list(self._options(group) or {})
        return names + [n for g, n in self.aliases if g == group]

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, release: str | None = None) -> OptionCatalog:
        """From `{group: {option: spec}}`, the `groups` of a catalog file."""
        groups: dict[str, dict[str, OptionSpec]] = {}
        aliases: dict[tuple[str, str], OptionSpec] = {}
        for group, options in data.items():
            specs = groups.setdefault(group, {})
            for name, raw in options.items():
                spec = OptionSpec(
                    type=str(raw.get("type", "String")),
                    item_type=raw.get("item_type"),
                    multi=bool(raw.get("multi", False)),
                    choices=tuple(raw.get("choices") or ()),
                    ignore_case=bool(raw.get("ignore_case", False)),
                    min=raw.get("min"),
                    max=raw.get("max"),
                    secret=bool(raw.get("secret", False)),
                )
                specs[name] = spec
                for old_group, old_name in raw.get("deprecated_names") or ():
                    aliases[(old_group, old_name)] = spec
        return cls(groups=groups, aliases=aliases, release=release)


def _read(path: Path) -> OptionCatalog:
    """Raises CatalogError with what is wrong (the caller names the file)."""
    try:
        stat = path.stat()
    except OSError as error:
        raise CatalogError(f"cannot be read ({error.strerror})") from None
    return _read_cached(path, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=8)
def _read_cached(path: Path, _mtime_ns: int, _size: int) -> OptionCatalog:
    # keyed by mtime and size too: a regenerated file is read again
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise CatalogError(f"cannot be read ({error})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("groups"), dict):
        raise CatalogError(f"is not a catalog this program reads (format {FORMAT})")
    release = data.get("nova")
    try:
        return OptionCatalog.from_json(data["groups"], release=str(release) if release is not None else None)
    except (AttributeError, TypeError, ValueError) as error:
        raise CatalogError(f"has a malformed option ({error})") from None


def _version_key(release: str) -> tuple[tuple[int, str], ...]:
    return tuple((int(p), "") if p.isdigit() else (-1, p) for p in release.split("."))


@dataclass(frozen=True)
class CatalogStore:
    """The catalogs of a directory, one file per nova release."""

    directory: Path = CATALOG_DIR

    def path(self, release: str) -> Path:
        return self.directory / f"nova-{release}.json"

    def releases(self) -> list[str]:
        """The releases with a catalog here, oldest first."""
        names = (p.name.removeprefix("nova-").removesuffix(".json") for p in self.directory.glob("nova-*.json"))
        return sorted((n for n in names if _RELEASE.fullmatch(n)), key=_version_key)

    def load(self, release: str) -> OptionCatalog:
        """The catalog of `release`; raises CatalogError saying how to make a usable one."""
        make = regenerate_command(release)
        problem = not_a_version(release)
        if problem:
            raise CatalogError(problem)
        path = self.path(release)
        if not path.is_file():
            shipped = ", ".join(self.releases()) or "none"
            raise CatalogError(
                f"no option catalog for nova {release}{series_hint(release)} (catalogs: {shipped}); "
                f"generate {self._shown(path)} with `{make}` and commit it"
            )
        shown = self._shown(path)
        try:
            catalog = _read(path)
        except CatalogError as error:
            raise CatalogError(f"{shown} {error}; regenerate it with `{make}`") from None
        if catalog.release != release:
            held = f"holds the options of nova {catalog.release}" if catalog.release else "names no nova release"
            raise CatalogError(f"{shown} {held}, not {release}; regenerate it with `{make}`")
        return catalog

    def _shown(self, path: Path) -> str:
        """`path` relative to the checkout when it is in it (what a user would type)."""
        root = CATALOG_DIR.parents[2]
        return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


SHIPPED = CatalogStore()
