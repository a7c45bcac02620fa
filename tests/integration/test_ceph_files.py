"""Ceph client files and a nova snippet given to the nodes by `Compute`-propagated
extraMounts, read from a Secret and a ConfigMap of the namespace: where they
land, with which modes, never in plain text in state or preview, and a change
re-running exactly the runs that use them."""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from components.ansible_runner.playbook import TYPE as PLAYBOOK_RUN
from tests.integration.local_env import NODES, node, pulumi, run, up
from tests.integration.nova_compute import compute_process, eventually, in_compute
from tests.integration.stacks import Stack, name_of, type_of
from tests.integration.test_dataplane import nova_conf, stat

# Longer than CI's budget allows: `make test-long` runs these (README, "The two commands").
pytestmark = pytest.mark.long

NAMESPACE = "openstack"
FSID = "6a1b2c3d-0000-4000-8000-000000000001"
CEPH_CONF = f"[global]\nfsid = {FSID}\nmon_host = 192.0.2.1\n"
NOVA_SNIPPET = "[libvirt]\nimages_rbd_pool = vms\nrbd_user = openstack\n"
MOUNTS = [{
    "propagation": ["Compute"],
    "volumes": [{"name": "ceph", "secret": {"secretName": "ceph-conf-files"}},
                {"name": "ceph-nova", "configMap": {"name": "ceph-nova"}}],
    "mounts": [{"name": "ceph", "mountPath": "/etc/ceph", "readOnly": True},
               {"name": "ceph-nova", "mountPath": "/var/lib/openstack/configs/nova/03-ceph-nova.conf",
                "subPath": "03-ceph-nova.conf"}],
}]


def keyring() -> tuple[str, str]:
    """A new cephx key, and the keyring file holding it."""
    key = base64.b64encode(secrets.token_bytes(28)).decode()
    return key, f"[client.openstack]\n\tkey = {key}\n"


