"""The bench's own parts (tools/bench): its stack configs are valid stacks, its
parsers read what the CLI prints, its report keeps what it did not measure.
No timing is asserted anywhere: the bench measures, tests never do."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.ansible_runner import playbook, runguard
from components.ansible_runner.failures import PlaybookError
from components.stackconfig import load
from tests.unit.runlock import lock_is_free
from tools.bench import live, measure, offline, report, stack, workspace
from tools.bench.measure import run

ROOT = Path(__file__).resolve().parents[2]


def _with_passwords(config: dict) -> dict:
    for path, value in stack.secret_settings().items():
        *parents, last = path.removeprefix("openstack-nova:").split(".")
        target = config
        for key in parents:
            target = target.setdefault(key, {})
        target[last] = value
    return config


def test_made_up_nodes_are_distinct_and_dealt_to_three_cells() -> None:
    nodes = stack.bench_nodes(600)
    assert len({n.name for n in nodes}) == len({n.address for n in nodes}) == 600
    assert [n.cell for n in nodes[:4]] == ["cell1", "cell2", "cell3", "cell1"]
    assert all(not n.address.endswith((".0", ".255")) for n in nodes)
    assert {n.node_set for n in nodes} == {"edpm-cell1", "edpm-cell2", "edpm-cell3"}


def test_the_made_up_stack_is_a_valid_stack(tmp_path: Path) -> None:
    nodes = stack.bench_nodes(30)
    (tmp_path / "known_hosts").write_text(stack.known_hosts(nodes))
    (tmp_path / "key").write_text("k\n")
    config = stack.bench_config(30, render_dir=str(tmp_path / "r"), key_file=str(tmp_path / "key"),
                                known_hosts_file=str(tmp_path / "known_hosts"))
    settings = load(_with_passwords(config), secret_keys=["nova"])
    assert settings.kubernetes.mode.value == "render"
    assert [c.name for c in settings.nova.cells] == ["cell0", "cell1", "cell2", "cell3"]
    assert {s.name: len(s.nodes) for s in settings.dataplane.node_sets} == {
        "edpm-cell1": 10, "edpm-cell2": 10, "edpm-cell3": 10}
    # every node's key is found (ssh-known-hosts would fail the preview otherwise)
    assert all(n.host_keys for n in settings.dataplane.nodes)
    snippets = {n.custom_service_config.nova for n in settings.dataplane.nodes}
    assert len(snippets) == len(stack.CPU_MODELS)


def test_the_bench_stack_with_no_nodes_is_valid(tmp_path: Path) -> None:
    config = stack.bench_config(0, render_dir=str(tmp_path), key_file="k", known_hosts_file="kh")
    assert load(_with_passwords(config), secret_keys=["nova"]).dataplane.node_sets == ()


def test_dev_stack_with_test_nodes() -> None:
    dev = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())
    before = json.dumps(dev, sort_keys=True)
    eight = stack.with_test_nodes(dev, 8, changed="[DEFAULT]\ndebug = true\n")
    assert json.dumps(dev, sort_keys=True) == before  # the dev document is left alone
    nodes = eight["config"]["openstack-nova:dataplane"]["nodeSets"]["edpm-compute"]["nodes"]
    assert list(nodes) == [f"edpm-compute-{i}" for i in range(8)]
    assert nodes["edpm-compute-7"]["ansibleHost"] == "192.168.122.107"
    # the dev stack's own two nodes keep their cells (a deployed node's cell cannot change)
    assert "cell" not in nodes["edpm-compute-0"] and nodes["edpm-compute-1"]["cell"] == "cell2"
    assert [n for n, v in nodes.items() if "customServiceConfig" in v] == ["edpm-compute-0"]
    assert eight["encryptionsalt"] == dev["encryptionsalt"]
    none = stack.with_test_nodes(dev, 0)
    assert none["config"]["openstack-nova:dataplane"]["nodeSets"]["edpm-compute"]["nodes"] == {}


def test_resource_counts_come_from_the_summary() -> None:
    preview = "Previewing update (bench):\n...\nResources:\n    + 2577 to create\n\n"
    assert offline.resource_count(preview) == 2577
    up = "Resources:\n    ~ 1 updated\n    1076 unchanged\n\nDuration: 30s\n"
    assert offline.resource_count(up) == 1077
    assert offline.resource_count("error: no summary") == 0


def test_playbook_runs_by_operation_from_up_json() -> None:
    def event(op: str, name: str, typ: str = live.PLAYBOOK_RUN) -> str:
        urn = f"urn:pulumi:dev::openstack-nova::openstack-nova:dataplane:EdpmNodeSet${typ}::{name}"
        return json.dumps({"resOutputsEvent": {"metadata": {"op": op, "type": typ, "urn": urn}}})

    output = "\n".join([event("same", "n0-marker"), event("update", "n0-nova"), "not json",
                        event("create", "ns", "kubernetes:core/v1:Namespace"), event("create", "n1-nova")])
    assert live.steps(output) == {"same": ["n0-marker"], "update": ["n0-nova"], "create": ["n1-nova"]}


def _point(label: str, nodes: int, seconds: float, resources: int = 0) -> offline.Point:
    return offline.Point(label, nodes, resources=resources, seconds=[seconds], peak_mib=[100.0],
                         cpu=[{"program": 1.0, "engine": 0.5}])


def test_preview_section_says_which_targets_are_met() -> None:
    program = [_point("0", 0, 4.0, 71), _point("50", 50, 4.5, 327), _point("500", 500, 9.0, 2577)]
    floor = [_point("f0", 0, 2.0), _point("f50", 50, 2.5), _point("f500", 500, 5.0)]
    text = report.preview_section(program, floor)
    assert "| 500 | 2577 | 9.0 s | 10 ms | 100 MiB | 1.0 / 0.5 / 0.0 | 5.0 s | 6 ms | 1.80 |" in text
    assert "- met: 10 ms per node above the 0-node preview at 500 nodes (target: at most 12 ms)" in text
    assert "- met: the per-node cost at 500 nodes is 1.00x the one at 50" in text
    assert "- met: the 500-node preview takes 1.80x the engine's floor" in text
    # CPU per node above 0 nodes by part, the program's and the floor's: 1.0 s and 0.5 s at every size
    assert "| 500 | 0 / 0 / 0 | 0 / 0 / 0 |" in text
    busy = offline.Point("500", 500, resources=2577, seconds=[9.0], peak_mib=[100.0],
                         cpu=[{"program": 11.0, "engine": 5.5, "dynamic provider": 2.0}])
    assert "| 500 | 20 / 10 / 4 | 0 / 0 / 0 |" in report.preview_section([program[0], busy], floor)
    slow = [program[0], program[1], _point("500", 500, 40.0, 2577)]
    assert "- MISSED: 72 ms per node" in report.preview_section(slow, floor)


def test_runs_at_once_from_when_each_ran() -> None:
    assert offline.at_once([]) == 0
    assert offline.at_once([(0.0, 2.0), (2.0, 4.0)]) == 1  # one ends as the next starts
    assert offline.at_once([(0.0, 2.0), (0.5, 2.5), (1.0, 3.0), (2.5, 4.0)]) == 3


def test_probe_times_come_from_the_exported_state() -> None:
    state = {"deployment": {"resources": [
        {"type": "pulumi:pulumi:Stack", "outputs": {}},
        {"type": "pulumi:providers:pulumi-python", "outputs": {}},
        {"type": "pulumi-python:dynamic:Resource", "outputs": {"start": 10.5, "end": 12.5, "peak": 1}},
        {"type": "pulumi-python:dynamic:Resource", "outputs": {"start": 11, "end": 13}}]}}
    assert offline.probe_intervals(state) == [(10.5, 12.5), (11.0, 13.0)]


def test_provider_threads_section_names_the_default_pool() -> None:
    results = [offline.ProviderThreads("4", 12, 4, 6.0, _point("4", 12, 9.0)),
               offline.ProviderThreads("default", 12, 12, 2.1, _point("default", 12, 5.0))]
    text = report.provider_threads_section(results, 2.0, 16)
    assert "`pulumi up --parallel 48` of 12 dynamic resources" in text
    assert "| 4 | 12 | 4 | 6.0 s | 9.0 s |" in text
    assert "| unset (default: 16) | 12 | 12 | 2.1 s | 5.0 s |" in text


def test_the_document_keeps_sections_that_were_not_measured() -> None:
    machine = report.Machine("CPU", 2, 24.0, (1.0, 1.0, 1.0), "today", "abc", "v3")
    old = report.merge("# Benchmarks\n\nhand-written\n", {
        "preview": report.section("preview", machine, "old preview\n"),
        "live": report.section("live", machine, "live results\n")})
    new = report.merge(old, {"preview": report.section("preview", machine, "new preview\n")})
    assert "new preview" in new and "old preview" not in new
    assert "live results" in new and new.startswith("# Benchmarks\n\nhand-written\n")
    assert new.index("bench:preview begin") < new.index("bench:live begin")
    assert report.merge(new, {}) == new


def test_measure_runs_a_command_and_reports_its_output(tmp_path: Path) -> None:
    sample = run([sys.executable, "-c", "print('hello')"], {"PATH": "/usr/bin:/bin"}, tmp_path)
    assert (sample.returncode, sample.output) == (0, "hello\n")
    assert sample.seconds > 0


def test_a_shim_venv_runs_the_projects_packages_with_its_own_scripts(tmp_path: Path) -> None:
    venv = workspace.shim_venv(tmp_path / "venv", scripts={"ansible-playbook": offline.STUB_ANSIBLE})
    probe = "import sys, pulumi; print(sys.prefix)"
    prefix = subprocess.run([str(venv / "bin" / "python"), "-c", probe], capture_output=True, text=True,
                            check=True).stdout.strip()
    # PlaybookRun finds ansible-playbook next to sys.executable: the stand-in
    assert Path(prefix) == venv
    events = tmp_path / "events.jsonl"
    subprocess.run([str(venv / "bin" / "ansible-playbook"), "nova.yml"], capture_output=True, text=True, check=True,
                   env={**os.environ, "OPENSTACK_NOVA_EVENTS": str(events)})
    assert json.loads(events.read_text())["hosts"]["node"] == {"ok": 1, "changed": 0}
    assert (venv / "ansible-calls").read_text() == "nova.yml\n"


@pytest.fixture()
def stand_ins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The bench's venv of stand-ins, used as the dynamic-provider plugin uses the program's venv:
    its bin/ first on PATH, its python the interpreter (PlaybookRun finds ansible-playbook beside it)."""
    venv = offline.stand_in_venv(tmp_path / "venv")
    monkeypatch.setenv("PATH", f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(sys, "executable", str(venv / "bin" / "python"))
    monkeypatch.delenv("OPENSTACK_NOVA_ANSIBLE_LOG_DIR", raising=False)
    yield venv


def made_up_run(tmp_path: Path, *, port: int = 22, known: bool = True, **host_vars: Any) -> dict[str, Any]:
    """PlaybookRun's inputs for the nova playbook on the bench's first made-up node."""
    node = stack.bench_nodes(1)[0]
    known_hosts = stack.known_hosts([node]) if known else ""
    if port != 22:
        known_hosts = known_hosts.replace(node.address, f"[{node.address}]:{port}")
    return {
        "playbook": "nova.yml", "host": {"name": node.name, "address": node.address, "port": port, "user": "root"},
        "host_vars": dict(host_vars), "ssh_private_key": "not a key: no Ansible run reads it\n",
        "known_hosts": known_hosts, "files": {"nova.conf": "[DEFAULT]\n"}, "public_files": {}, "vars": {},
        "timeouts": {"connect": 5, "task": 60, "run": 60, "lock": 1},
    }


def stand_in_lock(venv: Path, name: str) -> Path:
    """Where the stand-in node `name` keeps its run lock."""
    return venv / "nodes" / name / runguard.LOCK_PATH.lstrip("/")


@pytest.mark.parametrize(("port", "host_vars", "name"), [
    (22, {}, "10.0.0.1"),
    (2222, {"ansible_user": "cloud-user", "ansible_become": True}, "[10.0.0.1]:2222")])
def test_a_made_up_nodes_run_takes_its_lock_through_the_stand_in_ssh(
        stand_ins: Path, tmp_path: Path, port: int, host_vars: dict[str, Any], name: str) -> None:
    """The path PlaybookRun takes in the bench's items 3 and 5: the run guard, its ssh to the
    node (the stand-in, running the guard's own lock script) and the stand-in playbook."""
    result = playbook.run_playbook(made_up_run(tmp_path, port=port, **host_vars))
    assert result["last_run"] == "nova.yml on edpm-cell1-0: ok=1 changed=0" and result["in_sync"]
    assert offline.Calls.of(stand_ins) == offline.Calls(playbooks=1, locks=1)
    assert (stand_ins / "ssh-calls").read_text() == f"{name}\n"
    lock = stand_in_lock(stand_ins, name)
    # the guard's record of the run, written by the lock script on the node, and the node free again
    assert lock.read_text().startswith("nova.yml, run by pid ")
    assert lock_is_free(lock)


def test_the_stand_in_ssh_refuses_a_node_it_has_no_key_for(stand_ins: Path, tmp_path: Path) -> None:
    with pytest.raises(PlaybookError, match=r"has no host key for 10\.0\.0\.1, so edpm-cell1-0 .* cannot be trusted"):
        playbook.run_playbook(made_up_run(tmp_path, known=False))
    assert offline.Calls.of(stand_ins) == offline.Calls(playbooks=0, locks=1)


def test_a_stand_in_node_is_busy_while_its_lock_is_held(stand_ins: Path, tmp_path: Path) -> None:
    lock = stand_in_lock(stand_ins, "10.0.0.1")
    lock.parent.mkdir(parents=True)
    lock.write_text("another run\n")
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(PlaybookError, match=r"edpm-cell1-0 is busy: .*: another run"):
            playbook.run_playbook(made_up_run(tmp_path))
    assert offline.Calls.of(stand_ins) == offline.Calls(playbooks=0, locks=1)


def test_every_stand_in_playbook_run_must_have_taken_its_lock() -> None:
    assert offline.guarded(offline.Calls(5, 5), "deploy") == offline.Calls(5, 5)
    with pytest.raises(offline.BenchError, match="5 stand-in playbook runs, but 0 connections"):
        offline.guarded(offline.Calls(7, 2) - offline.Calls(2, 2), "deploy")


def test_the_no_change_section_counts_playbooks_and_locks() -> None:
    def result(locks: int) -> offline.NoChangeUp:
        return offline.NoChangeUp(nodes=10, deploy_calls=50, up_calls=0, preview=_point("p", 10, 4.0),
                                  up=_point("u", 10, 6.0, 77), up_locks=locks)

    text = report.no_change_section(result(0))
    assert "| 10 | 4.0 s | 6.0 s | 1.50 | 0 | 0 | 100 MiB |" in text
    assert "- met: 0 playbooks ran, 0 run locks were taken (target: none)" in text
    assert "- MISSED: 0 playbooks ran, 3 run locks were taken" in report.no_change_section(result(3))


@pytest.mark.parametrize("argv", [["--items", "preview,bogus"]])
def test_unknown_items_are_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from tools.bench.__main__ import parse

    with pytest.raises(SystemExit):
        parse(argv)
    assert "unknown item(s) bogus" in capsys.readouterr().err


def test_machine_cpu_counts_every_state_but_idle_and_iowait() -> None:
    tick = os.sysconf("SC_CLK_TCK")
    # user nice system idle iowait irq softirq steal guest guest_nice
    stat = f"cpu  {tick * 10} {tick} {tick * 2} {tick * 500} {tick * 7} 0 {tick} {tick} 0 0\ncpu0 1 2 3 4 5 6 7 8\n"
    assert measure.machine_busy_seconds(stat) == 15.0
    assert measure.machine_busy_seconds() > 0


def test_live_section_says_how_busy_the_machine_was_and_what_that_allows() -> None:
    def round_(nodes: int, deploy: float, cpu: float, change: float) -> live.Round:
        return live.Round(nodes, deploy_seconds=[deploy], deployed_runs=[5 * nodes], deploy_cpu=[cpu],
                          change_seconds=[change], changed_runs=[["n0-nova"]])

    text = report.live_section([round_(1, 80.0, 100.0, 35.0), round_(8, 400.0, 780.0, 39.0)], 2)
    assert "| 1 | 80.0 s | 1.00 | 5 | 100.0 s | 1.25 | 35.0 s | 1.00 | n0-nova |" in text
    assert "| 8 | 400.0 s | 5.00 | 40 | 97.5 s | 1.95 | 39.0 s | 1.11 | n0-nova |" in text
    assert "- met: up(8)/up(1) = 1.11 for a one-node change" in text
    assert "- MISSED: deploy(8)/deploy(1) = 5.00 (target: at most 2.5)" in text
    # 780 CPU seconds over 2 cores is 390 s: 4.88x the one-node deploy
    assert "spread over all 2 cores, takes 4.88x deploy(1)" in text


def test_the_committed_results_hold_every_item_and_the_readme_links_them() -> None:
    document = (workspace.ROOT / "docs" / "benchmarks.md").read_text()
    for key in report.SECTIONS:
        assert f"<!-- bench:{key} begin -->" in document and f"<!-- bench:{key} end -->" in document, key
    assert "Not measured yet" not in document
    assert "(docs/benchmarks.md)" in (workspace.ROOT / "README.md").read_text()
