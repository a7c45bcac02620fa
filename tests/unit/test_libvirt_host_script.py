"""devenv/hosts/libvirt.sh's parts that need no build: where the tree is cached and when
that changes, the cached tree given back at once, and the roots it refuses."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

DEVENV = Path(__file__).resolve().parents[2] / "devenv"
VERSION = next(
    line.split("=", 1)[1]
    for line in (DEVENV / "hosts" / "libvirt" / "tree.sh").read_text().splitlines()
    if line.startswith("LIBVIRT_DEB_VERSION=")
)


@pytest.fixture
def devenv(tmp_path: Path) -> Path:
    """A copy of the script and the files it reads, which a test may change."""
    copy = tmp_path / "devenv"
    (copy / "hosts").mkdir(parents=True)
    shutil.copy(DEVENV / "lib.sh", copy / "lib.sh")
    shutil.copy(DEVENV / "hosts" / "libvirt.sh", copy / "hosts" / "libvirt.sh")
    shutil.copytree(DEVENV / "hosts" / "libvirt", copy / "hosts" / "libvirt")
    return copy


def _run(devenv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cache = devenv.parent / "cache"
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(devenv.parent), "OPENSTACK_NOVA_CACHE": str(cache)}
    return subprocess.run(
        [str(devenv / "hosts" / "libvirt.sh"), *args], capture_output=True, text=True, check=False, timeout=30, env=env
    )


def _tree(devenv: Path) -> str:
    proc = _run(devenv, "dir")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_the_tree_is_cached_by_a_hash_of_the_build_files(devenv: Path) -> None:
    tree = _tree(devenv)
    cache = devenv.parent / "cache"
    assert Path(tree).parent.parent == cache / "hosts"
    assert Path(tree).name == "tree"
    assert len(Path(tree).parent.name) == len("libvirt-") + 16
    assert not cache.exists()  # `dir` builds nothing


@pytest.mark.parametrize("changed", ["libvirt/tree.sh", "libvirt/compile.sh"])
def test_a_change_to_a_build_file_is_a_new_tree(devenv: Path, changed: str) -> None:
    before = _tree(devenv)
    path = devenv / "hosts" / changed
    original = path.read_text()
    path.write_text(original + "# changed\n")
    assert _tree(devenv) != before
    path.write_text(original)
    assert _tree(devenv) == before


@pytest.mark.parametrize("changed", ["libvirt.sh", "libvirt/probe.sh"])
def test_a_change_to_the_check_keeps_the_tree(devenv: Path, changed: str) -> None:
    before = _tree(devenv)
    path = devenv / "hosts" / changed
    path.write_text(path.read_text() + "# changed\n")
    assert _tree(devenv) == before


def test_a_built_tree_is_given_back_at_once_without_building(devenv: Path) -> None:
    tree = Path(_tree(devenv))
    tree.mkdir(parents=True)
    (tree.parent / ".done").touch()
    before = sorted(p.name for p in tree.parent.parent.iterdir())
    started = time.monotonic()
    proc = _run(devenv, "build")
    assert time.monotonic() - started < 1.0
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"{tree}\n", "")
    assert sorted(p.name for p in tree.parent.parent.iterdir()) == before


def test_version_is_the_pinned_debian_version(devenv: Path) -> None:
    proc = _run(devenv, "version")
    assert (proc.returncode, proc.stdout) == (0, f"{VERSION}\n")


def _debian_root(path: Path, packages: dict[str, str], files: dict[str, list[str]] | None = None) -> Path:
    """A root whose dpkg database says PACKAGES (name: version) of source libvirt are installed."""
    dpkg = path / "var" / "lib" / "dpkg"
    (dpkg / "info").mkdir(parents=True)
    (dpkg / "updates").mkdir()
    stanzas = [
        f"Package: {name}\nStatus: install ok installed\nMaintainer: Debian\nArchitecture: amd64\n"
        f"Source: libvirt\nVersion: {version}\nDescription: {name}\n"
        for name, version in packages.items()
    ]
    (dpkg / "status").write_text("\n".join(stanzas))
    for name in packages:
        listed = (files or {}).get(name, [])
        (dpkg / "info" / f"{name}.list").write_text("".join(f"{f}\n" for f in listed))
    return path


RUNTIME = ("libvirt-daemon-system", "libvirt-daemon-driver-qemu", "libvirt-clients", "libvirt0")


def test_install_refuses_a_root_with_another_libvirt_before_building(devenv: Path, tmp_path: Path) -> None:
    root = _debian_root(tmp_path / "root", {name: VERSION for name in RUNTIME} | {"libvirt0": "11.3.0-3"})
    proc = _run(devenv, "install", str(root))
    assert proc.returncode == 1
    assert proc.stderr == (
        f"libvirt.sh: {root} has libvirt0 11.3.0-3; the tree is built from {VERSION}: "
        f"install Debian's libvirt0={VERSION} first\n"
    )
    assert not (devenv.parent / "cache").exists()


def test_install_refuses_a_root_without_debian_libvirt(devenv: Path, tmp_path: Path) -> None:
    root = _debian_root(tmp_path / "root", {name: VERSION for name in RUNTIME if name != "libvirt-clients"})
    proc = _run(devenv, "install", str(root))
    assert proc.returncode == 1
    assert f"{root} has libvirt-clients not installed" in proc.stderr


def test_check_names_the_files_of_debian_builds_left_in_the_root(devenv: Path, tmp_path: Path) -> None:
    lib = "/usr/lib/x86_64-linux-gnu/libvirt.so.0.11003.0"
    daemon = "/usr/sbin/virtqemud"
    tree = Path(_tree(devenv))
    root = _debian_root(
        tmp_path / "root", {name: VERSION for name in RUNTIME}, {"libvirt0": [lib, "/usr/share/doc/libvirt0"]}
    )
    # The root's library is another ELF file than the tree's; its daemon is the tree's.
    for base, elf in ((root, "/bin/true"), (tree, "/bin/false")):
        (base / lib[1:]).parent.mkdir(parents=True)
        shutil.copy(elf, base / lib[1:])
    (tree.parent / ".done").touch()
    proc = _run(devenv, "check", str(root))
    assert (proc.returncode, proc.stderr) == (
        1,
        f"libvirt.sh: these files of {root} are not the tree's (run 'libvirt.sh install {root}'): {lib} (libvirt0)\n",
    )
    # With the tree's library, the daemons the tree brings are missing next.
    shutil.copy(tree / lib[1:], root / lib[1:])
    proc = _run(devenv, "check", str(root))
    assert (proc.returncode, proc.stderr) == (
        1,
        f"libvirt.sh: {root} has no {daemon} (run 'libvirt.sh install {root}')\n",
    )
    assert os.listdir(tree.parent.parent) == [tree.parent.name]


def test_an_unknown_command_shows_every_command(devenv: Path) -> None:
    proc = _run(devenv, "rebuild")
    assert (proc.returncode, proc.stderr) == (
        1,
        "libvirt.sh: usage: libvirt.sh build|dir|version|install ROOT|check [ROOT]\n",
    )
