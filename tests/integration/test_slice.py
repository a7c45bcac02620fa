"""The vertical slice through every layer: the namespace and Secrets on the
API server, and a playbook run on each test node, converged by `pulumi up`."""

from __future__ import annotations

import json

from components.ansible_runner.playbook import TYPE as PLAYBOOK_RUN
from tests.integration.local_env import kubectl_json, node, pulumi, run, up

MARKER = "/var/lib/openstack/edpm-node.json"


def test_namespace_and_secrets_exist(dev_stack: str) -> None:
    assert kubectl_json("get", "namespace", "openstack")["status"]["phase"] == "Active"
    secrets = {s["metadata"]["name"] for s in kubectl_json("get", "secrets", "-n", "openstack")["items"]}
    assert "nova-cell1-compute-config" in secrets


def test_playbook_wrote_marker_on_each_node_only(dev_stack: str) -> None:
    for name, cell in (("edpm-compute-0", "cell1"), ("edpm-compute-1", "cell2")):
        proc = node(name, f"cat {MARKER}")
        assert proc.returncode == 0, proc.stderr
        marker = json.loads(proc.stdout)
        assert (marker["node"], marker["cell"]) == (name, cell)
    host = run("test", "-e", MARKER, check=False)
    assert host.returncode != 0, "the marker must exist only inside the nodes' mount namespaces"


def test_second_up_changes_nothing_and_runs_no_playbook(dev_stack: str) -> None:
    preview = pulumi("preview", "--expect-no-changes", "-s", dev_stack, check=False)
    assert preview.returncode == 0, preview.stdout + preview.stderr
    changes = up(dev_stack)
    assert set(changes) == {"same", "steps"}, changes
    runs = [s for s in changes["steps"] if s[1] == PLAYBOOK_RUN and s[0] != "same"]
    assert runs == []
