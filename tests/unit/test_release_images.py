"""The image sets of older nova releases (devenv/images/releases/<release>), which the local
environment builds beside today's image, and the stack that runs one
(stacks/Pulumi.antelope-local.yaml): each set holds a release the program renders for, at
pins of its own, under a tag of its own, and its selftest serves the WSGI entry points the
program renders for that release; once built, the test nodes' image store holds it beside
today's image."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.settings import SHIPPED_CATALOGS
from components.settings.releases import RELEASES, WsgiApp
from components.stackconfig import load
from tests.unit import KNOWN_HOSTS, LOCAL_IMAGES_RELEASE, ROOT, pins
from tests.unit.test_rotation import _plain

IMAGES = ROOT / "devenv" / "images"
RELEASE_DIRS = sorted((IMAGES / "releases").iterdir())
STACK = ROOT / "stacks" / "Pulumi.antelope-local.yaml"
PREFIX = "openstack-nova:"


def _env(path: Path) -> dict[str, str]:
    """The assignments of a release.env (plain NAME=value lines, as the scripts source it)."""
    found = {}
    for line in path.read_text().splitlines():
        name, sep, value = line.partition("=")
        if sep and not line.startswith("#"):
            found[name] = shlex.split(value)[0]
    return found


def _shell_array(script: Path, name: str) -> list[str]:
    match = re.search(rf"^{name}=\(([^)]*)\)", script.read_text(), re.M)
    assert match, f"{script.name} sets no {name}"
    return match.group(1).split()


def _entry(app: WsgiApp) -> str:
    return f"{app.module}:{app.factory}" if app.factory else app.module


def _requirements(path: Path) -> list[str]:
    return [line.split("==")[0].strip().lower() for line in path.read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def test_the_shipped_older_release_has_its_image_set() -> None:
    assert [d.name for d in RELEASE_DIRS] == [r for r in RELEASES if r != LOCAL_IMAGES_RELEASE] == ["27.5.1"]


@pytest.mark.parametrize("release_dir", RELEASE_DIRS, ids=lambda d: d.name)
def test_an_image_set_pins_every_package_to_its_release(release_dir: Path) -> None:
    release = release_dir.name
    pinned = pins(release_dir / "constraints.txt")
    assert pinned["nova"] == release
    assert f"nova=={release}" in (release_dir / "requirements.txt").read_text().splitlines()
    assert set(_requirements(release_dir / "requirements.txt")) <= set(pinned)
    # what nova 27 needs from its time: sqlalchemy-migrate, which SQLAlchemy 2.0 breaks
    assert pinned["sqlalchemy"].startswith("1.4.")
    assert pins(IMAGES / "constraints.txt")["nova"] != release  # not today's image


@pytest.mark.parametrize("release_dir", RELEASE_DIRS, ids=lambda d: d.name)
def test_an_image_set_has_a_tag_of_its_own(release_dir: Path) -> None:
    tag = _env(release_dir / "release.env")["IMAGE_TAG"]
    today = _env(ROOT / "devenv" / "versions.env")["IMAGE_TAG"]
    assert tag != today and re.fullmatch(r"\d{4}\.\d-\d+", tag)
    others = [_env(d / "release.env")["IMAGE_TAG"] for d in RELEASE_DIRS if d != release_dir]
    assert tag not in others


@pytest.mark.parametrize("release_dir", RELEASE_DIRS, ids=lambda d: d.name)
def test_the_selftest_serves_the_wsgi_entry_points_the_program_renders_for_the_release(release_dir: Path) -> None:
    env = _env(release_dir / "release.env")
    row = RELEASES[release_dir.name]
    assert env["NOVA_API_WSGI"] == _entry(row.api) == "nova.api.openstack.compute.wsgi:init_application"
    assert env["NOVA_METADATA_WSGI"] == _entry(row.metadata)
    selftest = (IMAGES / "selftest.sh").read_text()
    assert '. "/mnt/$1/release.env"' in selftest and 'wsgi_file "$NOVA_API_WSGI"' in selftest


def _stack() -> dict[str, Any]:
    config = yaml.safe_load(STACK.read_text())["config"]
    return {key.removeprefix(PREFIX): value for key, value in config.items()}


def test_the_older_release_stack_runs_that_releases_images(tmp_path: Path) -> None:
    raw = _stack()
    images = dict(raw["images"])
    release = images.pop("novaRelease")
    tag = _env(IMAGES / "releases" / release / "release.env")["IMAGE_TAG"]
    names = _shell_array(ROOT / "devenv" / "images.sh", "RELEASE_IMAGE_NAMES")
    # the metadata agent is neutron's: today's image, which the nodes' store holds too
    agent = images.pop("neutronMetadataAgent")
    today = _env(ROOT / "devenv" / "versions.env")["IMAGE_TAG"]
    assert agent == f"localhost/openstack-nova/neutron-metadata-agent:{today}"
    assert "neutron-metadata-agent" in _shell_array(ROOT / "devenv" / "images.sh", "IMAGE_NAMES")
    assert set(images) == {"api", "scheduler", "conductor", "metadata", "novncproxy", "compute"}
    for key, ref in images.items():
        name, _, ref_tag = ref.removeprefix("localhost/openstack-nova/").partition(":")
        assert ref.startswith("localhost/openstack-nova/") and ref_tag == tag and name in names, (key, ref)
    # the stack loads (secrets and the environment's files made local to the test)
    config = {key: _plain(value, key) for key, value in raw.items()}
    key_file = tmp_path / "id_ed25519"
    key_file.write_text("key\n")
    for node_set in config["dataplane"]["nodeSets"].values():
        node_set["nodeTemplate"].update(ansibleSSHPrivateKeyFile=str(key_file), knownHostsFile=KNOWN_HOSTS)
    settings = load(config, secret_keys={"nova"}, catalog=SHIPPED_CATALOGS)
    assert settings.images.release is RELEASES[release]


def test_the_older_release_stack_borrows_one_node_and_runs_nova_compute_there_as_on_a_host() -> None:
    raw = _stack()
    others = [yaml.safe_load(p.read_text())["config"] for p in (ROOT / "stacks").glob("Pulumi.*.yaml") if p != STACK]
    assert raw["namespace"] not in {c.get(f"{PREFIX}namespace") for c in others}
    # its own OVN database, by the name the data plane's DNS serves (<svc>.<namespace>.svc)
    assert raw["dataplane"]["ovn"]["sbConnection"] == f"tcp:ovsdbserver-sb.{raw['namespace']}.svc:6642"
    (node_set,) = raw["dataplane"]["nodeSets"].values()
    assert list(node_set["nodes"]) == ["edpm-compute-1"]
    # the roles as on a user's node: no role variable but the node's python; nova's libvirt
    # driver (the default) on QEMU without hardware virtualisation, as the dev stack's
    assert node_set["nodeTemplate"]["ansibleVars"] == {"ansible_python_interpreter": "/usr/bin/python3"}
    assert node_set["customServiceConfig"] == {"nova": "[libvirt]\nvirt_type = qemu\n"}


# --- devenv/images.sh: a release's build beside today's --------------------------------------


def _sourced(script: Path, call: str, cache: Path) -> list[str]:
    """`call` run in bash with `script` sourced (its functions only), the cache under `cache`."""
    proc = subprocess.run(["bash", "-c", f'. "$1"; {call}', "sourced", str(script)],
                          env={**os.environ, "OPENSTACK_NOVA_CACHE": str(cache)},
                          capture_output=True, text=True, check=True)
    return proc.stdout.splitlines()


def _images_sh(call: str, cache: Path) -> list[str]:
    return _sourced(ROOT / "devenv" / "images.sh", call, cache)


def test_todays_image_is_not_rebuilt_for_a_release_and_a_release_not_for_todays_pins(tmp_path: Path) -> None:
    today = _images_sh("all_inputs", tmp_path)
    assert "./constraints.txt" in today and "./setup.sh" in today
    assert not [f for f in today if f.startswith("./releases/")]
    release = _images_sh("use_release 27.5.1; all_inputs", tmp_path)
    assert {"./releases/27.5.1/constraints.txt", "./releases/27.5.1/release.env", "./setup.sh"} <= set(release)
    assert "./constraints.txt" not in release and "./requirements.txt" not in release


def test_a_release_is_built_under_its_own_name_and_tag(tmp_path: Path) -> None:
    (directory,) = _images_sh("use_release 27.5.1; image_dir", tmp_path)
    assert re.fullmatch(rf"{re.escape(str(tmp_path))}/images/nova-27\.5\.1-[0-9a-f]{{16}}", directory)
    refs = _images_sh("use_release 27.5.1; image_refs", tmp_path)
    assert refs == [f"localhost/openstack-nova/{name}:2023.1-1" for name in
                    ("nova-api", "nova-scheduler", "nova-conductor", "nova-novncproxy", "nova-compute")]
    (today,) = _images_sh("image_dir", tmp_path)
    assert re.fullmatch(rf"{re.escape(str(tmp_path))}/images/[0-9a-f]{{16}}", today)


def test_each_build_prunes_only_its_own_older_builds(tmp_path: Path) -> None:
    images = tmp_path / "images"
    names = ["0123456789abcdef", "fedcba9876543210", "base-0123456789abcdef", "base-fedcba9876543210",
             "nova-27.5.1-0123456789abcdef", "nova-27.5.1-fedcba9876543210", "pip", "apt-archives"]
    for name in names:
        (images / name).mkdir(parents=True)
    keep = f"{images}/nova-27.5.1-fedcba9876543210"
    _images_sh(f"use_release 27.5.1; prune {keep}", tmp_path)
    assert sorted(p.name for p in images.iterdir()) == sorted(set(names) - {"nova-27.5.1-0123456789abcdef"})
    _images_sh(f"prune {images}/base-fedcba9876543210 {images}/fedcba9876543210", tmp_path)
    assert sorted(p.name for p in images.iterdir()) == sorted(
        ["fedcba9876543210", "base-fedcba9876543210", "nova-27.5.1-fedcba9876543210", "pip", "apt-archives"])


def test_the_nodes_store_gets_each_release_built_for_todays_inputs_and_no_other(tmp_path: Path) -> None:
    assert _images_sh("built_releases", tmp_path) == []
    (directory,) = _images_sh("use_release 27.5.1; image_dir", tmp_path)
    build = Path(directory)
    build.mkdir(parents=True)
    (build / "image.tar").write_text("")
    assert _images_sh("built_releases", tmp_path) == []  # still building: no .done
    (build / ".done").write_text("")
    assert _images_sh("built_releases", tmp_path) == [f"{build}/image.tar"]
    # a build of other inputs (an older checkout's) is not this release's
    (build / ".done").unlink()
    older = build.parent / "nova-27.5.1-0123456789abcdef"
    older.mkdir()
    (older / "image.tar").write_text("")
    (older / ".done").write_text("")
    assert _images_sh("built_releases", tmp_path) == []


def test_the_nodes_image_store_is_keyed_by_podmans_version_and_every_tarball(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "var/lib/dpkg").mkdir(parents=True)
    status = root / "var/lib/dpkg/status"
    entry = "Package: podman\nStatus: install ok installed\nArchitecture: amd64\nVersion: {}\n\n"
    status.write_text(entry.format("5.4.2+ds1-2"))
    today, release = tmp_path / "today.tar", tmp_path / "release.tar"
    today.write_text("today's image")
    release.write_text("27.5.1's images")
    rootfs = ROOT / "devenv" / "hosts" / "rootfs.sh"

    def key(*tarballs: Path) -> str:
        (found,) = _sourced(rootfs, "store_key " + " ".join(shlex.quote(str(t)) for t in (root, *tarballs)), tmp_path)
        assert re.fullmatch(r"[0-9a-f]{16}", found)
        return found

    alone, both = key(today), key(today, release)
    assert alone != both and key(today, release) == both
    release.write_text("27.5.1's images, rebuilt")
    assert key(today, release) != both
    status.write_text(entry.format("5.4.3+ds1-1"))
    assert key(today) != alone


def test_the_nodes_boot_with_todays_image_and_every_built_release_in_their_store(tmp_path: Path) -> None:
    devenv = tmp_path / "devenv"
    (devenv / "hosts").mkdir(parents=True)
    for name in ("nodes.sh", "lib.sh", "network.env"):
        (devenv / name).write_text((ROOT / "devenv" / name).read_text())

    def stub(path: Path, cases: str) -> None:
        path.write_text(f'#!/bin/sh\ncase "$1" in {cases} esac\n')
        path.chmod(0o755)

    stub(devenv / "hosts" / "rootfs.sh", 'build) echo /c/root ;; images) shift; echo "/c/store:$*" | tr " " , ;;')
    stub(devenv / "images.sh", "build) echo /c/today.tar ;; releases) echo /c/r1.tar; echo /c/r2.tar ;;")
    nodes = devenv / "nodes.sh"
    assert _sourced(nodes, "node_inputs", tmp_path) == ["/c/root /c/store:/c/today.tar,/c/r1.tar,/c/r2.tar"]
    # none built: today's alone
    stub(devenv / "images.sh", "build) echo /c/today.tar ;; releases) ;;")
    assert _sourced(nodes, "node_inputs", tmp_path) == ["/c/root /c/store:/c/today.tar"]
