"""Nova really runs: the dev stack's control plane on the local cluster, asked
through its own API (authenticated by Keystone) and through nova-manage."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import yaml

from tests.integration.local_env import kubectl_json, nova_manage, openstack, run, up
from tests.integration.nova_compute import eventually
from tests.integration.stacks import Stack

NS = "openstack"
CELLS = ("cell0", "cell1", "cell2")


def pods() -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in kubectl_json("get", "pods", "-n", NS)["items"]}


def test_every_workload_available_and_every_job_complete(dev_stack: str) -> None:
    for kind in ("statefulsets", "deployments"):
        for item in kubectl_json("get", kind, "-n", NS)["items"]:
            want, status = item["spec"]["replicas"], item["status"]
            assert status.get("readyReplicas", 0) == want, (kind, item["metadata"]["name"], status)
    jobs = kubectl_json("get", "jobs", "-n", NS)["items"]
    ours = [j for j in jobs if j["metadata"]["labels"].get("app.kubernetes.io/managed-by") == "openstack-nova"]
    assert {j["metadata"]["name"] for j in ours} >= {
        *(f"nova-{c}-conductor-db-sync" for c in CELLS), *(f"nova-{c}-cell-mapping" for c in CELLS),
        "nova-keystone-registration"}
    for job in jobs:
        assert job["status"].get("succeeded") == 1, (job["metadata"]["name"], job["status"])


def test_pulumi_waited_for_the_rollouts_and_jobs(dev_stack: str) -> None:
    """The provider awaited each object: what it stored is the status it waited for."""
    state = json.loads(run("pulumi", "stack", "export", "-s", dev_stack).stdout)
    by_type: dict[str, list[dict[str, Any]]] = {}
    for resource in state["deployment"]["resources"]:
        by_type.setdefault(resource["type"], []).append(resource)
    for job in by_type["kubernetes:batch/v1:Job"]:
        annotations = job["outputs"]["metadata"].get("annotations", {})
        assert "pulumi.com/skipAwait" not in annotations
        assert job["outputs"]["status"].get("succeeded") == 1, job["urn"]
    for sts in by_type["kubernetes:apps/v1:StatefulSet"]:
        assert sts["outputs"]["status"].get("readyReplicas") == sts["outputs"]["spec"]["replicas"], sts["urn"]


def test_compute_services_are_up_through_the_api(dev_stack: str) -> None:
    endpoints = openstack("endpoint", "list", "--service", "compute")
    assert {(e["Interface"], e["URL"]) for e in endpoints} == {
        ("public", "http://nova-public.openstack.svc:8774/v2.1"),
        ("internal", "http://nova-internal.openstack.svc:8774/v2.1"),
    }
    # The CLI finds nova-api in Keystone's catalog and authenticates through Keystone.
    services = openstack("compute", "service", "list")
    found = {(s["Binary"], s["Host"]): s for s in services}
    want = {("nova-scheduler", "nova-scheduler-0")} | {("nova-conductor", f"nova-{c}-conductor-0") for c in CELLS}
    assert want <= set(found), sorted(found)
    for key in want:
        assert (found[key]["State"], found[key]["Status"]) == ("up", "enabled"), found[key]


def test_cells_have_their_own_database_and_bus(dev_stack: str) -> None:
    table = nova_manage("cell_v2", "list_cells")
    rows = {cells[1]: cells for line in table.splitlines()
            if len(cells := [c.strip() for c in line.split("|")]) > 5 and cells[1] in CELLS}
    assert set(rows) == set(CELLS), table
    # | Name | UUID | Transport URL | Database Connection | Disabled |
    assert rows["cell0"][2] == "00000000-0000-0000-0000-000000000000"
    assert rows["cell0"][3] == "none:/"
    for cell in ("cell1", "cell2"):
        assert re.fullmatch(rf"rabbit://nova-{cell}:\*\*\*\*@rabbitmq-{cell}\.openstack\.svc:5672/%2F\?ssl=0",
                            rows[cell][3]), rows[cell][3]
    for cell, instance in (("cell0", "openstack"), ("cell1", "openstack-cell1"), ("cell2", "openstack-cell2")):
        assert re.fullmatch(rf"mysql\+pymysql://nova-{cell}:\*\*\*\*@{instance}\.openstack\.svc/nova_{cell}\?.*",
                            rows[cell][4]), rows[cell][4]


def _http_get(target: str, url: str) -> str:
    """The body at `url`, fetched from inside `target` (a pod, or kind/name)."""
    fetch = f"import urllib.request; print(urllib.request.urlopen({url!r}, timeout=10).read().decode())"
    return run("kubectl", "exec", "-n", NS, target, "--", "python3", "-c", fetch).stdout


def test_novncproxy_serves_the_console_page_over_ipv4_and_ipv6(dev_stack: str) -> None:
    # through the Service compute nodes point consoles at (novncproxy_base_url)
    page = _http_get("deploy/openstackclient", "http://nova-novncproxy-cell1-public.openstack.svc:6080/vnc_lite.html")
    assert "<title>noVNC</title>" in page, page[:500]
    # inside the pod, over IPv6
    assert "<title>noVNC</title>" in _http_get("nova-cell1-novncproxy-0", "http://[::1]:6080/vnc_lite.html")


# the keys memcached holds, URL-encoded, one per line
MEMCACHED_KEYS = """
import socket
s = socket.create_connection(("127.0.0.1", 11211), timeout=10)
s.sendall(b"lru_crawler metadump all\\r\\n")
data = b""
while not data.endswith(b"END\\r\\n"):
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
for line in data.decode().splitlines():
    if line.startswith("key="):
        print(line.split()[0][4:])
