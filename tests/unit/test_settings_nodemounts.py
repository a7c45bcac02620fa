"""extraMounts that reach EDPM nodes: which node set's service gets which
files of which Secret or ConfigMap, and every problem at its config path."""

from __future__ import annotations

from typing import Any

import pytest

from components.settings import MountedFiles, Settings, SettingsError
from components.stackconfig import load
from tests.unit import KNOWN_HOSTS, LOAD_BALANCER

P = "openstack-nova:"
CEPH_SECRET = {"name": "ceph", "secret": {"secretName": "ceph-conf-files"}}
AT_ETC_CEPH = {"name": "ceph", "mountPath": "/etc/ceph", "readOnly": True}
CEPH_NOVA = {"name": "ceph-nova", "configMap": {"name": "ceph-nova"}}
AT_NOVA_CONF = {"name": "ceph-nova", "mountPath": "/var/lib/openstack/configs/nova/03-ceph-nova.conf",
                "subPath": "03-ceph-nova.conf"}


def node_set(address: str, **extra: Any) -> dict[str, Any]:
    return {"nodeTemplate": {"ansibleSSHPrivateKey": "KEY", "knownHostsFile": KNOWN_HOSTS},
            "nodes": {f"n-{address.rsplit('.', 1)[1]}": {"ansibleHost": address}}, **extra}


def config(*mounts: dict[str, Any], a: dict[str, Any] | None = None, b: dict[str, Any] | None = None,
           **top: Any) -> dict[str, Any]:
    """Node sets edpm-a and edpm-b (default services unless given) and the extraMounts given."""
    return {"nova": {"metadataServiceTemplate": LOAD_BALANCER},
            "dataplane": {"ovn": {"sbConnection": "tcp:10.0.0.5:6642"},
                          "nodeSets": {"edpm-a": node_set("192.168.122.100", **(a or {})),
                                       "edpm-b": node_set("192.168.122.101", **(b or {}))}},
            "extraMounts": list(mounts), **top}


def loaded(raw: dict[str, Any]) -> Settings:
    return load(raw, secret_keys=("dataplane",), catalog=None)


