"""Mounted files made from the Secrets and ConfigMaps they name: which file
gets which key's text, secret or not, and what cannot be made."""

from __future__ import annotations

import base64

import pytest

from components.render.mounts import MountedFilesError, object_files, service_files
from components.settings import MountedFiles

ORIGIN = ("extraMounts", 0, "mounts", 0)
KEYRING = "[client.openstack]\n\tkey = AQBsecret==\n"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_a_secrets_data_is_decoded_and_a_config_maps_is_taken_as_it_is() -> None:
    assert object_files("Secret", "s", {"data": {"k": b64(KEYRING)}}) == {"k": KEYRING}
    assert object_files("ConfigMap", "c", {"data": {"a.conf": "[x]\n"}, "binaryData": {"b": b64("bin")}}) == {
        "a.conf": "[x]\n", "b": "bin"}


def test_binary_content_is_refused_without_quoting_it() -> None:
    with pytest.raises(MountedFilesError) as err:
        object_files("Secret", "s", {"data": {"k": base64.b64encode(b"\xff\xfesecret").decode()}})
    assert str(err.value) == "Secret s: key k is not UTF-8 text; EDPM nodes get text files"


OBJECTS = {
    ("Secret", "ceph-conf-files"): {"ceph.conf": "[global]\nfsid = f\n", "ceph.client.openstack.keyring": KEYRING},
    ("ConfigMap", "ceph-nova"): {"03-ceph-nova.conf": "[libvirt]\nimages_type = rbd\n", "other": "x"},
}


def test_files_go_to_their_service_secret_or_public_by_their_source() -> None:
    mounted = [MountedFiles("ceph-client", "Secret", "ceph-conf-files", None, ORIGIN),
               MountedFiles("nova", "ConfigMap", "ceph-nova", {"03-ceph-nova.conf": "03-ceph-nova.conf"}, ORIGIN)]
    files = service_files(mounted, OBJECTS)
    assert files["ceph-client"].secret == OBJECTS[("Secret", "ceph-conf-files")]
    assert files["ceph-client"].public == {}
    assert (files["nova"].secret, files["nova"].public) == ({}, {"03-ceph-nova.conf": "[libvirt]\nimages_type = rbd\n"})


def test_items_rename_keys() -> None:
    mounted = [MountedFiles("ceph-client", "Secret", "ceph-conf-files", {"ceph2.conf": "ceph.conf"}, ORIGIN)]
    assert service_files(mounted, OBJECTS)["ceph-client"].secret == {"ceph2.conf": "[global]\nfsid = f\n"}


@pytest.mark.parametrize(("mounted", "message"), [
    ([MountedFiles("nova", "ConfigMap", "ceph-nova", {"03-ceph-nova.conf": "missing"}, ORIGIN)],
     "openstack-nova:extraMounts[0].mounts[0]: ConfigMap ceph-nova has no key missing; its keys: 03-ceph-nova.conf, "
     "other"),
    ([MountedFiles("nova", "ConfigMap", "ceph-nova", None, ORIGIN),
      MountedFiles("nova", "ConfigMap", "ceph-nova", {"other": "other"}, ("extraMounts", 1, "mounts", 0))],
     "openstack-nova:extraMounts[1].mounts[0]: other for nova comes from ConfigMap ceph-nova "
     "(openstack-nova:extraMounts[0].mounts[0]) and from ConfigMap ceph-nova; give each file one source"),
    ([MountedFiles("nova", "ConfigMap", "ceph-nova", {"run-on-host": "other"}, ORIGIN)],
     "openstack-nova:extraMounts[0].mounts[0]: run-on-host is one of the program's own files for nova; name the "
     "mounted file otherwise"),
    ([MountedFiles("nova", "Secret", "ceph-conf-files", None, ORIGIN)],
     "openstack-nova:extraMounts[0].mounts[0]: nova-compute would never load ceph.conf from Secret "
     "ceph-conf-files: only files whose name contains 'nova' and ends .conf are"),
])
def test_what_cannot_be_made_says_where_and_why(mounted: list[MountedFiles], message: str) -> None:
    with pytest.raises(MountedFilesError) as err:
        service_files(mounted, OBJECTS)
    assert str(err.value) == message
