"""Puts the local environment's test image into glance; run by the glance-test-image Job.

Reads glance-test-image.json (name, size in bytes, disk and container format,
visibility) and acts as cloud `default` of clouds.yaml (the admin). The image
is `size` zero bytes, made here: a blank raw disk, so a guest booted from it
runs its firmware and nothing else, and nothing is downloaded. An active image
of that name and size is kept; any other of that name (a failed upload, another
size) is deleted first, so the Job converges when it runs again.
"""

import json
import os
import sys
import time
from typing import Any

import openstack
from keystoneauth1 import exceptions as ksa_exceptions

CONFIG_DIR = os.environ.get("SETUP_CONFIG_DIR", "/var/lib/openstack/config")
WAIT_SECONDS = 180


def images_named(image: Any, name: str) -> list[Any]:
    """The images called `name`, once glance answers (a new Service can take a moment to route)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        try:
            return list(image.images(name=name))
        except (openstack.exceptions.SDKException, ksa_exceptions.ClientException) as e:
            if time.monotonic() > deadline:
                raise SystemExit(f"glance does not answer: {e}") from e
            print(f"waiting for glance: {e}", flush=True)
            time.sleep(2)


def main() -> int:
    with open(os.path.join(CONFIG_DIR, "glance-test-image.json")) as f:
        want = json.load(f)
    image = openstack.connect(cloud="default").image
    found = images_named(image, want["name"])
    keep = next((i for i in found if i.status == "active" and i.size == want["size"]), None)
    for other in found:
        if keep is None or other.id != keep.id:
            image.delete_image(other)
            print(f"image {other.name} {other.id} ({other.status}, {other.size} bytes) deleted")
    if keep is not None:
        print(f"image {keep.name} is there: {keep.id}, {keep.size} bytes, {keep.status}")
        return 0
    made = image.create_image(
        name=want["name"], data=bytes(want["size"]), disk_format=want["disk_format"],
        container_format=want["container_format"], visibility=want["visibility"],
        allow_duplicates=True, validate_checksum=True, wait=True, timeout=300,
    )
    print(f"image {made.name} uploaded: {made.id}, {made.size} bytes, {made.status}")
    return 0 if made.status == "active" else 1


if __name__ == "__main__":
    sys.exit(main())