"""


def test_api_keeps_validated_tokens_in_memcached(dev_stack: str) -> None:
    openstack("compute", "service", "list")  # a request nova-api authenticates
    keys = run("kubectl", "exec", "-n", NS, "deploy/memcached", "--", "python3", "-c", MEMCACHED_KEYS).stdout.split()
    # keystonemiddleware's token cache (keystone's own keys are hashes)
    assert any(k.startswith("tokens%2F") for k in keys), keys[:20]


def test_each_cells_db_purge_runs(dev_stack: str) -> None:
    crons = {c["metadata"]["name"]: c for c in kubectl_json("get", "cronjobs", "-n", NS)["items"]}
    assert {f"nova-{c}-db-purge" for c in CELLS} <= set(crons)
    for cell in CELLS:
        assert crons[f"nova-{cell}-db-purge"]["spec"]["schedule"] == "0 0 * * *"
        # a run now, as the schedule would start it
        job = f"nova-{cell}-db-purge-now"
        run("kubectl", "delete", "job", "-n", NS, job, "--ignore-not-found", "--wait")
        run("kubectl", "create", "job", "-n", NS, job, f"--from=cronjob/nova-{cell}-db-purge")
        try:
            done = run("kubectl", "wait", "-n", NS, f"job/{job}", "--for=condition=Complete", "--timeout=180s",
                       check=False)
            log = run("kubectl", "logs", "-n", NS, f"job/{job}", check=False).stdout
            assert done.returncode == 0, (cell, log)
            # archive reached the API and cell databases; purge ran after it
            assert "Nothing was archived." in log or "Rows were archived" in log, (cell, log)
            assert "Failed to connect" not in log and "Unable to get cell list" not in log, (cell, log)
        finally:
            run("kubectl", "delete", "job", "-n", NS, job, "--ignore-not-found", "--wait")


def _queues(cluster: str) -> dict[str, dict[str, Any]]:
    """The queues of a bus cluster's broker (vhost /), by name, as rabbitmqctl lists them."""
    out = run("kubectl", "exec", "-n", NS, f"{cluster}-0", "--", "env", "HOME=/var/lib/rabbitmq", "rabbitmqctl",
              "-q", "list_queues", "-p", "/", "name", "type", "durable", "--formatter", "json").stdout
    return {q["name"]: q for q in json.loads(out)}


def test_nova_declares_quorum_queues_on_every_bus(dev_stack: str) -> None:
    """The dev stack leaves queueType at its default, Quorum: every nova service on each
    bus (the API bus with the scheduler and the superconductor, each cell's bus with its
    conductor and computes) declares its queues, transient ones too, as quorum queues."""
    expected = {
        "rabbitmq": ("scheduler", "scheduler.nova-scheduler-0", "conductor", "conductor.nova-cell0-conductor-0"),
        "rabbitmq-cell1": ("conductor", "conductor.nova-cell1-conductor-0", "compute", "compute.edpm-compute-0"),
        "rabbitmq-cell2": ("conductor", "conductor.nova-cell2-conductor-0", "compute", "compute.edpm-compute-1"),
    }
    for cluster, names in expected.items():
        queues = _queues(cluster)
        assert set(names) <= set(queues), (cluster, sorted(queues))
        nova = {n: q for n, q in queues.items() if n.startswith(("scheduler", "conductor", "compute", "reply_"))}
        assert any(n.startswith("reply_") or "_fanout_" in n for n in nova), (cluster, sorted(nova))
        assert {(n, q["type"], q["durable"]) for n, q in nova.items()} == {
            (n, "quorum", True) for n in nova}, cluster


