"""A throw-away SSH server on 127.0.0.1 standing in for a node: the runner's SSH,
host key checks and run lock meet a real sshd (root only: sshd's privilege
separation needs it)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

SSHD = "/usr/sbin/sshd"
needs_sshd = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists(SSHD) or not os.path.isdir("/run/sshd") or not shutil.which("ssh"),
    reason="needs root, OpenSSH's sshd and ssh")


@dataclass(frozen=True)
class Node:
    port: int
    client_key: Path  # what the runner logs in with
    host_key_line: str  # "<type> <base64>" of the node
    fingerprint: str  # "SHA256:..." of the node's key

    def known_hosts(self) -> str:
        return f"[127.0.0.1]:{self.port} {self.host_key_line}\n"


def keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return " ".join(path.with_suffix(".pub").read_text().split()[:2])


def fingerprint(public_key: Path) -> str:
    return subprocess.run(["ssh-keygen", "-lf", str(public_key)], capture_output=True, text=True,
                          check=True).stdout.split()[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def ssh_node(workdir: Path) -> Iterator[Node]:
    workdir.mkdir(mode=0o700, exist_ok=True)
    host_key, client_key = workdir / "host_key", workdir / "client_key"
    host_line = keygen(host_key)
    keygen(client_key)
    authorized = workdir / "authorized_keys"
    authorized.write_text(client_key.with_suffix(".pub").read_text())
    port = free_port()
    server = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", "/dev/null", "-h", str(host_key), "-p", str(port),
         "-o", "ListenAddress=127.0.0.1", "-o", "PidFile=none", "-o", f"AuthorizedKeysFile={authorized}",
         "-o", "StrictModes=no", "-o", "PermitRootLogin=prohibit-password", "-o", "PasswordAuthentication=no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.time() < deadline and server.poll() is None, "sshd did not start"
                time.sleep(0.1)
        yield Node(port, client_key, host_line, fingerprint(host_key.with_suffix(".pub")))
    finally:
        server.terminate()
        server.wait(timeout=10)
