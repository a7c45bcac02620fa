"""Which Python runs a program or plugin, and what is installed in it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from pulumi.runtime.proto import language_pb2, plugin_pb2


def options(info: language_pb2.ProgramInfo) -> dict[str, Any]:
    """`runtime.options` of the Pulumi.yaml (or PulumiPolicy.yaml) the info was built from."""
    return json_format.MessageToDict(info.options) if info.HasField("options") else {}


def virtualenv(info: language_pb2.ProgramInfo, default: str | None = None) -> Path | None:
    venv = options(info).get("virtualenv") or os.environ.get("PULUMI_RUNTIME_VIRTUALENV") or default
    if not venv:
        return None
    path = Path(venv)
    if path.is_absolute():
        return path
    # Python finds a venv by its interpreter's path taken literally: a `..` after a
    # symlinked directory must mean the real parent, as it does for the file system.
    return Path(os.path.normpath(Path(info.root_directory or os.getcwd()).resolve() / path))


def python(info: language_pb2.ProgramInfo, default_venv: str | None = None) -> tuple[str, dict[str, str]]:
    """The interpreter for the program and the environment it runs in.

    Raises FileNotFoundError, with what to do, when the named virtualenv is missing.
    """
    env = dict(os.environ)
    venv = virtualenv(info, default_venv)
    if venv is not None:
        interpreter = venv / "bin" / "python"
        if not interpreter.exists():
            raise FileNotFoundError(
                f"the virtualenv '{venv}' named in the project's runtime options does not exist: "
                "run `make venv` (or create it and install the requirements into it)"
            )
        env["VIRTUAL_ENV"] = str(venv)
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env.pop("PYTHONHOME", None)
        return str(interpreter), env
    return env.get("PULUMI_PYTHON_CMD", "python3"), env


def _site_packages(interpreter: str, env: dict[str, str]) -> list[Path]:
    out = subprocess.run(
        [interpreter, "-c", "import json, site; print(json.dumps(site.getsitepackages()))"],
        env=env, capture_output=True, text=True, check=True,
    ).stdout
    return [Path(p) for p in json.loads(out)]


def required_packages(info: language_pb2.ProgramInfo) -> list[plugin_pb2.PackageDependency]:
    """Resource plugins of the SDK packages installed in the program's environment,
    as each package's pulumi-plugin.json names them."""
    interpreter, env = python(info)
    found: dict[str, plugin_pb2.PackageDependency] = {}
    for site in _site_packages(interpreter, env):
        for manifest in sorted(site.glob("*/pulumi-plugin.json")):
            data = json.loads(manifest.read_text())
            if not data.get("resource") or not data.get("name"):
                continue
            version = str(data.get("version", ""))
            found[data["name"]] = plugin_pb2.PackageDependency(
                kind="resource", name=data["name"],
                version=version if version.startswith("v") or not version else f"v{version}",
                server=data.get("server", ""),
            )
    return list(found.values())


def installed(info: language_pb2.ProgramInfo, transitive: bool) -> list[dict[str, str]]:
    """pip's list of the environment's distributions; without `transitive`, only
    those nothing else requires (what the project asked for)."""
    interpreter, env = python(info)
    argv = [interpreter, "-m", "pip", "list", "--format", "json"]
    if not transitive:
        argv.append("--not-required")
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=False).stdout
    return list(json.loads(out or "[]"))
