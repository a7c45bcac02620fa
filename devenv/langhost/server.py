"""Starts the host: the CLI runs `pulumi-language-python [flags] ENGINE_ADDRESS`
and reads the port of the gRPC server from the first line of stdout."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
import time
from concurrent import futures
from pathlib import Path

import grpc
from pulumi.runtime.proto import language_pb2_grpc

from .host import LanguageHost
from .version import host_version

EXECUTOR_NAME = "pulumi-language-python-exec"
# Flags the CLI or a user may pass; only -use-executor matters here.
_FLAGS_WITH_VALUE = {"-tracing", "-root", "-virtualenv", "-use-executor", "-typechecker", "-toolchain"}


def parse_args(argv: list[str]) -> tuple[dict[str, str], str]:
    """The flags (Go style: -name=value or -name value) and the engine address (the
    last positional argument; none when the CLI attaches and sends it by Handshake)."""
    flags: dict[str, str] = {}
    positional: list[str] = []
    args = iter(argv)
    for arg in args:
        if not arg.startswith("-"):
            positional.append(arg)
            continue
        name, eq, value = arg.lstrip("-").partition("=")
        if not eq and f"-{name}" in _FLAGS_WITH_VALUE:
            value = next(args, "")
        flags[name] = value
    return flags, positional[-1] if positional else ""


def find_executor(given: str) -> Path:
    """The SDK's program executor: -use-executor, else beside this package (the
    toolchain's layout), else on PATH."""
    if given:
        return Path(given)
    beside = Path(__file__).resolve().parent.parent / EXECUTOR_NAME
    if beside.exists():
        return beside
    on_path = shutil.which(EXECUTOR_NAME)
    if on_path:
        return Path(on_path)
    raise SystemExit(f"pulumi-language-python: {EXECUTOR_NAME} not found beside {beside.parent} or on PATH: "
                     "build the toolchain with `devenv/toolchain.sh pulumi`")


def main(argv: list[str]) -> int:
    flags, engine_address = parse_args(argv)
    host = LanguageHost(engine_address, find_executor(flags.get("use-executor", "")), host_version())
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=16),
        options=[("grpc.max_receive_message_length", 400 * 1024 * 1024),
                 ("grpc.max_send_message_length", 400 * 1024 * 1024)],
    )
    language_pb2_grpc.add_LanguageRuntimeServicer_to_server(host, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)

    def stop(*_: object) -> None:
        host.children.end_all()
        server.stop(0)

    # A CLI that was killed cannot end its plugins: leave with it.
    parent = os.getppid()

    def watch_parent() -> None:
        while os.getppid() == parent:
            time.sleep(1)
        stop()

    threading.Thread(target=watch_parent, daemon=True).start()
    # The CLI ends its plugins with a signal once the run is over: stop quietly.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, stop)
    try:
        server.wait_for_termination()
    except KeyboardInterrupt:
        stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
