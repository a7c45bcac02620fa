"""edpm_libvirt gives libvirt the Ceph clusters' keys through virsh, run for real by Ansible
on this machine against a stand-in virsh that keeps secrets as libvirt's secret daemon does:
the key reaches virsh in a private file that is removed, never in argv or a log; a second
run changes nothing; a new key, a lost value and a dropped cluster are each put right, and a
drift check reports them without changing anything."""

from __future__ import annotations

import base64
import secrets
import subprocess
from pathlib import Path

import pytest

from components.render import ceph_secret_files
from components.render.libvirt import CephSecret
from tests.unit.ansible_run import role_play, run_play

FSID, OTHER = "6a1b2c3d-0000-4000-8000-000000000001", "6a1b2c3d-0000-4000-8000-000000000002"

VIRSH = r"""#!/bin/sh
# a stand-in virsh keeping secrets in $STORE as <uuid>.xml, .usage and .value; every call logged
echo "$*" >> "$LOG"
[ "$1" = -c ] && [ "$2" = secret:///system ] || { echo "unexpected connection $1 $2" >&2; exit 3; }
shift 2
cmd=$1; shift
case "$cmd" in
  secret-list)
    echo " UUID                                   Usage"
    echo "-----------------------------------------------------------"
    for f in "$STORE"/*.usage; do [ -e "$f" ] && echo " $(basename "$f" .usage)   $(cat "$f")"; done ;;
  secret-define)
    u=$(sed -n 's:.*<uuid>\(.*\)</uuid>.*:\1:p' "$1")
    echo "ceph $(sed -n 's:.*<name>\(.*\)</name>.*:\1:p' "$1")" > "$STORE/$u.usage"
    cp "$1" "$STORE/$u.xml"; echo "Secret $u created" ;;
  secret-get-value)
    [ -e "$STORE/$1.value" ] || { echo "error: secret $1 has no value" >&2; exit 1; }
    cat "$STORE/$1.value"; echo ;;
  secret-set-value)
    [ "$2" = --file ] || exit 2
    [ -e "$STORE/$1.usage" ] || { echo "error: no secret $1" >&2; exit 1; }
    stat -c '%a %U' "$3" >> "$STORE/modes"; echo "$3" >> "$STORE/files"
    cp "$3" "$STORE/$1.value"; echo "Secret value set" ;;
  secret-undefine) rm -f "$STORE/$1".*; echo "Secret $1 deleted" ;;
  *) exit 4 ;;
esac
"""


def _key() -> str:
    return base64.b64encode(secrets.token_bytes(28)).decode()


class Node:
    """The controller's files of the libvirt service and a node's libvirt secrets."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.src, self.store = tmp_path / "src", tmp_path / "store"
        self.src.mkdir()
        self.store.mkdir()
        # a secret of someone else's, which the role leaves alone
        (self.store / "11111111-2222-4333-8444-555555555555.usage").write_text("volume /var/lib/x.img\n")

    def give(self, *clusters: tuple[str, str, str]) -> None:
        for path in self.src.iterdir():
            path.unlink()
        public, secret = ceph_secret_files([CephSecret(cluster=c, fsid=f, user="openstack", key=k)
                                            for c, f, k in clusters])
        for name, text in {**public, **secret}.items():
            (self.src / name).write_text(text)

    def run(self, *, check: bool = False) -> subprocess.CompletedProcess[str]:
        (self.tmp / "log").write_text("")
        extra = {"edpm_libvirt_config_src": str(self.src),
                 "edpm_libvirt_src_files": sorted(p.name for p in self.src.iterdir()),
                 "edpm_libvirt_secret_definitions_dir": str(self.tmp / "definitions")}
        return run_play(self.tmp, role_play("edpm_libvirt", "ceph_secrets"), extra=extra, stubs={"virsh": VIRSH},
                        env={"LOG": str(self.tmp / "log"), "STORE": str(self.store)}, check=check)

    def calls(self) -> list[str]:
        return [line.split()[2] for line in (self.tmp / "log").read_text().splitlines()]

    def value(self, fsid: str) -> str | None:
        path = self.store / f"{fsid}.value"
        return path.read_text() if path.exists() else None


def _ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.fixture()
def node(tmp_path: Path) -> Node:
    return Node(tmp_path)


def test_a_clusters_key_reaches_libvirt_through_virsh_and_stays_right(node: Node) -> None:
    """One node's life, run after run (each run of Ansible costs seconds)."""
    key = _key()
    node.give(("ceph", FSID, key), ("other", OTHER, _key()))
    out = _ok(node.run())
    assert node.value(FSID) == key
    assert (node.store / f"{FSID}.usage").read_text() == "ceph ceph.client.openstack secret\n"
    assert node.calls() == ["secret-list"] + ["secret-get-value"] * 2 + ["secret-define"] * 2 + [
        "secret-set-value"] * 2
    # the key: in a 0600 file of root's, removed after; in no argv, no output
    assert (node.store / "modes").read_text() == "600 root\n" * 2
    assert not [f for f in (node.store / "files").read_text().split() if Path(f).exists()]
    assert key not in (node.tmp / "log").read_text() and key not in out
    # the definition kept for the next run
    assert (node.tmp / "definitions" / f"{FSID}.xml").stat().st_mode & 0o777 == 0o600

    # nothing to do: nothing changes
    assert "changed=0" in _ok(node.run())
    assert node.calls() == ["secret-list"] + ["secret-get-value"] * 2

    # a drift check reports a lost value and changes nothing
    (node.store / f"{FSID}.value").unlink()
    checked = _ok(node.run(check=True))
    assert "changed=1" in checked and f"libvirt would get the Ceph secrets of {FSID}" in checked
    assert node.value(FSID) is None and "secret-set-value" not in node.calls()

    # a new key (and the lost value) is set, the definition stays; a dropped cluster's secret goes,
    # someone else's stays
    new = _key()
    node.give(("ceph", FSID, new))
    _ok(node.run())
    assert node.calls() == ["secret-list", "secret-get-value", "secret-set-value", "secret-undefine"]
    assert node.value(FSID) == new
    assert not list(node.store.glob(f"{OTHER}.*")) and not (node.tmp / "definitions" / f"{OTHER}.xml").exists()
    assert sorted(p.name for p in node.store.glob("*.usage")) == [
        "11111111-2222-4333-8444-555555555555.usage", f"{FSID}.usage"]
