"""The dynamic-provider plugin of the project's toolchain: the Python SDK's own
server (`python -m pulumi.dynamic`, which serves every PlaybookRun and
IssuedCertificate of a stack) with a bigger gRPC thread pool.

The SDK's server has `ThreadPoolExecutor(max_workers=4)`
(pulumi/dynamic/__main__.py), and each call (check, diff, create, update,
read, delete) holds a thread to its end: a stack ran at most 4 playbooks at
once, whatever `pulumi up --parallel` said. Here the SDK's code runs
unchanged; only the pool it hands to `grpc.server` is swapped for one of
OPENSTACK_NOVA_MAX_RUNS threads (default: `default_threads()`).

devenv/dynamic-provider.sh starts it with the program's interpreter, as the
SDK's own `pulumi-resource-pulumi-python` does; devenv/toolchain.sh installs
both in its place, beside `pulumi`, where the CLI looks for this plugin.

The pool only helps when `pulumi up --parallel` lets that many steps start:
`make up` passes `up_parallel()` (devenv/lib.sh, devenv/up.sh), computed here
from the same setting, unless PULUMI_PARALLEL says otherwise.
"""

from __future__ import annotations

import os
import runpy
import sys
import threading
import time
from collections.abc import Callable, Mapping
from concurrent import futures
from pathlib import Path
from typing import Any

VARIABLE = "OPENSTACK_NOVA_MAX_RUNS"
PARENT_VARIABLE = "OPENSTACK_NOVA_PROVIDER_PARENT"  # set by dynamic-provider.sh
SDK_THREADS = 4  # the SDK's own pool: never fewer by default
MAX_DEFAULT = 16
RUN_MIB = 156  # peak RSS of one playbook run (docs/scale.md, "What a run costs the runner")
MEMORY_SHARE = 4  # by default, runs at once may take up to a quarter of the memory
# `pulumi up --parallel` by default: 4 steps at once per CPU (GOMAXPROCS; defaultParallel,
# the CLI's cmd/pulumi/operations/up.go), 8 on 2 cores, below the pool's 16
CLI_PARALLEL_PER_CPU = 4


def memory_mib(meminfo: Path = Path("/proc/meminfo"),
               cgroup_limit: Path = Path("/sys/fs/cgroup/memory.max")) -> int | None:
    """The memory this process may use, MiB: the machine's, or its cgroup's limit if lower."""
    found: list[int] = []
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                found.append(int(line.split()[1]) // 1024)
    except (OSError, ValueError, IndexError):
        pass
    try:
        limit = cgroup_limit.read_text().strip()
        if limit.isdigit():
            found.append(int(limit) // 2**20)
    except OSError:
        pass
    return min(found) if found else None


def default_threads(memory: int | None) -> int:
    """Runs at once by default: MAX_DEFAULT, fewer when that many runs would take more than
    1/MEMORY_SHARE of `memory` (MiB), never fewer than the SDK's 4."""
    if memory is None:
        return SDK_THREADS
    return max(SDK_THREADS, min(MAX_DEFAULT, memory // MEMORY_SHARE // RUN_MIB))


def threads(environ: Mapping[str, str], memory: Callable[[], int | None] = memory_mib) -> int:
    """The pool's size: OPENSTACK_NOVA_MAX_RUNS (a whole number from 1), else the default."""
    text = environ.get(VARIABLE, "").strip()
    if not text:
        return default_threads(memory())
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{VARIABLE}={text!r}: must be a whole number, at least 1")
    return int(text)


def cpus() -> int:
    """The CPUs this process may run on (as Go counts them for GOMAXPROCS, cgroup quotas aside)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def up_parallel(environ: Mapping[str, str], memory: Callable[[], int | None] = memory_mib,
                cpu_count: Callable[[], int] = cpus) -> int:
    """`pulumi up --parallel` for `make up` (devenv/lib.sh up_parallel): the pool's size, so that
    as many playbooks run at once as the plugin serves, and never less than the CLI's own
    default, CLI_PARALLEL_PER_CPU per CPU, which the Kubernetes resources share with them."""
    return max(threads(environ, memory), CLI_PARALLEL_PER_CPU * cpu_count())


def print_up_parallel() -> int:
    """devenv/lib.sh's up_parallel: prints up_parallel() for this environment; exit status 1 and
    why on stderr when OPENSTACK_NOVA_MAX_RUNS is not a valid pool."""
    try:
        print(up_parallel(os.environ))
    except ValueError as error:
        print(error, file=sys.stderr)
        return 1
    return 0


def use_pool(grpc: Any, size: int) -> None:
    """The next `grpc.server(pool, ...)` gets a pool of `size` threads instead of `pool`
    (which has started none yet); later calls are left alone."""
    original = grpc.server

    def server(thread_pool: futures.Executor | None = None, *args: Any, **kwargs: Any) -> Any:
        grpc.server = original
        if thread_pool is not None:
            thread_pool.shutdown(wait=False)
        pool = futures.ThreadPoolExecutor(max_workers=size, thread_name_prefix="dynamic-provider")
        return original(pool, *args, **kwargs)

    grpc.server = server


def exit_when_orphaned(parent: int, *, getppid: Callable[[], int] = os.getppid,
                       exit_now: Callable[[int], Any] = os._exit, interval: float = 1.0) -> None:
    """Ends this process once `parent` (the CLI that started it) is gone. The engine stops its
    plugins when it ends, but a `kill -9` of `pulumi up` leaves them serving nobody. The runs
    they started go on without them (the run guard is a session of its own), so nothing is lost."""
    while getppid() == parent:
        time.sleep(interval)
    exit_now(0)


def watch_parent(environ: Mapping[str, str]) -> None:
    # the CLI's pid as dynamic-provider.sh saw it: a CLI killed before this process got here
    # ends it too
    parent = environ.get(PARENT_VARIABLE, "")
    threading.Thread(target=exit_when_orphaned, args=(int(parent) if parent.isdigit() else os.getppid(),),
                     daemon=True, name="dynamic-provider-parent").start()


def main() -> None:
    try:
        size = threads(os.environ)
    except ValueError as error:
        sys.exit(f"dynamic provider: {error}")
    watch_parent(os.environ)
    # As under `python -m`: the program's directory first, so that providers pickled by
    # reference (components.ansible_runner.playbook's) import from it; not this file's directory.
    sys.path[0] = os.getcwd()
    import grpc

    use_pool(grpc, size)
    runpy.run_module("pulumi.dynamic", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
