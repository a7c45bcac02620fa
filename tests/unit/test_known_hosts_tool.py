"""tools/known_hosts.py: trusting a node's key only once its fingerprint is checked,
against a real sshd standing in for the node."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from pathlib import Path
from typing import Any

import pytest

from tests.unit.sshnode import Node, keygen, needs_sshd, ssh_node
from tools.known_hosts import choose, fingerprint, main, rewrite

OLD = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBpI9FkhIsmqf12ccKFbhSnH4F/3Xd8/FDlIylOeF1U0"
OTHER = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFqzRVBUVYMKXFBkmsIdL+HBiltEeUZqK8HEogdpCv/t"


def test_fingerprints_are_openssh_s(tmp_path: Path) -> None:
    line = keygen(tmp_path / "k")
    shown = os.popen(f"ssh-keygen -lf {tmp_path / 'k.pub'}").read().split()[1]
    assert fingerprint(line) == shown


def test_a_key_is_chosen_by_its_fingerprint_only() -> None:
    assert choose([OTHER, OLD], fingerprint(OLD)) == OLD
    with pytest.raises(Exception) as err:
        choose([OTHER], fingerprint(OLD))
    assert str(err.value).startswith(f"the node shows ED25519 {fingerprint(OTHER)}; none is {fingerprint(OLD)}.")


def test_the_nodes_old_keys_go_and_other_lines_stay() -> None:
    salt = b"0123456789abcdef0123"
    hashed = "|1|{}|{}".format(base64.b64encode(salt).decode(),
                               base64.b64encode(hmac.new(salt, b"10.0.0.2", hashlib.sha1).digest()).decode())
    text = "\n".join(["# the node set's keys", f"10.0.0.1 {OTHER}", f"10.0.0.2,compute-2 {OLD}",
                      f"{hashed} {OLD}", f"10.0.0.3 {OTHER}"]) + "\n"
    new, touched = rewrite(text, ["10.0.0.2", "compute-2"], OTHER)
    assert touched == 2
    assert new == "\n".join(["# the node set's keys", f"10.0.0.1 {OTHER}", f"10.0.0.3 {OTHER}",
                             f"10.0.0.2,compute-2 {OTHER}"]) + "\n"
    # a line shared with another host keeps that host
    assert rewrite(f"10.0.0.2,10.0.0.9 {OLD}\n", ["10.0.0.2"], OTHER) == (
        f"10.0.0.9 {OLD}\n10.0.0.2 {OTHER}\n", 1)


@pytest.fixture()
def node(tmp_path: Path) -> Any:
    with ssh_node(tmp_path / "node") as served:
        yield served


@needs_sshd
def test_trusting_a_replaced_key_with_its_fingerprint(node: Node, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "known_hosts"
    file.write_text(f"10.0.0.1 {OTHER}\n[127.0.0.1]:{node.port} {OLD}\n")
    file.chmod(0o640)
    args = ["trust", str(file), "127.0.0.1", "--port", str(node.port), "--name", "edpm-compute-9"]
    assert main([*args, "--fingerprint", node.fingerprint]) == 0
    assert file.read_text() == (f"10.0.0.1 {OTHER}\n[127.0.0.1]:{node.port},[edpm-compute-9]:{node.port} "
                                f"{node.host_key_line}\n")
    assert file.stat().st_mode & 0o777 == 0o640
    assert capsys.readouterr().out == (
        f"trusted ED25519 {node.fingerprint} for [127.0.0.1]:{node.port}, [edpm-compute-9]:{node.port} in "
        f"{file}, in place of 1 line it had for them. Run `pulumi preview`, then `pulumi up`.\n")


@needs_sshd
def test_nothing_is_trusted_unchecked(node: Node, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "known_hosts"
    file.write_text(f"10.0.0.1 {OTHER}\n")
    args = ["trust", str(file), "127.0.0.1", "--port", str(node.port)]
    assert main(args) == 1
    assert f"ED25519 {node.fingerprint}" in capsys.readouterr().err
    assert main([*args, "--fingerprint", fingerprint(OLD)]) == 1
    assert "so trust nothing" in capsys.readouterr().err
    assert file.read_text() == f"10.0.0.1 {OTHER}\n"
