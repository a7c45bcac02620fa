"""The language host as the CLI sees it: started as a process, asked over gRPC.

Programs run through a stand-in executor that records how it was started
(the SDK's own one needs a running engine); plugins are real: a small echo
plugin and the project's policy pack, whose analyzer is then asked too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc, language_pb2

from tests.unit.langhost_client import DATA, ROOT, VENV, Host, program_info, running_host

EXECUTOR = DATA / "recording_executor.py"


def _pinned_pulumi_version() -> str:
    match = re.search(r"^PULUMI_VERSION=(\S+)$", (ROOT / "devenv" / "versions.env").read_text(), re.MULTILINE)
    assert match
    return match.group(1)


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("record") / "run.json"


@pytest.fixture(scope="module")
def host(record: Path) -> Iterator[Host]:
    env = {**dict(os.environ), "RECORD_TO": str(record)}
    with running_host(f"-use-executor={EXECUTOR}", "127.0.0.1:4242", env=env) as running:
        yield running


def _program(tmp_path: Path, name: str) -> Path:
    directory = tmp_path / name
    directory.mkdir()
    return directory


def _run(host: Host, program: Path, **fields: object) -> language_pb2.RunResponse:
    info = program_info(program.parent, virtualenv=str(VENV))
    info.program_directory = str(program.parent)
    info.entry_point = program.name
    request = language_pb2.RunRequest(info=info, pwd=str(program.parent), **fields)  # type: ignore[arg-type]
    return host.stub.Run(request, timeout=60)


# ---- version ----------------------------------------------------------------------

def test_reports_the_pulumi_version_pinned_in_versions_env(host: Host) -> None:
    assert host.stub.GetPluginInfo(empty_pb2.Empty()).version == _pinned_pulumi_version()


def _installed_layout(tmp_path: Path, versions_env: str) -> Path:
    """The package as the toolchain installs it: langhost/ with versions.env beside it."""
    shutil.copytree(ROOT / "devenv" / "langhost", tmp_path / "langhost",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "versions.env").write_text(versions_env)
    return tmp_path


def test_installed_host_reports_the_version_of_its_versions_env(tmp_path: Path) -> None:
    layout = _installed_layout(tmp_path, "# pins\nPULUMI_VERSION=9.8.7\nOTHER=1\n")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(layout)}
    with running_host(f"-use-executor={EXECUTOR}", env=env, cwd=tmp_path, module="langhost",
                      python_flags=("-P",)) as installed:
        assert installed.stub.GetPluginInfo(empty_pb2.Empty()).version == "9.8.7"


def test_a_versions_env_without_the_pin_stops_the_host_with_what_to_do(tmp_path: Path) -> None:
    layout = _installed_layout(tmp_path, "KUBERNETES_VERSION=1.36.3\n")
    proc = subprocess.run([sys.executable, "-P", "-m", "langhost", f"-use-executor={EXECUTOR}"],
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(layout)}, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode != 0 and proc.stdout == ""
    assert f"{layout / 'versions.env'} sets no valid PULUMI_VERSION" in proc.stderr
    assert "Traceback" not in proc.stderr


# ---- programs ---------------------------------------------------------------------

def test_run_starts_the_executor_with_the_request(host: Host, record: Path, tmp_path: Path) -> None:
    program = _program(tmp_path, "exit-0")
    reply = _run(host, program, project="openstack-nova", stack="dev", monitor_address="127.0.0.1:5000",
                 config={"openstack-nova:namespace": "openstack", "openstack-nova:pw": "s3"},
                 configSecretKeys=["openstack-nova:pw"], dryRun=True, parallel=7, organization="org",
                 args=["one", "two"])
    assert reply.error == "" and not reply.bail
    seen = json.loads(record.read_text())
    assert seen["argv"] == [
        "--monitor", "127.0.0.1:5000", "--engine", "127.0.0.1:4242", "--project", "openstack-nova",
        "--stack", "dev", "--pwd", str(tmp_path), "--dry_run", "true", "--parallel", "7",
        "--organization", "org", "--root_directory", str(tmp_path), str(program), "one", "two",
    ]
    assert json.loads(seen["env"]["PULUMI_CONFIG"]) == {"openstack-nova:namespace": "openstack",
                                                         "openstack-nova:pw": "s3"}
    assert json.loads(seen["env"]["PULUMI_CONFIG_SECRET_KEYS"]) == ["openstack-nova:pw"]
    # the program's virtualenv runs it, from the program's directory
    assert seen["env"]["VIRTUAL_ENV"] == str(VENV)
    assert Path(seen["executable"]).parent == VENV / "bin"
    assert seen["cwd"] == str(tmp_path)


@pytest.mark.parametrize(("name", "error", "bail"), [
    ("exit-0", "", False),
    ("exit-32", "", True),  # the executor already showed the user what went wrong
    ("exit-3", "Program exited with non-zero exit code: 3", False),
])
def test_run_reports_how_the_program_ended(host: Host, tmp_path: Path, name: str, error: str, bail: bool) -> None:
    reply = _run(host, _program(tmp_path, name), project="p", stack="s")
    assert (reply.error, reply.bail) == (error, bail)


def test_run_without_the_virtualenv_says_how_to_make_it(host: Host, tmp_path: Path) -> None:
    info = program_info(tmp_path, virtualenv="no-such-venv")
    reply = host.stub.Run(language_pb2.RunRequest(info=info, pwd=str(tmp_path)), timeout=30)
    assert f"the virtualenv '{tmp_path / 'no-such-venv'}'" in reply.error and "make venv" in reply.error


def test_handshake_gives_the_engine_address_to_later_runs(record: Path, tmp_path: Path) -> None:
    # When the CLI attaches to a running host, the engine address comes by Handshake.
    env = {**dict(os.environ), "RECORD_TO": str(record)}
    with running_host(f"-use-executor={EXECUTOR}", env=env) as attached:
        attached.stub.Handshake(language_pb2.LanguageHandshakeRequest(engine_address="127.0.0.1:7777"))
        assert _run(attached, _program(tmp_path, "exit-0"), project="p", stack="s").error == ""
    argv = json.loads(record.read_text())["argv"]
    assert argv[argv.index("--engine") + 1] == "127.0.0.1:7777"


def test_cancel_ends_a_running_program(tmp_path: Path) -> None:
    record = tmp_path / "run.json"
    env = {**dict(os.environ), "RECORD_TO": str(record)}
    with running_host(f"-use-executor={EXECUTOR}", "127.0.0.1:1", env=env) as cancelled:
        replies: list[language_pb2.RunResponse] = []
        runner = threading.Thread(target=lambda: replies.append(
            _run(cancelled, _program(tmp_path, "sleep"), project="p", stack="s")))
        start = time.monotonic()
        runner.start()
        while not record.exists():
            time.sleep(0.1)
        cancelled.stub.Cancel(empty_pb2.Empty())
        runner.join(30)
        assert time.monotonic() - start < 30
        assert replies and "non-zero exit code" in replies[0].error


# ---- what the program needs ---------------------------------------------------------

def test_required_packages_are_the_resource_plugins_of_the_installed_sdks(host: Host) -> None:
    reply = host.stub.GetRequiredPackages(language_pb2.GetRequiredPackagesRequest(
        info=program_info(ROOT, virtualenv=str(VENV))))
    packages = {(p.name, p.kind, p.version) for p in reply.packages}
    pin = re.search(r"^pulumi-kubernetes==(\S+)$", (ROOT / "requirements.txt").read_text(), re.MULTILINE)
    assert pin
    # pulumi-policy says it has no plugin; the SDK itself is no package
    assert packages == {("kubernetes", "resource", f"v{pin.group(1)}")}


def test_program_dependencies_are_what_the_project_asked_for_unless_transitive(host: Host) -> None:
    info = program_info(ROOT, virtualenv=str(VENV))
    direct = {d.name.lower().replace("_", "-") for d in host.stub.GetProgramDependencies(
        language_pb2.GetProgramDependenciesRequest(info=info)).dependencies}
    every = {d.name.lower().replace("_", "-") for d in host.stub.GetProgramDependencies(
        language_pb2.GetProgramDependenciesRequest(info=info, transitiveDependencies=True)).dependencies}
    assert "pulumi-kubernetes" in direct and "pulumi" not in direct  # pulumi-kubernetes requires pulumi
    assert {"pulumi", "pulumi-kubernetes", "grpcio"} <= every


# ---- plugins ------------------------------------------------------------------------

def _plugin_output(stream: Iterator[language_pb2.RunPluginResponse]) -> tuple[str, str, int | None]:
    out, err, code = b"", b"", None
    for message in stream:
        kind = message.WhichOneof("output")
        if kind == "stdout":
            out += message.stdout
        elif kind == "stderr":
            err += message.stderr
        else:
            code = message.exitcode
    return out.decode(), err.decode(), code


def test_run_plugin_streams_the_plugins_output_and_exit_code(host: Host, tmp_path: Path) -> None:
    plugin = DATA / "echo_plugin"
    request = language_pb2.RunPluginRequest(
        info=program_info(plugin, virtualenv=str(VENV)), pwd=str(tmp_path), args=["127.0.0.1:4242", "3"],
        env=["PLUGIN_GREETING=hello"], kind="analyzer")
    out, err, code = _plugin_output(host.stub.RunPlugin(request, timeout=60))
    assert out.splitlines() == ["args 127.0.0.1:4242 3", "env hello", f"cwd {tmp_path}", f"venv {VENV}"]
    assert err == "to stderr\n"
    assert code == 3


def test_a_plugin_reached_through_a_symlink_finds_its_relative_virtualenv(host: Host, tmp_path: Path) -> None:
    # `--policy-pack link` where link points into the checkout: `../` is the real parent.
    link = tmp_path / "link"
    link.symlink_to(DATA / "echo_plugin")
    relative = Path("../../../../../.venv")
    assert (DATA / "echo_plugin" / relative / "bin" / "python").exists()
    request = language_pb2.RunPluginRequest(info=program_info(link, virtualenv=str(relative)), pwd=str(tmp_path),
                                            args=["0"])
    out, _, code = _plugin_output(host.stub.RunPlugin(request, timeout=60))
    assert code == 0
    assert Path(out.splitlines()[-1].removeprefix("venv ")).resolve() == (ROOT / ".venv").resolve()


def test_run_plugin_needs_the_virtualenv_of_the_plugin(host: Host, tmp_path: Path) -> None:
    # Without a virtualenv option a plugin runs in `venv` beside it, as upstream's host does.
    request = language_pb2.RunPluginRequest(info=program_info(tmp_path), pwd=str(tmp_path))
    with pytest.raises(grpc.RpcError) as failed:
        _plugin_output(host.stub.RunPlugin(request, timeout=30))
    assert failed.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert f"'{tmp_path / 'venv'}'" in str(failed.value.details())


def _struct(value: dict[str, object]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(value)
    return struct


def test_the_policy_pack_runs_as_a_plugin_and_judges_resources(host: Host, tmp_path: Path) -> None:
    """What `pulumi preview --policy-pack policy` does: RunPlugin on the pack, the
    analyzer's port from its first line of output, then Analyze for each resource."""
    pack = ROOT / "policy"
    info = program_info(pack, virtualenv="../.venv")
    stream = host.stub.RunPlugin(language_pb2.RunPluginRequest(
        info=info, pwd=str(tmp_path), args=["127.0.0.1:4242"], kind="analyzer"))
    try:
        first = next(m for m in stream if m.WhichOneof("output") == "stdout")
        port = first.stdout.decode().split()[0]
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            analyzer = analyzer_pb2_grpc.AnalyzerStub(channel)
            about = analyzer.GetAnalyzerInfo(empty_pb2.Empty(), timeout=30)
            assert about.name == "openstack-nova"
            assert {p.name for p in about.policies} == {"no-credentials-in-configmaps", "secret-volumes-private"}

            def violations(type_: str, props: dict[str, object]) -> list[tuple[str, str]]:
                request = analyzer_pb2.AnalyzeRequest(
                    type=type_, properties=_struct(props), urn=f"urn:pulumi:s::p::{type_}::x", name="x")
                reply = analyzer.Analyze(request, timeout=30)
                # the message is the policy's description, then what was found
                return [(d.policyName, d.message.splitlines()[-1]) for d in reply.diagnostics]

            configmap = "kubernetes:core/v1:ConfigMap"
            assert violations(configmap, {"data": {"nova.conf": "[neutron]\npassword = pw\n"}}) == [
                ("no-credentials-in-configmaps",
                 "ConfigMap key 'nova.conf' sets a credential; put the file in a Secret instead")]
            assert violations(configmap, {"data": {"nova.conf": "[DEFAULT]\ndebug = true\n"}}) == []
            pod = {"spec": {"template": {"spec": {"volumes": [{"name": "config", "secret": {"secretName": "c"}}]}}}}
            assert [p for p, _ in violations("kubernetes:apps/v1:StatefulSet", pod)] == ["secret-volumes-private"]
    finally:
        stream.cancel()
    # Cancelling the call (the CLI's way of ending a plugin) ends the plugin.
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            try:
                grpc.channel_ready_future(channel).result(timeout=0.5)
            except grpc.FutureTimeoutError:
                return
        time.sleep(0.2)
    raise AssertionError("the policy pack still serves after its RunPlugin call was cancelled")
