"""The toolchain's dynamic-provider plugin (devenv/dynamic-provider.sh and
dynamic_provider.py): installed by toolchain.sh into a cache of the test's own,
started through a link as the CLI starts it (a process that prints its port),
sent Create calls at once over gRPC, and asked how many it served together.
The creates are tools/bench/threads' probes, imported by reference as
PlaybookRun's provider is; no time is asserted, only counts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path

import pytest
from google.protobuf import struct_pb2
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

from devenv import dynamic_provider
from tests.unit.langhost_client import plugin_process
from tools.bench.threads.probe import ProbeProvider

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(sys.prefix)
PROVIDER = serialize_provider(ProbeProvider())


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`toolchain.sh dynamic-provider` into a cache of the test's own, and a link to the plugin
    in a bin directory, as the toolchain's bin directory (on PATH) has it."""
    cache = tmp_path_factory.mktemp("cache")
    subprocess.run([str(ROOT / "devenv" / "toolchain.sh"), "dynamic-provider"],
                   env={**os.environ, "OPENSTACK_NOVA_CACHE": str(cache)}, check=True)
    installed = next(cache.glob("toolchain/pulumi-*/pulumi-resource-pulumi-python"))
    assert installed.read_bytes() == (ROOT / "devenv" / "dynamic-provider.sh").read_bytes()
    assert os.access(installed, os.X_OK)
    assert (installed.parent / "dynamic_provider.py").read_bytes() == \
        (ROOT / "devenv" / "dynamic_provider.py").read_bytes()
    (cache / "bin").mkdir()
    link = cache / "bin" / installed.name
    link.symlink_to(installed)
    return link


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != dynamic_provider.VARIABLE}
    return {**env, **extra}


@contextmanager
def serving(argv: list[str], env: Mapping[str, str],
            tmp_path: Path) -> Iterator[provider_pb2_grpc.ResourceProviderStub]:
    """The plugin started in the project's directory (as the CLI starts it in the program's)."""
    with plugin_process(argv, env, ROOT, tmp_path / "stderr", "plugin") as (channel, _):
        yield provider_pb2_grpc.ResourceProviderStub(channel)


def creates(stub: provider_pb2_grpc.ResourceProviderStub, count: int, *, seconds: float,
            together: int) -> int:
    """`count` Create calls at once, each of a probe that ends after `seconds` or as soon as
    `together` run at once; the most the provider saw running at once."""

    def one(index: int) -> provider_pb2.CreateResponse:
        props = struct_pb2.Struct()
        props.update({"__provider": PROVIDER, "name": f"p{index}", "seconds": seconds, "together": together})
        request = provider_pb2.CreateRequest(urn=f"urn:pulumi:t::t::pulumi-python:dynamic:Resource::p{index}",
                                             properties=props)
        return stub.Create(request, timeout=120)

    with futures.ThreadPoolExecutor(count) as pool:
        responses = list(pool.map(one, range(count)))
    return max(int(r.properties["peak"]) for r in responses)


def test_the_sdks_own_plugin_serves_four_at_once(tmp_path: Path) -> None:
    # what the toolchain's plugin is for; should an SDK release change it, docs/scale.md must follow
    with serving([str(VENV / "bin" / "python"), "-u", "-m", "pulumi.dynamic"], _env(), tmp_path) as stub:
        assert creates(stub, 6, seconds=0.5, together=5) == dynamic_provider.SDK_THREADS


def test_twelve_creates_run_together_with_a_pool_of_sixteen(plugin: Path, tmp_path: Path) -> None:
    env = _env(OPENSTACK_NOVA_MAX_RUNS="16", PULUMI_RUNTIME_VIRTUALENV=str(VENV))
    with serving([str(plugin)], env, tmp_path) as stub:
        # each waits (up to 10 s) for all 12 to be running: with fewer threads they never are
        assert creates(stub, 12, seconds=10, together=12) == 12


def test_the_pool_holds_no_more_than_the_variable_says(plugin: Path, tmp_path: Path) -> None:
    env = _env(OPENSTACK_NOVA_MAX_RUNS="3", PULUMI_RUNTIME_VIRTUALENV=str(VENV))
    with serving([str(plugin)], env, tmp_path) as stub:
        assert creates(stub, 6, seconds=0.5, together=4) == 3


def test_unset_the_pool_is_the_default_for_this_machine(plugin: Path, tmp_path: Path) -> None:
    expected = dynamic_provider.default_threads(dynamic_provider.memory_mib())
    with serving([str(plugin)], _env(PULUMI_RUNTIME_VIRTUALENV=str(VENV)), tmp_path) as stub:
        assert creates(stub, expected + 2, seconds=0.5, together=expected + 1) == expected


def test_a_virtualenv_relative_to_the_program_directory(plugin: Path, tmp_path: Path) -> None:
    # Pulumi.yaml's `virtualenv: .venv`, as the CLI passes it
    relative = os.path.relpath(VENV, ROOT)
    env = _env(OPENSTACK_NOVA_MAX_RUNS="2", PULUMI_RUNTIME_VIRTUALENV=relative)
    with serving([str(plugin)], env, tmp_path) as stub:
        assert creates(stub, 3, seconds=0.3, together=3) == 2


@pytest.mark.parametrize("value", ["0", "-2", "many", "2.5"])
def test_a_bad_value_stops_the_plugin_with_a_message(plugin: Path, value: str) -> None:
    proc = subprocess.run([str(plugin)], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env=_env(OPENSTACK_NOVA_MAX_RUNS=value, PULUMI_RUNTIME_VIRTUALENV=str(VENV)))
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert f"OPENSTACK_NOVA_MAX_RUNS={value!r}: must be a whole number, at least 1" in proc.stderr