def apply(kind: str, name: str, data: dict[str, str]) -> None:
    if kind == "Secret":
        body: dict[str, Any] = {"data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}
    else:
        body = {"data": data}
    manifest = {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": NAMESPACE}, **body}
    run("kubectl", "apply", "-f", "-", input=json.dumps(manifest))


RUN = PLAYBOOK_RUN


def changed_runs(steps: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(op, name) of the node runs the steps change (reads of the Secret and ConfigMap aside)."""
    return sorted((s["op"], name_of(s)) for s in steps if type_of(s) == RUN)


@pytest.fixture(scope="module")
def ceph_stack(module_dev_copy: Stack) -> Iterator[tuple[Stack, str]]:
    """dev with the Ceph Secret and ConfigMap mounted for every compute: the stack and the key.
    Once for the module: the first test rolls Ceph out, the next ones go on from there (each makes
    its own `up` first, so it also runs alone), and Ceph is taken away once, at the end."""
    stack = module_dev_copy
    key, ring = keyring()
    apply("Secret", "ceph-conf-files", {"ceph.conf": CEPH_CONF, "ceph.client.openstack.keyring": ring})
    apply("ConfigMap", "ceph-nova", {"03-ceph-nova.conf": NOVA_SNIPPET})
    original = stack.file.read_text()
    config = yaml.safe_load(original)
    config["config"]["openstack-nova:extraMounts"] = MOUNTS
    stack.file.write_text(yaml.safe_dump(config))
    try:
        yield stack, key
    finally:
        stack.file.write_text(original)
        up(stack.name, cwd=stack.project)
        # ceph-client's runs go (removing the files) after nova's restart: nova's runs, checked
        # again, find nova-compute's copy stale and the next up restarts it without them (a whole
        # refresh of the stack found just these two drifted, and checked every other run for it)
        stack.refresh_runs([f"{n}-nova" for n in NODES])
        up(stack.name, cwd=stack.project)
        run("kubectl", "delete", "-n", NAMESPACE, "secret/ceph-conf-files", "configmap/ceph-nova", check=False)


def test_ceph_files_reach_every_compute_secret_all_the_way(ceph_stack: tuple[Stack, str]) -> None:
    stack, key = ceph_stack
    preview = stack.cli("preview", "--diff")
    assert "images_rbd_pool = vms" in preview.stdout  # the ConfigMap's snippet, line by line
    assert f"<uuid>{FSID}</uuid>" in preview.stdout  # libvirt's secret: the definition is shown, the key never
    assert key not in preview.stdout + preview.stderr
    result = up(stack.name, cwd=stack.project)
    ran = sorted((op, n) for op, typ, n in result["steps"] if typ == RUN and op != "same")
    assert ran == sorted([("create", f"{n}-ceph-client") for n in NODES] + [("update", f"{n}-libvirt") for n in NODES]
                         + [("update", f"{n}-nova") for n in NODES]), result
    for name in NODES:
        laid_out = stat(name, "/var/lib/openstack/config/ceph/*")
        assert laid_out == {"ceph.client.openstack.keyring": "600 root", "ceph.conf": "644 root"}, name
        # what kolla copied into nova_compute as it started
        assert stat(name, "/etc/ceph/*", where=in_compute) == {"ceph.client.openstack.keyring": "600 nova",
                                                               "ceph.conf": "600 nova"}
        assert in_compute(name, "cat /etc/ceph/ceph.conf").stdout == CEPH_CONF
        # the host's qemu (RBD disks of the guests) reads the cluster's conf, never a keyring
        assert stat(name, "/etc/ceph/*.conf /etc/ceph/*.keyring 2>/dev/null") == {"ceph.conf": "644 root"}, name
        assert node(name, "cat /etc/ceph/ceph.conf").stdout == CEPH_CONF, name
        assert stat(name, "/var/lib/openstack/nova/03-ceph-nova.conf") == {"03-ceph-nova.conf": "644 root"}
        assert nova_conf(name, "libvirt.images_rbd_pool") == "'vms'"
    # in state the key is only ever encrypted
    assert key not in pulumi("stack", "export", "-s", stack.name, cwd=stack.project).stdout
    assert stack.cli("preview", "--expect-no-changes", check=False).returncode == 0


def libvirt_secret(name: str) -> str:
    """The value the node's libvirt holds for the cluster's secret (empty: none)."""
    return node(name, f"virsh -c secret:///system secret-get-value {FSID}").stdout.strip()


def test_libvirt_keeps_the_clusters_key_as_a_secret_of_its_fsid(ceph_stack: tuple[Stack, str]) -> None:
    """Given to the node's running secret daemon as virsh gives it, the key through a file (the
    preview of the roll-out, which shows the secret's definition and never its key, is the first
    test's)."""
    stack, key = ceph_stack
    up(stack.name, cwd=stack.project)
    for name in NODES:
        definition = node(name, f"virsh -c secret:///system secret-dumpxml {FSID}").stdout
        assert f"<uuid>{FSID}</uuid>" in definition and "<usage type='ceph'>" in definition, name
        assert "<name>ceph.client.openstack secret</name>" in definition, name
        assert libvirt_secret(name) == key, name
        # no file of the key left behind, none in the journal of the run
        assert node(name, "grep -rlF -- '" + key[:20] + "' /tmp /var/tmp 2>/dev/null; true").stdout == "", name
    assert key not in pulumi("stack", "export", "-s", stack.name, cwd=stack.project).stdout
    # a drift check finds a value lost behind the stack's back, on that node only, and up puts it back
    node(NODES[0], f"virsh -c secret:///system secret-undefine {FSID}")
    stack.cli("refresh", "--yes", "--skip-preview")
    repaired = sorted(n for op, _, n in up(stack.name, cwd=stack.project)["steps"] if op == "update")
    assert repaired == [f"{NODES[0]}-libvirt"]
    assert libvirt_secret(NODES[0]) == key


def test_a_new_keyring_reruns_only_the_runs_that_use_it(ceph_stack: tuple[Stack, str]) -> None:
    stack, _ = ceph_stack
    up(stack.name, cwd=stack.project)
    before = {n: compute_process(n) for n in NODES}
    new_key, ring = keyring()
    apply("Secret", "ceph-conf-files", {"ceph.conf": CEPH_CONF, "ceph.client.openstack.keyring": ring})
    assert changed_runs(stack.preview_steps()) == sorted(
        [("update", f"{n}-ceph-client") for n in NODES] + [("update", f"{n}-libvirt") for n in NODES]
        + [("update", f"{n}-nova") for n in NODES])
    up(stack.name, cwd=stack.project)
    for name in NODES:
        assert new_key in in_compute(name, "cat /etc/ceph/ceph.client.openstack.keyring").stdout, name
        assert libvirt_secret(name) == new_key, name
        # nova-compute started again, with the new files
        after = eventually(lambda: compute_process(name), lambda p: p is not None and p != before[name])  # noqa: B023
        assert after is not None and after != before[name], name
    # a change of the ConfigMap alone concerns nova only
    apply("ConfigMap", "ceph-nova", {"03-ceph-nova.conf": NOVA_SNIPPET.replace("vms", "vms2")})
    assert changed_runs(stack.preview_steps()) == [("update", f"{n}-nova") for n in NODES]
    up(stack.name, cwd=stack.project)
    assert nova_conf(NODES[1], "libvirt.images_rbd_pool") == "'vms2'"
