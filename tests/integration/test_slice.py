"""The vertical slice: namespace, a Secret, and one playbook per test node."""

from __future__ import annotations

import json

from tests.integration.local_env import kubectl_json, node, pulumi, run

MARKER = "/var/lib/openstack/edpm-node.json"


def test_namespace_and_secret_exist(dev_stack: str) -> None:
    secret = kubectl_json("get", "secret", "-n", "openstack", "openstack-nova-edpm-nodes")
    assert secret["metadata"]["namespace"] == "openstack"


def test_playbook_wrote_marker_on_each_node_only(dev_stack: str) -> None:
    for name in ("edpm-compute-0", "edpm-compute-1"):
        proc = node(name, f"cat {MARKER}")
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["node"] == name
    host = run("test", "-e", MARKER, check=False)
    assert host.returncode != 0, "the marker must exist only inside the nodes' mount namespaces"


def test_second_up_changes_nothing_and_runs_no_playbook(dev_stack: str) -> None:
    before = node("edpm-compute-0", f"stat -c %Y.%i {MARKER}").stdout
    preview = pulumi("preview", "--expect-no-changes", "-s", dev_stack)
    assert preview.returncode == 0
    up = pulumi("up", "--yes", "--skip-preview", "--json", "-s", dev_stack)
    summary = json.loads(up.stdout)
    changes = {k: v for k, v in summary.get("changeSummary", {}).items() if k != "same"}
    assert changes == {}, summary.get("changeSummary")
    assert node("edpm-compute-0", f"stat -c %Y.%i {MARKER}").stdout == before