def _uids() -> dict[str, str]:
    return {name: p["metadata"]["uid"] for name, p in pods().items()}


def test_custom_config_rolls_only_that_service_and_reaches_its_option_dump(dev_copy: Stack) -> None:
    before = _uids()
    dev_copy.cli("config", "set", "--path", "nova.schedulerServiceTemplate.customServiceConfig",
                 "[scheduler]\nmax_attempts = 7\n")
    changes = up(dev_copy.name, cwd=dev_copy.project)
    changed = sorted((op, name) for op, _, name in changes["steps"] if op not in ("same", "read"))
    assert changed == [("update", "nova-scheduler"), ("update", "nova-scheduler-config-data")], changed
    after = _uids()
    rolled = {name for name in before if after.get(name) != before[name]}
    assert rolled == {"nova-scheduler-0"}, rolled
    # debug is on: nova-scheduler dumps every option value as it starts
    deadline = time.time() + 120
    while True:
        log = run("kubectl", "logs", "-n", NS, "nova-scheduler-0").stdout
        if re.search(r"scheduler\.max_attempts\s+=\s+7\b", log):
            break
        assert time.time() < deadline, log[-2000:]
        time.sleep(2)


def _records() -> dict[tuple[str, str], dict[str, Any]]:
    """Every service record the compute API lists, by (binary, host)."""
    return {(r["Binary"], r["Host"]): r for r in openstack("compute", "service", "list")}


def _set_replicas(stack: Stack, replicas: int | None) -> None:
    """The scheduler's and cell1's conductor's replicas in the stack config (None: the default, 1)."""
    config = yaml.safe_load(stack.file.read_text())
    nova = config["config"]["openstack-nova:nova"]
    scheduler = nova.setdefault("schedulerServiceTemplate", {})
    conductor = nova["cellTemplates"]["cell1"].setdefault("conductorServiceTemplate", {})
    for template in (scheduler, conductor):
        if replicas is None:
            template.pop("replicas", None)
        else:
            template["replicas"] = replicas
    stack.file.write_text(yaml.safe_dump(config))


def test_scaling_down_deletes_the_records_of_the_pods_gone_and_no_others(dev_copy: Stack) -> None:
    extra = {("nova-scheduler", "nova-scheduler-1"), ("nova-conductor", "nova-cell1-conductor-1")}
    before = _records()
    assert not extra & set(before), sorted(before)
    _set_replicas(dev_copy, 2)
    result = up(dev_copy.name, cwd=dev_copy.project)
    changed = {name for op, _, name in result["steps"] if op not in ("same", "read")}
    # the new pods, and the cleanup Job again (its plan changed), which finds nothing to delete
    assert changed == {"nova-scheduler", "nova-cell1-conductor", "nova-service-cleanup-config",
                       "nova-service-cleanup-job"}, result["steps"]
    scaled = eventually(_records, lambda r: all(r.get(k, {}).get("State") == "up" for k in extra), seconds=120)
    assert all(scaled[k]["State"] == "up" for k in extra), sorted(scaled)

    _set_replicas(dev_copy, None)
    result = up(dev_copy.name, cwd=dev_copy.project)
    changed = {name for op, _, name in result["steps"] if op not in ("same", "read")}
    assert changed == {"nova-scheduler", "nova-cell1-conductor", "nova-service-cleanup-config",
                       "nova-service-cleanup-job"}, result["steps"]
    # pulumi up ran the Job after the rollouts: the records of the pods gone are gone already
    after = _records()
    assert not extra & set(after), sorted(after)
    # every other record stays, the computes' too, and the remaining pods are still up
    assert set(after) == set(before), sorted(set(after) ^ set(before))
    for key in [("nova-scheduler", "nova-scheduler-0"), *(("nova-conductor", f"nova-{c}-conductor-0") for c in CELLS)]:
        assert after[key]["State"] == "up", after[key]
    log = run("kubectl", "logs", "-n", NS, "job/nova-service-cleanup").stdout
    assert "deleted nova-scheduler nova-scheduler-1" in log and "deleted nova-conductor nova-cell1-conductor-1" in log
    # and with nothing changed, nothing runs again
    again = up(dev_copy.name, cwd=dev_copy.project)
    assert {op for op, _, _ in again["steps"]} <= {"same", "read"}, again["steps"]
