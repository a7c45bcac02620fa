"""The catalog of nova's config options, used to check `customServiceConfig`.

The catalog is a JSON file generated once from an installed nova
(`python -m components.settings.catalog <out.json>`), so that checking a
stack needs only this module, not nova's 130 dependencies. Its shape:

    {group: {option: {type, multi, choices, ignore_case, min, max, deprecated_names, secret}}}

`deprecated_names` lists `[group, name]` pairs that oslo.config still accepts;
`item_type` names the type of a list's items. A group name with `*` stands for
the groups nova registers only at run time, e.g. `neutron_physnet_*`, one per
physnet of `[neutron] physnets`.
"""

from __future__ import annotations

import fnmatch
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV_VAR = "OPENSTACK_NOVA_OPT_CATALOG"
# stands for any name in a group that nova registers at run time
DYNAMIC_WILDCARD = "*"

# The namespaces of nova's own etc/nova/nova-config-generator.conf, plus the
# libraries whose sections 01-nova.conf sets: [cache], [oslo_limit], [oslo_reports].
NAMESPACES = (
    "nova.conf",
    "oslo.log",
    "oslo.messaging",
    "oslo.policy",
    "oslo.privsep",
    "oslo.service.periodic_task",
    "oslo.service.service",
    "oslo.middleware",
    "oslo.concurrency",
    "keystonemiddleware.auth_token",
    "osprofiler",
    "oslo.cache",
    "oslo.limit",
    "oslo.reports",
)


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
    def from_json(cls, data: Mapping[str, Any]) -> OptionCatalog:
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
        return cls(groups=groups, aliases=aliases)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> OptionCatalog:
        with open(path, encoding="utf-8") as handle:
            return cls.from_json(json.load(handle))


def catalog_from_env() -> OptionCatalog | None:
    """The catalog named by $OPENSTACK_NOVA_OPT_CATALOG; None if unset or absent."""
    path = os.environ.get(ENV_VAR)
    if not path or not Path(path).is_file():
        return None
    return OptionCatalog.from_file(path)


# --- generator: needs nova and the oslo libraries installed ---------------


def _describe(opt: Any, group: str) -> dict[str, Any]:
    opt_type = opt.type
    choices = getattr(opt_type, "choices", None) or {}
    deprecated = [
        [old.group or group, old.name or opt.name]
        for old in opt.deprecated_opts
        # a dashed name can never appear in a config file
        if not old.name or "-" not in old.name
    ]
    item_type = getattr(opt_type, "item_type", None)
    return {
        "type": type(opt_type).__name__,
        "item_type": type(item_type).__name__ if item_type is not None else None,
        "multi": bool(opt.multi),
        "choices": [c for c in choices if c is not None],
        "ignore_case": bool(getattr(opt_type, "ignore_case", False)),
        "min": getattr(opt_type, "min", None),
        "max": getattr(opt_type, "max", None),
        "deprecated_names": deprecated,
        "secret": bool(opt.secret),
    }


def _dynamic_groups() -> dict[str, dict[str, Any]]:
    """The groups nova registers once its config is loaded, named with the wildcard:
    nova's own register_dynamic_opts, run with the wildcard as the only physnet."""
    from nova.conf import neutron
    from oslo_config import cfg

    registered: list[tuple[Any, str]] = []

    class Recorder(cfg.ConfigOpts):
        def register_opt(self, opt: Any, group: Any = None, *args: Any, **kwargs: Any) -> bool:
            registered.append((opt, str(group)))
            return bool(super().register_opt(opt, group, *args, **kwargs))

    conf = Recorder()
    conf.register_opt(cfg.ListOpt("physnets", default=[DYNAMIC_WILDCARD]), group="neutron")
    conf([], project="nova", default_config_files=[])
    registered.clear()
    neutron.register_dynamic_opts(conf)
    groups: dict[str, dict[str, Any]] = {}
    for opt, group in registered:
        groups.setdefault(group, {})[opt.dest] = _describe(opt, group)
    return groups


def generate(namespaces: Sequence[str] = NAMESPACES) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Collect the options of `namespaces`; returns (catalog, skipped namespaces)."""
    from oslo_config import cfg, generator

    catalog: dict[str, dict[str, Any]] = {}
    skipped: list[str] = []
    for namespace in namespaces:
        # one namespace at a time: the generator aborts on any load failure
        try:
            listed = generator._list_opts([namespace])
        except Exception:
            listed = []
        if not listed:  # failed, or not installed (stevedore yields nothing)
            skipped.append(namespace)
            continue
        for _, groups in listed:
            for group, opts in groups:
                name = group.name if isinstance(group, cfg.OptGroup) else (group or "DEFAULT")
                target = catalog.setdefault(name, {})
                for opt in opts:
                    target[opt.dest] = _describe(opt, name)
    if "nova.conf" not in skipped:
        catalog.update(_dynamic_groups())
    for options in catalog.values():
        # keystoneauth registers auth_type/auth_section at run time next to
        # its plugin options; some libraries (oslo.limit) do not list them
        if "auth_url" in options:
            for common in ("auth_type", "auth_section"):
                options.setdefault(common, {"type": "String", "deprecated_names": []})
    return catalog, skipped


def main(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m components.settings.catalog <out.json>", file=sys.stderr)
        return 2
    catalog, skipped = generate()
    with open(argv[0], "w", encoding="utf-8") as handle:
        json.dump(catalog, handle, indent=1, sort_keys=True)
    count = sum(len(opts) for opts in catalog.values())
    print(f"{count} options in {len(catalog)} groups written to {argv[0]}")
    if skipped:
        missing = ", ".join(skipped)
        print(f"skipped namespaces that failed to load or are not installed: {missing}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
