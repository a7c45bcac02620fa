"""Writes the option catalog of one nova release: every option nova and its
libraries register, as components/settings/catalog.py reads it.

Runs with a Python that has exactly that nova installed, with the libraries of
its release (devenv/catalog.sh builds such a venv per release and runs this):

    python tools/nova_catalog.py 34.0.0 components/settings/catalogs/nova-34.0.0.json

It needs nova and the oslo libraries only, not this project's dependencies.
The options come from nova's own registration (oslo.config's entry points),
plus the groups nova registers at run time, so the catalog is what that nova
accepts, not a copy of its documentation.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Sequence
from importlib import metadata
from typing import Any

# The file layout; components/settings/catalog.py refuses any other.
FORMAT = 1
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
# Libraries whose options nova.conf lists as its own (auth plugins, database,
# key manager, os-brick locks) and the parser itself: recorded with their versions.
NOVA_CONF_LIBRARIES = ("oslo.config", "keystoneauth1", "oslo.db", "castellan", "os-brick")


def describe(opt: Any, group: str) -> dict[str, Any]:
    """One option, keeping only what differs from the reader's defaults (a short, diffable file)."""
    opt_type = opt.type
    item_type = getattr(opt_type, "item_type", None)
    deprecated = [
        [old.group or group, old.name or opt.name]
        for old in opt.deprecated_opts
        # a dashed name can never appear in a config file
        if not old.name or "-" not in old.name
    ]
    described: dict[str, Any] = {
        "type": type(opt_type).__name__,
        "item_type": type(item_type).__name__ if item_type is not None else None,
        "multi": bool(opt.multi),
        "choices": [c for c in (getattr(opt_type, "choices", None) or {}) if c is not None],
        "ignore_case": bool(getattr(opt_type, "ignore_case", False)),
        "min": getattr(opt_type, "min", None),
        "max": getattr(opt_type, "max", None),
        "deprecated_names": deprecated,
        "secret": bool(opt.secret),
    }
    # min = 0 is a bound: drop only what is absent, never a falsy number
    return {k: v for k, v in described.items() if k == "type" or not (v is None or v is False or v == [])}


def dynamic_groups() -> dict[str, dict[str, Any]]:
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
        groups.setdefault(group, {})[opt.dest] = describe(opt, group)
    return groups


def collect(namespaces: Sequence[str] = NAMESPACES) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The options of `namespaces` by group; returns (groups, namespaces that did not load)."""
    from oslo_config import cfg, generator

    groups: dict[str, dict[str, Any]] = {}
    missing: list[str] = []
    for namespace in namespaces:
        # one namespace at a time: the generator aborts on any load failure
        try:
            listed = generator._list_opts([namespace])
        except Exception as error:  # any import failure of that library
            print(f"{namespace}: {error}", file=sys.stderr)
            listed = []
        if not listed:  # failed, or not installed (stevedore yields nothing)
            missing.append(namespace)
            continue
        for _, pairs in listed:
            for group, opts in pairs:
                name = group.name if isinstance(group, cfg.OptGroup) else (group or "DEFAULT")
                target = groups.setdefault(name, {})
                for opt in opts:
                    target[opt.dest] = describe(opt, name)
    if "nova.conf" not in missing:
        groups.update(dynamic_groups())
    for options in groups.values():
        # keystoneauth registers auth_type/auth_section at run time next to
        # its plugin options; some libraries (oslo.limit) do not list them
        if "auth_url" in options:
            for common in ("auth_type", "auth_section"):
                options.setdefault(common, {"type": "String"})
    return groups, missing


def libraries(namespaces: Sequence[str] = NAMESPACES) -> dict[str, str]:
    """The distributions the options came from, with their installed versions."""
    names = {"nova", *NOVA_CONF_LIBRARIES}
    for entry in metadata.entry_points(group="oslo.config.opts"):
        if entry.name in namespaces and entry.dist is not None:
            names.add(entry.dist.name)
    found: dict[str, str] = {}
    for name in names:
        try:
            found[metadata.distribution(name).metadata["Name"]] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return dict(sorted(found.items(), key=lambda item: item[0].lower()))


def catalog(release: str) -> dict[str, Any]:
    """The whole file for `release`; raises SystemExit when this Python holds another nova
    or lacks a library, since a partial catalog would pass options nova refuses."""
    installed = metadata.version("nova")
    if installed != release:
        raise SystemExit(f"this Python has nova {installed}, not {release}: run devenv/catalog.sh {release}")
    groups, missing = collect()
    if missing:
        raise SystemExit(f"namespaces that did not load: {', '.join(missing)}; install their libraries")
    return {
        "format": FORMAT,
        "nova": release,
        "libraries": libraries(),
        "namespaces": list(NAMESPACES),
        "groups": groups,
    }


def main(argv: Sequence[str]) -> int:
    if len(argv) != 2:
        print("usage: python tools/nova_catalog.py <nova release> <out.json>", file=sys.stderr)
        return 2
    release, out = argv
    warnings.simplefilter("ignore")  # libraries' deprecation noise, not ours
    data = catalog(release)
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
        handle.write("\n")
    count = sum(len(opts) for opts in data["groups"].values())
    print(f"nova {release}: {count} options in {len(data['groups'])} groups written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
