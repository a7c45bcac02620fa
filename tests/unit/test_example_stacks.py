"""The example stacks name the images the local environment builds and imports."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.unit import LOCAL_IMAGES_RELEASE, ROOT


def _image_tag() -> str:
    text = (ROOT / "devenv" / "versions.env").read_text()
    match = re.search(r"^IMAGE_TAG=(\S+)$", text, re.M)
    assert match, "devenv/versions.env sets no IMAGE_TAG"
    return match.group(1)


def _imported_names() -> set[str]:
    text = (ROOT / "devenv" / "images.sh").read_text()
    match = re.search(r"^IMAGE_NAMES=\(([^)]*)\)", text, re.M)
    assert match, "devenv/images.sh lists no IMAGE_NAMES"
    return set(match.group(1).split())


@pytest.mark.parametrize("stack", ["dev", "ci-live-migration"])
def test_example_stacks_run_the_local_images_and_await_them(stack: str) -> None:
    config = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]
    images = dict(config["openstack-nova:images"])
    # the program renders for the nova those images hold
    assert images.pop("novaRelease") == LOCAL_IMAGES_RELEASE
    assert set(images) >= {"api", "scheduler", "conductor", "metadata", "novncproxy"}
    for key, ref in images.items():
        name, _, tag = ref.removeprefix("localhost/openstack-nova/").partition(":")
        assert ref.startswith("localhost/openstack-nova/"), (key, ref)
        assert tag == _image_tag(), (key, ref)
        assert name in _imported_names(), (key, ref)
    # a real cluster: the provider waits for every rollout and Job
    assert "skipAwait" not in config.get("openstack-nova:kubernetes", {})
