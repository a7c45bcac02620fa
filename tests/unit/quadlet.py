"""The roles' Quadlet units as Ansible writes them, and podman's own Quadlet generators
(one per podman line users' nodes run, built by `devenv/toolchain.sh quadlet`) turning
them into the systemd services the nodes run."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import yaml

ROOT = Path(__file__).resolve().parents[2]
ROLES = ROOT / "ansible" / "roles"


def role_vars(role: str) -> dict[str, Any]:
    """The role's defaults and vars as written (vars may name defaults in Jinja)."""
    found: dict[str, Any] = {}
    for part in ("defaults", "vars"):
        path = ROLES / role / part / "main.yml"
        if path.exists():
            found.update(yaml.safe_load(path.read_text()) or {})
    return found


def _units_key(role: str) -> str | None:
    key = f"{role}_quadlet_units"
    return key if key in role_vars(role) else None


# The roles that run containers: each names its units in vars/main.yml (`<role>_quadlet_units`)
# and hands them to edpm_container_quadlet.
QUADLET_ROLES = sorted(path.name for path in ROLES.iterdir() if (path / "vars").is_dir() and _units_key(path.name))


def unit_names(role: str) -> list[str]:
    """The units the role runs, in start order."""
    key = _units_key(role)
    assert key is not None, role
    return list(role_vars(role)[key])


def _templated(value: Any, env: jinja2.Environment, variables: dict[str, Any]) -> Any:
    if isinstance(value, str):
        return env.from_string(value).render(**variables)
    if isinstance(value, list):
        return [_templated(item, env, variables) for item in value]
    if isinstance(value, dict):
        return {key: _templated(item, env, variables) for key, item in value.items()}
    return value


def render_unit(role: str, unit: str, **overrides: Any) -> str:
    """`<unit>.container` as the role renders it (Ansible's template lookup: trim_blocks, the
    trailing newline kept), with the role's variables and `overrides` (a node's variables) over
    them; the values of vars/main.yml (the volume lists) are templated with those."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(ROLES / role / "templates"), trim_blocks=True,
                             keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    variables = {**role_vars(role), "ansible_managed": "managed", **overrides}
    templated = {name: _templated(value, env, variables) for name, value in variables.items()}
    return env.get_template(f"{unit}.container.j2").render(**templated)


def unit_lines(text: str, key: str) -> list[str]:
    """The values of `key` in a unit, in order."""
    return [line.split("=", 1)[1] for line in text.splitlines() if line.startswith(key + "=")]


def every_unit(**overrides: Any) -> dict[str, str]:
    """Every Quadlet unit of every role, file name -> text, for a node with `overrides`."""
    return {f"{unit}.container": render_unit(role, unit, **overrides)
            for role in QUADLET_ROLES for unit in unit_names(role)}


# --- the generators ----------------------------------------------------------------------

@dataclass(frozen=True)
class Generator:
    version: str  # podman's
    path: Path


def generators() -> list[Generator]:
    """podman's Quadlet of every version of QUADLET_VERSIONS (devenv/versions.env), built
    first if missing. Raises with toolchain.sh's reason (e.g. Go is missing) if it cannot be."""
    proc = subprocess.run([str(ROOT / "devenv" / "toolchain.sh"), "quadlet"], capture_output=True, text=True,
                          check=False, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"podman's Quadlet generators are not built and could not be ({proc.stderr.strip()}); "
                           "`make quadlet` builds them")
    return [Generator(Path(line).name.removeprefix("quadlet-"), Path(line)) for line in proc.stdout.split()]


@dataclass(frozen=True)
class Generated:
    services: dict[str, str]  # file name -> text of each service the generator wrote
    problems: list[str]  # what it reported, and each unit it wrote no service for


# The one line of a dry run that reports no problem.
_LOADING = re.compile(r"^quadlet-generator\[\d+\]: Loading source unit file \S+$")
_HEADER = re.compile(r"^---(\S+)---$")


def generate(generator: Path, units: dict[str, str], workdir: Path) -> Generated:
    """A dry run of `generator` over `units` (file name -> text), as systemd runs it at boot
    and at every daemon-reload, except that it prints the services instead of writing them."""
    unit_dir = workdir / "units"
    unit_dir.mkdir(parents=True)
    for name, text in units.items():
        (unit_dir / name).write_text(text)
    proc = subprocess.run([str(generator), "-dryrun"], capture_output=True, text=True, check=False, timeout=60,
                          env={**os.environ, "QUADLET_UNIT_DIRS": str(unit_dir)})
    services: dict[str, list[str]] = {}
    current: list[str] = []
    for line in proc.stdout.splitlines():
        header = _HEADER.match(line)
        if header:
            current = services.setdefault(Path(header.group(1)).name, [])
        else:
            current.append(line)
    # podman 4.4 exits 0 after skipping a unit it cannot convert: its messages tell
    problems = [line for line in proc.stderr.splitlines() if line.strip() and not _LOADING.match(line)]
    if proc.returncode != 0:
        problems.append(f"exit status {proc.returncode}")
    problems += [f"no {name.removesuffix('.container')}.service generated from {name}" for name in units
                 if f"{name.removesuffix('.container')}.service" not in services]
    return Generated({name: "\n".join(lines) for name, lines in services.items()}, problems)


# --- what a service runs -----------------------------------------------------------------

def service_values(service: str, section: str, key: str) -> list[str]:
    """The values of `key` in `section` of a service file, in order."""
    values, current = [], None
    for line in service.splitlines():
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
        elif current == section and line.startswith(key + "="):
            values.append(line.split("=", 1)[1])
    return values


@dataclass(frozen=True)
class PodmanRun:
    """The `podman run` of a service's ExecStart: its options (flag, value or None) in order,
    `--flag=value` and `--flag value` alike, then the image and the command."""

    options: list[tuple[str, str | None]]
    image: str
    command: list[str]

    def values(self, flag: str) -> list[str | None]:
        return [value for name, value in self.options if name == flag]

    def last(self, flag: str) -> str | None:
        """What podman uses of a flag given more than once: the last one."""
        found = self.values(flag)
        assert found, f"podman run has no {flag}"
        return found[-1]


def podman_run(service: str, image: str) -> PodmanRun:
    (exec_start,) = service_values(service, "Service", "ExecStart")
    args = shlex.split(exec_start)
    assert args[:2] == ["/usr/bin/podman", "run"], args[:2]
    end = args.index(image)
    options: list[tuple[str, str | None]] = []
    i = 2
    while i < end:
        arg = args[i]
        if "=" in arg:
            flag, value = arg.split("=", 1)
            options.append((flag, value))
        elif i + 1 < end and not args[i + 1].startswith("-"):
            options.append((arg, args[i + 1]))
            i += 1
        else:
            options.append((arg, None))
        i += 1
    return PodmanRun(options, image, args[end + 1:])
