"""The project's Pulumi language host for Python programs.

The Go module of Pulumi's own Python language host is not served by the module
proxy this project builds from, so the toolchain ships this host instead. It
implements the LanguageRuntime gRPC service that the CLI expects from
`pulumi-language-python`: it starts, prints its port, and for each Run request
executes the program with the Python SDK's own executor
(`pulumi-language-python-exec`, installed beside this file) under the virtual
environment named in Pulumi.yaml (`runtime.options.virtualenv`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import empty_pb2, json_format
from pulumi.runtime.proto import language_pb2, language_pb2_grpc, plugin_pb2

HERE = Path(__file__).resolve().parent
EXECUTOR = HERE / "pulumi-language-python-exec"
HOST_VERSION = "3.259.0"
# Exit code with which the executor says it already showed the user an error.
BAIL_EXIT_CODE = 32


def _options(info: language_pb2.ProgramInfo) -> dict[str, Any]:
    return json_format.MessageToDict(info.options) if info.HasField("options") else {}


def _virtualenv(info: language_pb2.ProgramInfo) -> Path | None:
    venv = _options(info).get("virtualenv") or os.environ.get("PULUMI_RUNTIME_VIRTUALENV")
    if not venv:
        return None
    path = Path(venv)
    return path if path.is_absolute() else Path(info.root_directory or os.getcwd()) / path


def _python(info: language_pb2.ProgramInfo) -> tuple[str, dict[str, str]]:
    """The interpreter for the program and the environment it runs in."""
    env = dict(os.environ)
    venv = _virtualenv(info)
    if venv is not None:
        python = venv / "bin" / "python"
        if not python.exists():
            raise FileNotFoundError(
                f"the virtualenv '{venv}' named in Pulumi.yaml does not exist: run `make venv`"
            )
        env["VIRTUAL_ENV"] = str(venv)
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env.pop("PYTHONHOME", None)
        return str(python), env
    return env.get("PULUMI_PYTHON_CMD", "python3"), env


def _site_packages(python: str, env: dict[str, str]) -> list[Path]:
    out = subprocess.run(
        [python, "-c", "import json, site; print(json.dumps(site.getsitepackages()))"],
        env=env, capture_output=True, text=True, check=True,
    ).stdout
    return [Path(p) for p in json.loads(out)]


def _required_packages(info: language_pb2.ProgramInfo) -> list[plugin_pb2.PackageDependency]:
    """Resource plugins of the SDK packages installed in the program's environment."""
    python, env = _python(info)
    found: dict[str, plugin_pb2.PackageDependency] = {}
    for site in _site_packages(python, env):
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


class LanguageHost(language_pb2_grpc.LanguageRuntimeServicer):
    def __init__(self, engine_address: str) -> None:
        self._engine_address = engine_address

    def GetPluginInfo(self, request: empty_pb2.Empty, context: grpc.ServicerContext) -> plugin_pb2.PluginInfo:
        return plugin_pb2.PluginInfo(version=HOST_VERSION)

    def GetRequiredPackages(
        self, request: language_pb2.GetRequiredPackagesRequest, context: grpc.ServicerContext
    ) -> language_pb2.GetRequiredPackagesResponse:
        return language_pb2.GetRequiredPackagesResponse(packages=_required_packages(request.info))

    def GetRequiredPlugins(
        self, request: language_pb2.GetRequiredPluginsRequest, context: grpc.ServicerContext
    ) -> language_pb2.GetRequiredPluginsResponse:
        plugins = [
            plugin_pb2.PluginDependency(name=p.name, kind=p.kind, version=p.version, server=p.server)
            for p in _required_packages(request.info)
        ]
        return language_pb2.GetRequiredPluginsResponse(plugins=plugins)

    def InstallDependencies(
        self, request: language_pb2.InstallDependenciesRequest, context: grpc.ServicerContext
    ) -> Iterator[language_pb2.InstallDependenciesResponse]:
        # The project's venv is built by its own scripts (`make venv`), never here.
        yield language_pb2.InstallDependenciesResponse(
            stdout=b"dependencies are installed by `make venv`; nothing to do\n"
        )

    def About(self, request: language_pb2.AboutRequest, context: grpc.ServicerContext) -> language_pb2.AboutResponse:
        python, env = _python(request.info)
        version = subprocess.run(
            [python, "--version"], env=env, capture_output=True, text=True, check=False
        ).stdout.strip()
        return language_pb2.AboutResponse(executable=python, version=version.removeprefix("Python "))

    def GetProgramDependencies(
        self, request: language_pb2.GetProgramDependenciesRequest, context: grpc.ServicerContext
    ) -> language_pb2.GetProgramDependenciesResponse:
        python, env = _python(request.info)
        out = subprocess.run(
            [python, "-m", "pip", "list", "--format", "json"], env=env,
            capture_output=True, text=True, check=False,
        ).stdout
        deps = [language_pb2.DependencyInfo(name=d["name"], version=d["version"]) for d in json.loads(out or "[]")]
        return language_pb2.GetProgramDependenciesResponse(dependencies=deps)

    def Run(self, request: language_pb2.RunRequest, context: grpc.ServicerContext) -> language_pb2.RunResponse:
        try:
            python, env = _python(request.info)
        except FileNotFoundError as err:
            return language_pb2.RunResponse(error=str(err))
        env["PULUMI_CONFIG"] = json.dumps(dict(request.config))
        env["PULUMI_CONFIG_SECRET_KEYS"] = json.dumps(list(request.configSecretKeys))
        program = request.info.entry_point or request.program or "."
        if request.info.program_directory:
            program = os.path.join(request.info.program_directory, program)
        argv = [
            python, "-u", str(EXECUTOR),
            "--monitor", request.monitor_address,
            "--engine", self._engine_address,
            "--project", request.project,
            "--stack", request.stack,
            "--pwd", request.pwd,
            "--dry_run", "true" if request.dryRun else "false",
            "--parallel", str(request.parallel),
            "--organization", request.organization,
        ]
        if request.info.root_directory:
            argv += ["--root_directory", request.info.root_directory]
        argv += [program, *request.args]
        # The program's output goes straight to the CLI, which shows it as diagnostics.
        code = subprocess.run(argv, env=env, cwd=request.pwd or None, check=False).returncode
        if code == 0:
            return language_pb2.RunResponse()
        if code == BAIL_EXIT_CODE:
            return language_pb2.RunResponse(bail=True)
        return language_pb2.RunResponse(error=f"Program exited with non-zero exit code: {code}")


def main(argv: list[str]) -> int:
    # The CLI passes flags (-root=..., -tracing ...) and the engine address last.
    positional = [a for a in argv if not a.startswith("-")]
    engine_address = positional[-1] if positional else ""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=8),
        options=[("grpc.max_receive_message_length", 400 * 1024 * 1024)],
    )
    language_pb2_grpc.add_LanguageRuntimeServicer_to_server(LanguageHost(engine_address), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    # A CLI that was killed cannot end its plugins: leave with it.
    parent = os.getppid()

    def watch_parent() -> None:
        while os.getppid() == parent:
            time.sleep(1)
        server.stop(0)

    threading.Thread(target=watch_parent, daemon=True).start()
    # The CLI ends its plugins with a signal once the run is over: stop quietly.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: server.stop(0))
    try:
        server.wait_for_termination()
    except KeyboardInterrupt:
        server.stop(0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