def test_a_missing_virtualenv_is_named(plugin: Path, tmp_path: Path) -> None:
    proc = subprocess.run([str(plugin)], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env=_env(PULUMI_RUNTIME_VIRTUALENV="venv"))
    assert proc.returncode == 1
    assert f'"{tmp_path}/venv", which has no bin/python' in proc.stderr


@pytest.mark.parametrize(("memory", "threads"), [
    (None, 4),  # unknown: the SDK's
    (2048, 4),  # never fewer than the SDK's
    (4096, 6),
    (8192, 13),
    (24 * 1024, 16),  # the reference machine
    (256 * 1024, 16),
])
def test_default_pool_by_memory(memory: int | None, threads: int) -> None:
    assert dynamic_provider.default_threads(memory) == threads


def test_the_variable_overrides_the_default() -> None:
    assert dynamic_provider.threads({}, memory=lambda: 24 * 1024) == 16
    assert dynamic_provider.threads({"OPENSTACK_NOVA_MAX_RUNS": " "}, memory=lambda: 24 * 1024) == 16
    assert dynamic_provider.threads({"OPENSTACK_NOVA_MAX_RUNS": "40"}, memory=lambda: 2048) == 40
    assert dynamic_provider.threads({"OPENSTACK_NOVA_MAX_RUNS": "1"}, memory=lambda: None) == 1


def test_memory_is_the_lower_of_the_machines_and_the_cgroups(tmp_path: Path) -> None:
    meminfo, limit = tmp_path / "meminfo", tmp_path / "memory.max"
    meminfo.write_text("MemTotal:       25165824 kB\nMemFree:        1000 kB\n")
    assert dynamic_provider.memory_mib(meminfo, limit) == 24 * 1024  # no cgroup file
    limit.write_text("max\n")
    assert dynamic_provider.memory_mib(meminfo, limit) == 24 * 1024
    limit.write_text(f"{4 * 2**30}\n")
    assert dynamic_provider.memory_mib(meminfo, limit) == 4096
    assert dynamic_provider.memory_mib(tmp_path / "none", tmp_path / "none") is None


@pytest.mark.parametrize(("environ", "memory", "cpus", "parallel"), [
    ({}, 24 * 1024, 2, 16),  # the reference machine: the pool, above the CLI's 8
    ({"OPENSTACK_NOVA_MAX_RUNS": "24"}, 24 * 1024, 2, 24),
    ({"OPENSTACK_NOVA_MAX_RUNS": "4"}, 24 * 1024, 2, 8),  # never below the CLI's own default
    ({}, 4096, 16, 64),  # a pool of 6 on 16 CPUs: the CLI's 64
])
def test_make_ups_parallel_leaves_room_for_the_pool(environ: dict[str, str], memory: int, cpus: int,
                                                    parallel: int) -> None:
    assert dynamic_provider.up_parallel(environ, memory=lambda: memory, cpu_count=lambda: cpus) == parallel


def _up_parallel(**env: str) -> subprocess.CompletedProcess[str]:
    """devenv/lib.sh's up_parallel, which devenv/up.sh passes as `pulumi up --parallel`."""
    base = {k: v for k, v in os.environ.items() if k not in (dynamic_provider.VARIABLE, "PULUMI_PARALLEL")}
    return subprocess.run(["bash", "-c", f". {ROOT / 'devenv' / 'lib.sh'}; up_parallel"], env={**base, **env},
                          capture_output=True, text=True, check=False, timeout=30)


def test_make_up_passes_the_pools_parallel_unless_pulumi_parallel_is_set() -> None:
    expected = dynamic_provider.up_parallel({})
    assert expected >= dynamic_provider.threads({})
    assert _up_parallel().stdout == f"{expected}\n"
    big = 4 * dynamic_provider.CLI_PARALLEL_PER_CPU * dynamic_provider.cpus()
    assert _up_parallel(OPENSTACK_NOVA_MAX_RUNS=str(big)).stdout == f"{big}\n"
    # the user's own choice wins, even below the pool
    assert _up_parallel(OPENSTACK_NOVA_MAX_RUNS=str(big), PULUMI_PARALLEL="3").stdout == "3\n"
    bad = _up_parallel(OPENSTACK_NOVA_MAX_RUNS="many")
    assert (bad.returncode, bad.stdout, bad.stderr) == (1, "", "OPENSTACK_NOVA_MAX_RUNS='many': must be a whole "
                                                                "number, at least 1\n")


def test_the_plugin_ends_when_the_cli_that_started_it_is_killed(plugin: Path, tmp_path: Path) -> None:
    # a shell stands in for `pulumi up`: it starts the plugin, notes its pid, and once the plugin
    # serves (has printed its port) it is killed with -9
    pid_file, port_file = tmp_path / "plugin.pid", tmp_path / "port"
    starter = subprocess.Popen(
        ["/bin/sh", "-c", f'"{plugin}" >"{port_file}" 2>/dev/null & echo $! >"{pid_file}"; wait'],
        cwd=ROOT, env=_env(PULUMI_RUNTIME_VIRTUALENV=str(VENV)))
    for _ in range(300):
        if port_file.is_file() and port_file.read_text().strip():
            break
        time.sleep(0.1)
    pid = int(pid_file.read_text())
    os.kill(starter.pid, signal.SIGKILL)
    starter.wait(10)
    for _ in range(150):
        if not Path(f"/proc/{pid}").exists() or _zombie(pid):
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
        raise AssertionError("the plugin went on serving after the CLI was killed")


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except (OSError, IndexError):
        return True


def test_the_parent_watch_exits_once_the_parent_changes() -> None:
    parents = iter([10, 10, 1])
    exits: list[int] = []
    dynamic_provider.exit_when_orphaned(10, getppid=lambda: next(parents), exit_now=exits.append, interval=0)
    assert exits == [0]
