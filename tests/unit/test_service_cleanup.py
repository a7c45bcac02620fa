"""The service-cleanup Job: its plan, its files, and its script against a stand-in compute API."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from components.render import CLEANUP_SCRIPT, service_cleanup_files, service_cleanup_plan
from components.render.engine import TEMPLATES
from components.settings import Settings
from components.stackconfig import load

PLAN_FILE = "nova-service-cleanup.json"


def settings(**nova: Any) -> Settings:
    return load({"nova": nova}, catalog=None)


def script() -> ModuleType:
    """The Job's script as a module (it imports openstacksdk only when it runs)."""
    spec = importlib.util.spec_from_file_location("nova_service_cleanup", TEMPLATES / CLEANUP_SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def record(sid: str, binary: str, host: str, state: str = "up") -> dict[str, Any]:
    return {"id": sid, "binary": binary, "host": host, "state": state, "status": "enabled"}


# upstream's functional-test fixture of the compute API (nova-operator test/functional/nova/api_fixture.go)
UPSTREAM_RECORDS = [
    record("1", "nova-scheduler", "nova-scheduler-0"),
    record("2", "nova-compute", "nova-compute-0"),
    record("3", "nova-scheduler", "nova-scheduler-1", "down"),
    record("4", "nova-compute", "nova-compute-1", "down"),
    record("5", "nova-conductor", "nova-cell0-conductor-0"),
    record("6", "nova-conductor", "nova-cell1-conductor-0", "down"),
    record("7", "nova-conductor", "nova-cell1-conductor-1"),
    record("8", "nova-conductor", "nova-cell0-conductor-1", "down"),
]


def test_the_plan_names_each_statefulset_with_its_replicas() -> None:
    s = settings(schedulerServiceTemplate={"replicas": 3}, cellTemplates={
        "cell0": {}, "cell1": {"conductorServiceTemplate": {"replicas": 2}},
        "cell2": {"conductorServiceTemplate": {"replicas": 0}}})
    assert service_cleanup_plan(s.nova) == {
        "microversion": "2.53",
        "binaries": {
            "nova-scheduler": {"owned": "nova\\-scheduler", "statefulsets": {"nova-scheduler": 3}},
            "nova-conductor": {
                "owned": "nova-[a-z0-9]([-a-z0-9]*[a-z0-9])?-conductor",
                "statefulsets": {"nova-cell0-conductor": 1, "nova-cell1-conductor": 2, "nova-cell2-conductor": 0},
            },
        },
    }


def test_the_files_carry_the_script_the_plan_and_the_nova_users_cloud() -> None:
    s = settings()
    files = service_cleanup_files(s.nova, 'pa$s"word')
    assert set(files) == {CLEANUP_SCRIPT, PLAN_FILE, "clouds.yaml"}
    assert json.loads(files[PLAN_FILE]) == service_cleanup_plan(s.nova)
    cloud = yaml.safe_load(files["clouds.yaml"])["clouds"]["nova"]
    assert (cloud["auth"]["username"], cloud["auth"]["password"], cloud["interface"]) == (
        "nova", 'pa$s"word', "internal")
    # the password is in the credentials file only
    assert 'pa$s"word' not in files[CLEANUP_SCRIPT] + files[PLAN_FILE]
    compile(files[CLEANUP_SCRIPT], CLEANUP_SCRIPT, "exec")


def stale_hosts(records: list[dict[str, Any]], s: Settings) -> dict[str, list[str]]:
    cleanup, plan = script(), service_cleanup_plan(s.nova)
    return {binary: [r["host"] for r in cleanup.stale_services(binary, records, rule)]
            for binary, rule in plan["binaries"].items()}


def test_stale_records_are_those_upstream_deletes() -> None:
    """One scheduler and one conductor per cell: nova-scheduler-1 and nova-cell0-conductor-1
    go, as in upstream's tests; cell1's conductors stay (it runs two), computes are never stale."""
    s = settings(cellTemplates={"cell0": {}, "cell1": {"conductorServiceTemplate": {"replicas": 2}}})
    assert stale_hosts(UPSTREAM_RECORDS, s) == {
        "nova-scheduler": ["nova-scheduler-1"], "nova-conductor": ["nova-cell0-conductor-1"]}


def test_only_this_deployments_pods_that_are_gone_are_stale() -> None:
    s = settings(cellTemplates={"cell0": {}, "cell1": {"conductorServiceTemplate": {"replicas": 0}}})
    records = [
        record("a", "nova-conductor", "nova-cell1-conductor-0"),  # cell1 runs no conductor now
        record("b", "nova-conductor", "nova-cell10-conductor-0", "down"),  # a cell the stack dropped
        record("c", "nova-conductor", "nova-cell0-conductor-0"),
        record("d", "nova-conductor", "controller-1"),  # not a pod of this deployment
        record("e", "nova-conductor", "nova-cell0-conductor-01"),  # not a StatefulSet ordinal
        record("f", "nova-scheduler", "scheduler-host-3"),
        record("g", "nova-compute", "nova-scheduler-7"),  # a compute, whatever its host is called
    ]
    assert stale_hosts(records, s) == {
        "nova-scheduler": [], "nova-conductor": ["nova-cell1-conductor-0", "nova-cell10-conductor-0"]}


class FakeComputeAPI:
    """Answers the two calls the script makes, from a list of records, and records them."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.records = list(records)
        self.calls: list[tuple[str, str, Any]] = []

    def get(self, url: str, params: dict[str, str]) -> Any:
        self.calls.append(("GET", url, params))
        listed = [r for r in self.records if r["binary"] == params["binary"]]
        return type("Response", (), {"json": lambda _self: {"services": listed}})()

    def delete(self, url: str) -> None:
        self.calls.append(("DELETE", url, None))
        self.records = [r for r in self.records if url != f"/os-services/{r['id']}"]


def run_script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, s: Settings, api: FakeComputeAPI) -> list[str]:
    """Runs the script's main() against `api`; returns the microversions it asked for."""
    pytest.importorskip("keystoneauth1")
    (tmp_path / PLAN_FILE).write_text(service_cleanup_files(s.nova, "pw")[PLAN_FILE])
    cleanup = script()
    monkeypatch.setattr(cleanup, "CONFIG_DIR", str(tmp_path))
    versions: list[str] = []
    monkeypatch.setattr(cleanup, "compute_api", lambda microversion: versions.append(microversion) or api)
    cleanup.main()  # a failed call raises: main() has no other way to fail
    return versions


def test_the_script_deletes_the_stale_records_by_id_and_converges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    s = settings(cellTemplates={"cell0": {}, "cell1": {"conductorServiceTemplate": {"replicas": 2}}})
    api = FakeComputeAPI(UPSTREAM_RECORDS)
    assert run_script(tmp_path, monkeypatch, s, api) == ["2.53"]
    assert api.calls == [
        ("GET", "/os-services", {"binary": "nova-conductor"}),
        ("DELETE", "/os-services/8", None),
        ("GET", "/os-services", {"binary": "nova-scheduler"}),
        ("DELETE", "/os-services/3", None),
    ]
    out = capsys.readouterr().out
    assert "deleted nova-scheduler nova-scheduler-1 (down, 3)" in out
    assert "nova-conductor: kept nova-cell0-conductor-0, nova-cell1-conductor-0, nova-cell1-conductor-1" in out
    # the computes' records are never listed, so never touched
    assert {r["id"] for r in api.records} == {"1", "2", "4", "5", "6", "7"}
    # a second run finds nothing to delete
    api.calls.clear()
    run_script(tmp_path, monkeypatch, s, api)
    assert [c for c in api.calls if c[0] == "DELETE"] == []


def test_the_job_runs_again_when_replicas_or_cells_change_and_only_then() -> None:
    """The Job carries the hash of its files: a new hash replaces it, and it runs again."""
    from components.render import config_hash

    def job_hash(**nova: Any) -> str:
        return config_hash(service_cleanup_files(settings(**nova).nova, "pw"))

    base = job_hash()
    assert job_hash(schedulerServiceTemplate={"replicas": 2}) != base
    assert job_hash(cellTemplates={"cell0": {}, "cell1": {"conductorServiceTemplate": {"replicas": 0}}}) != base
    assert job_hash(cellTemplates={"cell0": {}}) != base  # cell1 dropped
    # what does not change which pods run leaves the Job alone
    assert job_hash(schedulerServiceTemplate={"customServiceConfig": "[DEFAULT]\ndebug = false\n"}) == base
    assert job_hash(apiServiceTemplate={"replicas": 3}, metadataServiceTemplate={"replicas": 2}) == base
