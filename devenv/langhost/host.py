"""The LanguageRuntime service: what the CLI asks of a Python language host.

Implemented: Handshake, GetPluginInfo, GetRequiredPackages/Plugins,
GetProgramDependencies, About, InstallDependencies (a no-op: the project's
scripts build its venv), Run (programs: up, preview, refresh --run-program,
import), RunPlugin (Python policy packs for `--policy-pack`), GenerateProgram
(Python code for `pulumi import`) and Cancel. The rest (project templates,
SDK generation, packing, linking) answer UNIMPLEMENTED, which the CLI reports.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import grpc
from google.protobuf import empty_pb2
from pulumi.runtime.proto import language_pb2, language_pb2_grpc, plugin_pb2
from pulumi.runtime.proto.codegen import hcl_pb2

from . import environment, pcl, pygen
from .processes import Children, end, stream_output
from .schema import SchemaSource

# Exit code with which the executor says it already showed the user an error.
BAIL_EXIT_CODE = 32


class LanguageHost(language_pb2_grpc.LanguageRuntimeServicer):
    def __init__(self, engine_address: str, executor: Path, version: str) -> None:
        self.engine_address = engine_address
        self.executor = executor
        self.version = version
        self.children = Children()

    def Handshake(
        self, request: language_pb2.LanguageHandshakeRequest, context: grpc.ServicerContext
    ) -> language_pb2.LanguageHandshakeResponse:
        # Sent when the CLI attaches to a host it did not start (PULUMI_DEBUG_LANGUAGES):
        # the engine address comes this way instead of on the command line.
        self.engine_address = request.engine_address
        return language_pb2.LanguageHandshakeResponse()

    def GetPluginInfo(self, request: empty_pb2.Empty, context: grpc.ServicerContext) -> plugin_pb2.PluginInfo:
        return plugin_pb2.PluginInfo(version=self.version)

    def GetRequiredPackages(
        self, request: language_pb2.GetRequiredPackagesRequest, context: grpc.ServicerContext
    ) -> language_pb2.GetRequiredPackagesResponse:
        return language_pb2.GetRequiredPackagesResponse(packages=self._packages(request.info, context))

    def GetRequiredPlugins(
        self, request: language_pb2.GetRequiredPluginsRequest, context: grpc.ServicerContext
    ) -> language_pb2.GetRequiredPluginsResponse:
        plugins = [
            plugin_pb2.PluginDependency(name=p.name, kind=p.kind, version=p.version, server=p.server)
            for p in self._packages(request.info, context)
        ]
        return language_pb2.GetRequiredPluginsResponse(plugins=plugins)

    def _packages(
        self, info: language_pb2.ProgramInfo, context: grpc.ServicerContext
    ) -> list[plugin_pb2.PackageDependency]:
        try:
            return environment.required_packages(info)
        except FileNotFoundError as err:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(err))
        raise AssertionError("unreachable")

    def InstallDependencies(
        self, request: language_pb2.InstallDependenciesRequest, context: grpc.ServicerContext
    ) -> Iterator[language_pb2.InstallDependenciesResponse]:
        # The project's venv is built by its own scripts (`make venv`), never here.
        yield language_pb2.InstallDependenciesResponse(
            stdout=b"dependencies are installed by `make venv`; nothing to do\n"
        )

    def About(self, request: language_pb2.AboutRequest, context: grpc.ServicerContext) -> language_pb2.AboutResponse:
        interpreter, env = environment.python(request.info)
        version = subprocess.run(
            [interpreter, "--version"], env=env, capture_output=True, text=True, check=False
        ).stdout.strip()
        return language_pb2.AboutResponse(executable=interpreter, version=version.removeprefix("Python "))

    def GetProgramDependencies(
        self, request: language_pb2.GetProgramDependenciesRequest, context: grpc.ServicerContext
    ) -> language_pb2.GetProgramDependenciesResponse:
        deps = [language_pb2.DependencyInfo(name=d["name"], version=d["version"])
                for d in environment.installed(request.info, request.transitiveDependencies)]
        return language_pb2.GetProgramDependenciesResponse(dependencies=deps)

    def Run(self, request: language_pb2.RunRequest, context: grpc.ServicerContext) -> language_pb2.RunResponse:
        if request.attach_debugger:
            return language_pb2.RunResponse(error="this language host cannot start a program under a debugger")
        try:
            interpreter, env = environment.python(request.info)
        except FileNotFoundError as err:
            return language_pb2.RunResponse(error=str(err))
        env["PULUMI_CONFIG"] = json.dumps(dict(request.config))
        env["PULUMI_CONFIG_SECRET_KEYS"] = json.dumps(list(request.configSecretKeys))
        program = request.info.entry_point or request.program or "."
        if request.info.program_directory:
            program = os.path.join(request.info.program_directory, program)
        argv = [
            interpreter, "-u", str(self.executor),
            "--monitor", request.monitor_address,
            "--engine", self.engine_address,
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
        try:
            proc = self.children.start(argv, env, request.pwd, capture=False)
        except RuntimeError as err:
            return language_pb2.RunResponse(error=str(err))
        try:
            code = proc.wait()
        finally:
            self.children.forget(proc)
        if code == 0:
            return language_pb2.RunResponse()
        if code == BAIL_EXIT_CODE:
            return language_pb2.RunResponse(bail=True)
        return language_pb2.RunResponse(error=f"Program exited with non-zero exit code: {code}")

    def RunPlugin(
        self, request: language_pb2.RunPluginRequest, context: grpc.ServicerContext
    ) -> Iterator[language_pb2.RunPluginResponse]:
        """Runs a Python plugin (a policy pack: its directory's __main__.py) in the
        virtualenv its PulumiPolicy.yaml names (`venv` beside it by default), and
        streams its output; the CLI reads the analyzer's port from stdout."""
        info = request.info
        directory = info.program_directory or request.program
        try:
            interpreter, env = environment.python(info, default_venv="venv")
        except FileNotFoundError as err:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(err))
        for assignment in request.env:
            name, _, value = assignment.partition("=")
            env[name] = value
        try:
            proc = self.children.start([interpreter, "-u", directory, *request.args], env, request.pwd,
                                       capture=True)
        except (OSError, RuntimeError) as err:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"cannot start the plugin in {directory}: {err}")
        # The CLI ends a plugin by cancelling this call.
        context.add_callback(lambda: end(proc))
        try:
            for stream, chunk in stream_output(proc):
                if stream == "stdout":
                    yield language_pb2.RunPluginResponse(stdout=chunk)
                else:
                    yield language_pb2.RunPluginResponse(stderr=chunk)
            yield language_pb2.RunPluginResponse(exitcode=_exit_code(proc.wait()))
        finally:
            end(proc)
            self.children.forget(proc)

    def GenerateProgram(
        self, request: language_pb2.GenerateProgramRequest, context: grpc.ServicerContext
    ) -> language_pb2.GenerateProgramResponse:
        schemas = SchemaSource(request.loader_target or None)
        try:
            files = {name: pcl.parse(text, name) for name, text in sorted(request.source.items())}
            program = pygen.generate(list(files.values()), schemas)
        except pcl.PclError as err:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        finally:
            schemas.close()
        diagnostics = [
            hcl_pb2.Diagnostic(severity=hcl_pb2.DIAG_WARNING, summary=warning)
            for warning in program.warnings
        ]
        return language_pb2.GenerateProgramResponse(
            source={"__main__.py": program.text.encode()}, diagnostics=diagnostics)

    def Cancel(self, request: empty_pb2.Empty, context: grpc.ServicerContext) -> empty_pb2.Empty:
        # The CLI is shutting down (e.g. after Ctrl-C): end every program and plugin.
        self.children.end_all()
        return empty_pb2.Empty()


def _exit_code(returncode: int) -> int:
    # A child ended by a signal reports it the shell's way (128 + signal).
    return returncode if returncode >= 0 else 128 - returncode
