"""Glance, a neighbour of the local environment: registered in Keystone's catalog where nova
looks for it, holding the test image the environment uploads, its files on the host."""

from __future__ import annotations

import hashlib
from pathlib import Path

from devenv.neighbours.manifests import TEST_IMAGE, TEST_IMAGE_SIZE
from tests.integration.local_env import ENV, in_client, openstack, run

BLANK_MD5 = hashlib.md5(bytes(TEST_IMAGE_SIZE), usedforsecurity=False).hexdigest()


def test_glance_is_in_the_catalog_as_the_image_service_with_glance_operators_endpoints(dev_neighbours: str) -> None:
    ns = dev_neighbours
    (service,) = [s for s in openstack("service", "list", namespace=ns) if s["Type"] == "image"]
    assert service["Name"] == "glance"
    endpoints = openstack("endpoint", "list", "--service", "image", namespace=ns)
    assert {(e["Interface"], e["URL"]) for e in endpoints} == {
        ("internal", f"http://glance-default-internal.{ns}.svc:9292"),
        ("public", f"http://glance-default-public.{ns}.svc:9292"),
    }
    # every endpoint answers with glance's version document
    versions = in_client(ns, (
        "import json, urllib.error, urllib.request\n"
        "def ids(url):\n"
        "    try:\n"
        "        body = urllib.request.urlopen(url, timeout=30).read()\n"
        "    except urllib.error.HTTPError as e:  # 300 Multiple Choices, with the document\n"
        "        body = e.read()\n"
        "    return [v['id'] for v in json.loads(body)['versions']]\n"
        f"print(json.dumps([ids(u) for u in {sorted(e['URL'] for e in endpoints)!r}]))\n"
    ))
    assert all("v2.0" in ids for ids in versions)


def test_the_test_image_is_an_active_blank_raw_disk_anyone_may_boot(dev_neighbours: str) -> None:
    image = openstack("image", "show", TEST_IMAGE, namespace=dev_neighbours)
    assert (image["status"], image["disk_format"], image["container_format"]) == ("active", "raw", "bare")
    assert (image["size"], image["checksum"], image["visibility"]) == (TEST_IMAGE_SIZE, BLANK_MD5, "public")


def test_the_test_images_file_is_in_glances_host_directory(dev_neighbours: str) -> None:
    image = openstack("image", "show", TEST_IMAGE, namespace=dev_neighbours)
    stored = Path(ENV["OPENSTACK_NOVA_ENV"]) / "neighbours" / dev_neighbours / "glance" / "images" / image["id"]
    assert stored.stat().st_size == TEST_IMAGE_SIZE
    assert hashlib.md5(stored.read_bytes(), usedforsecurity=False).hexdigest() == BLANK_MD5


def test_the_test_image_survives_a_new_glance_pod_and_downloads_whole(dev_neighbours: str) -> None:
    ns = dev_neighbours
    run("kubectl", "delete", "pod", "-n", ns, "-l", "app.kubernetes.io/name=glance", "--wait=true")
    run("kubectl", "rollout", "status", "-n", ns, "deployment/glance", "--timeout=180s")
    downloaded = in_client(ns, (
        "import hashlib, json, time, openstack\n"
        "image = openstack.connect(cloud='default').image\n"
        f"found = next(image.images(name={TEST_IMAGE!r}))\n"
        "for attempt in range(30):  # the Service routes to the new pod within seconds\n"
        "    try:\n"
        "        data = image.download_image(found).content\n"
        "        break\n"
        "    except Exception:\n"
        "        time.sleep(2)\n"
        "print(json.dumps([len(data), hashlib.md5(data).hexdigest()]))\n"
    ))
    assert downloaded == [TEST_IMAGE_SIZE, BLANK_MD5]


def test_nova_finds_glance_through_the_catalog(dev_stack: str) -> None:
    """nova-api's image proxy (compute API 2.35 and older) asks glance at the endpoint the
    user's catalog gives: no [glance] endpoint is configured."""
    names = in_client("openstack", (
        "import json, openstack\n"
        "compute = openstack.connect(cloud='default').compute\n"
        "reply = compute.get('/images', microversion='2.35')\n"
        "reply.raise_for_status()\n"
        "print(json.dumps([i['name'] for i in reply.json()['images']]))\n"
    ))
    assert TEST_IMAGE in names