def problems(raw: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(SettingsError) as caught:
        loaded(raw)
    return {p.path: p.message for p in caught.value.problems}


def by_set(settings: Settings) -> dict[str, Any]:
    return {s.name: s for s in settings.dataplane.node_sets}


CEPH_FILES = MountedFiles("ceph-client", "Secret", "ceph-conf-files", None, ("extraMounts", 0, "mounts", 0))


def test_a_compute_mount_at_etc_ceph_gives_every_node_set_the_ceph_client_files() -> None:
    sets = by_set(loaded(config({"propagation": ["Compute"], "volumes": [CEPH_SECRET], "mounts": [AT_ETC_CEPH]})))
    for name in ("edpm-a", "edpm-b"):
        assert sets[name].mounted_files == (CEPH_FILES,)
        # a node set that lists no services gets ceph-client in upstream's place for it
        assert sets[name].services == ("ssh-known-hosts", "ceph-client", "neutron-metadata", "libvirt", "nova")


def test_a_mount_for_one_node_set_reaches_that_node_set_only() -> None:
    sets = by_set(loaded(config({"propagation": ["edpm-b"], "volumes": [CEPH_SECRET], "mounts": [AT_ETC_CEPH]})))
    assert sets["edpm-a"].mounted_files == () and "ceph-client" not in sets["edpm-a"].services
    assert sets["edpm-b"].mounted_files == (CEPH_FILES,)


def test_a_mount_everywhere_reaches_the_nodes_and_a_control_plane_one_does_not() -> None:
    everywhere = loaded(config({"volumes": [CEPH_SECRET], "mounts": [AT_ETC_CEPH]}))
    assert by_set(everywhere)["edpm-a"].mounted_files == (CEPH_FILES,)
    # a control-plane volume the program could not read never concerns the nodes
    host_path = {"name": "ceph", "hostPath": {"path": "/etc/ceph"}}
    control = loaded(config({"propagation": ["NovaConductor"], "volumes": [host_path], "mounts": [AT_ETC_CEPH]}))
    assert all(s.mounted_files == () for s in control.dataplane.node_sets)


def test_one_file_of_a_config_map_joins_novas_files() -> None:
    sets = by_set(loaded(config({"propagation": ["Compute"], "volumes": [CEPH_NOVA], "mounts": [AT_NOVA_CONF]})))
    assert sets["edpm-a"].mounted_files == (MountedFiles(
        "nova", "ConfigMap", "ceph-nova", {"03-ceph-nova.conf": "03-ceph-nova.conf"}, ("extraMounts", 0, "mounts", 0)),)
    assert "ceph-client" not in sets["edpm-a"].services


def test_a_projected_volume_gives_each_source_with_its_items() -> None:
    projected = {"name": "ceph", "projected": {"sources": [
        {"secret": {"name": "ceph-keys", "items": [{"key": "key", "path": "ceph.client.openstack.keyring"}]}},
        {"configMap": {"name": "ceph-conf"}},
    ]}}
    settings = loaded(config({"propagation": ["Compute"], "volumes": [projected], "mounts": [AT_ETC_CEPH]}))
    origin = ("extraMounts", 0, "mounts", 0)
    assert by_set(settings)["edpm-a"].mounted_files == (
        MountedFiles("ceph-client", "Secret", "ceph-keys", {"ceph.client.openstack.keyring": "key"}, origin),
        MountedFiles("ceph-client", "ConfigMap", "ceph-conf", None, origin),
    )


def test_a_sub_path_mount_finds_its_file_among_the_items() -> None:
    projected = {"name": "ceph", "projected": {"sources": [
        {"secret": {"name": "keys", "items": [{"key": "k", "path": "ceph.client.openstack.keyring"}]}},
        {"configMap": {"name": "confs", "items": [{"key": "main", "path": "ceph.conf"}]}},
    ]}}
    mount = {"name": "ceph", "mountPath": "/etc/ceph/ceph.conf", "subPath": "ceph.conf"}
    settings = loaded(config({"propagation": ["Compute"], "volumes": [projected], "mounts": [mount]}))
    (files,) = by_set(settings)["edpm-a"].mounted_files
    assert (files.kind, files.name, files.files) == ("ConfigMap", "confs", {"ceph.conf": "main"})


def test_listed_services_must_name_ceph_client_before_nova() -> None:
    entry = {"propagation": ["Compute"], "volumes": [CEPH_SECRET], "mounts": [AT_ETC_CEPH]}
    found = problems(config(entry, a={"services": ["nova"]}, b={"services": ["nova", "ceph-client"]}))
    assert found[P + "dataplane.nodeSets.edpm-a.services"] == (
        "extraMounts[0].mounts[0] gives this node set Ceph client files: list ceph-client before nova, e.g. "
        "[ssh-known-hosts, ceph-client, neutron-metadata, libvirt, nova]")
    assert found[P + "dataplane.nodeSets.edpm-b.services"] == (
        "ceph-client must come before nova: nova-compute copies the Ceph client files when it starts")


def test_ceph_client_is_a_built_in_service() -> None:
    raw = config()
    raw["dataplane"]["customServices"] = {"ceph-client": {"playbook": "x.yml"}}
    assert problems(raw)[P + "dataplane.customServices.ceph-client"] == (
        "'ceph-client' is a built-in service; choose another name")
    assert loaded(config(a={"services": ["ceph-client", "nova"]})).dataplane.node_sets[0].services == (
        "ceph-client", "nova")


CASES: list[tuple[str, dict[str, Any], str, str]] = [
    ("a path nothing on the nodes reads",
     {"propagation": ["Compute"], "volumes": [CEPH_SECRET], "mounts": [{"name": "ceph", "mountPath": "/opt/ceph"}]},
     "extraMounts[0].mounts[0].mountPath",
     "EDPM nodes get only files mounted at /etc/ceph (the Ceph client files) or /var/lib/openstack/configs/nova "
     "(nova's files); nothing on them reads /opt/ceph"),
    ("a volume the program cannot read",
     {"propagation": ["edpm-a"], "volumes": [{"name": "ceph", "hostPath": {"path": "/etc/ceph"}}],
      "mounts": [AT_ETC_CEPH]},
     "extraMounts[0].volumes[0]",
     "a hostPath volume cannot reach EDPM nodes: the program reads the files it gives them from a Secret, a "
     "ConfigMap or a projected volume of them, in the stack's namespace (or keep this entry to control-plane pods "
     "with a propagation that names neither Compute nor a node set)"),
    ("an optional source",
     {"propagation": ["Compute"], "volumes": [{"name": "ceph", "secret": {"secretName": "c", "optional": True}}],
      "mounts": [AT_ETC_CEPH]},
     "extraMounts[0].volumes[0].secret.optional",
     "Secret c must exist to reach EDPM nodes (the program reads it when it runs): remove optional"),
    ("an item in a subdirectory",
     {"propagation": ["Compute"], "mounts": [AT_ETC_CEPH],
      "volumes": [{"name": "ceph", "secret": {"secretName": "c", "items": [{"key": "k", "path": "d/k"}]}}]},
     "extraMounts[0].volumes[0].secret.items[0].path",
     "'d/k' must be a plain file name: EDPM nodes get the files of a volume side by side, in one directory"),
    ("a file mount without subPath",
     {"propagation": ["Compute"], "volumes": [CEPH_SECRET],
      "mounts": [{"name": "ceph", "mountPath": "/etc/ceph/ceph.conf"}]},
     "extraMounts[0].mounts[0].subPath",
     "is required: the file of volume ceph that becomes /etc/ceph/ceph.conf (or mount the whole volume at /etc/ceph)"),
    ("a subPath mounted as the directory",
     {"propagation": ["Compute"], "volumes": [CEPH_SECRET],
      "mounts": [{"name": "ceph", "mountPath": "/etc/ceph", "subPath": "ceph.conf"}]},
     "extraMounts[0].mounts[0].mountPath",
     "with subPath, name the file: /etc/ceph/ceph.conf"),
    ("a mount of a volume the entry does not have",
     {"propagation": ["Compute"], "volumes": [CEPH_NOVA], "mounts": [AT_ETC_CEPH]},
     "extraMounts[0].mounts[0].name",
     "no volume 'ceph' in this extraMounts entry; did you mean ceph-nova?"),
    ("a nova snippet nova would not load",
     {"propagation": ["Compute"], "volumes": [CEPH_NOVA],
      "mounts": [{**AT_NOVA_CONF, "mountPath": "/var/lib/openstack/configs/nova/03-ceph.conf"}]},
     "extraMounts[0].mounts[0]",
     "nova-compute would never load 03-ceph.conf: only files whose name contains 'nova' and ends .conf are loaded "
     "(e.g. 03-ceph-nova.conf)"),
]


@pytest.mark.parametrize(("entry", "path", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_mount_that_cannot_reach_the_nodes_is_a_problem_at_its_path(entry: dict[str, Any], path: str,
                                                                      message: str) -> None:
    assert problems(config(entry))[P + path] == message


def test_two_mounts_of_one_file_are_a_problem() -> None:
    keyring = {"name": "k", "secret": {"secretName": "other", "items": [{"key": "x", "path": "ceph.conf"}]}}
    entry = {"propagation": ["Compute"], "volumes": [CEPH_SECRET, keyring],
             "mounts": [{"name": "ceph", "mountPath": "/etc/ceph/ceph.conf", "subPath": "ceph.conf"},
                        {"name": "k", "mountPath": "/etc/ceph"}]}
    raw = config(entry)
    assert problems(raw)[P + "extraMounts[0].mounts[1]"] == (
        "ceph.conf for ceph-client also comes from extraMounts[0].mounts[0]")


def test_nova_files_need_the_nova_service() -> None:
    entry = {"propagation": ["edpm-a"], "volumes": [CEPH_NOVA], "mounts": [AT_NOVA_CONF]}
    assert problems(config(entry, a={"services": ["libvirt"]}))[P + "dataplane.nodeSets.edpm-a.services"] == (
        "extraMounts[0].mounts[0] gives nova's files to this node set, which runs no nova: list nova")


def test_render_mode_cannot_read_what_the_nodes_get() -> None:
    entry = {"propagation": ["Compute"], "volumes": [CEPH_SECRET], "mounts": [AT_ETC_CEPH]}
    raw = config(entry, kubernetes={"mode": "render", "renderDir": "/tmp/out"})
    assert problems(raw) == {P + "extraMounts[0].mounts[0]": (
        "gives EDPM nodes files of Secret ceph-conf-files, which the program reads from the cluster; "
        "kubernetes.mode render has none (use mode cluster)")}
