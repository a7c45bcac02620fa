"""Starts the project's language host (or another plugin) as the CLI does (a process
that prints its port) and talks to it over gRPC; the host itself is never mocked."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc
from google.protobuf import struct_pb2
from pulumi.runtime.proto import language_pb2, language_pb2_grpc

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data" / "langhost"
VENV = Path(sys.prefix)


@dataclass
class Host:
    stub: language_pb2_grpc.LanguageRuntimeStub
    proc: subprocess.Popen[str]
    stderr: Path


@contextmanager
def plugin_process(argv: list[str], env: Mapping[str, str], cwd: Path, stderr: Path,
            what: str) -> Iterator[tuple[grpc.Channel, subprocess.Popen[str]]]:
    """A gRPC plugin process started as the CLI starts one (it prints its port), and a channel to it;
    its stderr goes to `stderr`. `what` names it when it prints no port."""
    with stderr.open("w") as err:
        proc = subprocess.Popen(argv, cwd=cwd, env=dict(env), stdout=subprocess.PIPE, stderr=err, text=True)
    assert proc.stdout is not None
    port = proc.stdout.readline().strip()
    if not port.isdigit():
        proc.wait(10)
        raise AssertionError(f"the {what} printed no port: {stderr.read_text()}")
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield channel, proc
    finally:
        channel.close()
        proc.terminate()
        proc.wait(10)


@contextmanager
def running_host(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT,
                 module: str = "devenv.langhost", python_flags: tuple[str, ...] = ()) -> Iterator[Host]:
    with tempfile.TemporaryDirectory() as scratch:
        stderr = Path(scratch) / "stderr"
        argv = [sys.executable, *python_flags, "-m", module, *args]
        with plugin_process(argv, env if env is not None else os.environ, cwd, stderr, "host") as (channel, proc):
            yield Host(language_pb2_grpc.LanguageRuntimeStub(channel), proc, stderr)


def program_info(root: Path, **options: str) -> language_pb2.ProgramInfo:
    struct = struct_pb2.Struct()
    struct.update(options)
    return language_pb2.ProgramInfo(root_directory=str(root), program_directory=str(root), entry_point=".",
                                    options=struct)
