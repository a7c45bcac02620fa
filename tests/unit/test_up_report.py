"""What `make up` prints around `pulumi up` (tools/up, devenv/apply.sh, components/outputs.py).

data/up/preview-one-node.jsonl is what `PULUMI_ENABLE_STREAMING_JSON_PREVIEW=true pulumi
preview --json --policy-pack policy -s dev` printed for the dev stack (deployed at 622ee90)
with one node's nova snippet changed; kept: the resource, policy and summary events, of the
inputs only those a run's summary reads (the public files' contents as hashes).
data/up/outputs-before.json is `pulumi stack output --json -s dev` of that stack, before it had
`nodes` and `endpoints`. An up prints the same events (`pulumi up --json`): the ups here are
that preview with its outcome changed.
"""

from __future__ import annotations

import copy
import json
import os
import stat
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from components import outputs as stack_outputs
from components.stackconfig import load
from tests.unit import ROOT
from tests.unit.test_settings import ALL_SECRET, good_config
from tools.up.__main__ import NOTHING_TO_CHANGE, main
from tools.up.events import read
from tools.up.summary import summary
from tools.up.table import report_text, rows

DATA = Path(__file__).parent / "data" / "up"
PREVIEW = DATA / "preview-one-node.jsonl"
RUN = "urn:pulumi:dev::openstack-nova::openstack-nova:dataplane:EdpmNodeSet$pulumi-python:dynamic/ansible:PlaybookRun::"
NOVA_0, NOVA_1 = RUN + "edpm-compute-0-nova", RUN + "edpm-compute-1-nova"
FAILURE = ("ansible-playbook nova.yml failed on edpm-compute-1 in play 'Deploy nova-compute', "
           "task 'edpm_nova : Check the config' (exit 2): non-zero return code")


def events() -> list[dict[str, Any]]:
    return [json.loads(line) for line in PREVIEW.read_text().splitlines()]


def lines(evs: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(e) + "\n" for e in evs)


def outputs_after() -> dict[str, Any]:
    """The dev stack's outputs once an up has exported `nodes` and `endpoints` (what
    components/outputs.py computes for the dev stack's config)."""
    found = json.loads((DATA / "outputs-before.json").read_text())
    services = ["ssh-known-hosts", "libvirt", "nova", "neutron-metadata"]
    found["nodes"] = {"edpm-compute": {
        "edpm-compute-0": {"cell": "cell1", "hostName": "edpm-compute-0", "services": services},
        "edpm-compute-1": {"cell": "cell2", "hostName": "edpm-compute-1", "services": services}}}
    found["endpoints"] = {
        "keystone": "http://keystone-public.openstack.svc:5000",
        "compute": "http://nova-public.openstack.svc:8774/v2.1",
        "novncproxy": {c: f"http://nova-novncproxy-{c}-public.openstack.svc:6080/vnc_lite.html"
                       for c in ("cell1", "cell2")}}
    return found


def up_of(evs: list[dict[str, Any]], *, changed: dict[str, int], failed: dict[str, str] | None = None,
          updated: Iterable[str] = ()) -> list[dict[str, Any]]:
    """An up's events from the preview's: the runs in `updated` go too; each run of `changed`
    ends with that many changed tasks; each of `failed` fails with its message (no outputs)."""
    failed = failed or {}
    out = []
    for event in copy.deepcopy(evs):
        for kind in ("resourcePreEvent", "resOutputsEvent"):
            meta = event.get(kind, {}).get("metadata")
            if meta and meta["urn"] in updated:
                meta["op"] = "update"
            if meta and meta["urn"] in changed and kind == "resOutputsEvent":
                meta["new"]["outputs"]["changed"] = changed[meta["urn"]]
            if meta and meta["urn"] in failed and kind == "resOutputsEvent":
                event = {"resOpFailedEvent": {"metadata": meta, "status": 1, "steps": 1}}
                out.append({"diagnosticEvent": {"urn": meta["urn"], "prefix": "error: ",
                                                "message": failed[meta["urn"]], "severity": "error"}})
        if "summaryEvent" in event:
            event["summaryEvent"].update(isPreview=False, result="failed" if failed else "succeeded")
        out.append(event)
    return out


def test_the_summary_names_the_node_service_and_file_that_change() -> None:
    text = summary(read(PREVIEW.read_text()), "dev")
    assert text.splitlines() == [
        "Preview of stack dev: 1 to update (73 unchanged)",
        "EDPM nodes:",
        "  edpm-compute / edpm-compute-0 (cell1):",
        "    nova: ~ update (files 26-nova-extra-host.conf)",
        "  edpm-compute / edpm-compute-1 (cell2): unchanged",
        "Policy pack openstack-nova 0.1.0: no violations",
    ]


def test_the_summary_groups_the_rest_by_component_and_shows_new_outputs() -> None:
    evs = events()
    for event in evs:
        meta = event.get("resourcePreEvent", {}).get("metadata")
        if meta and meta["urn"].endswith("StatefulSet::nova-api"):
            meta["op"] = "update"
            meta["diffs"] = ["spec"]
        meta = event.get("resOutputsEvent", {}).get("metadata")
        if meta and meta["type"] == "pulumi:pulumi:Stack":
            meta["new"]["outputs"]["endpoints"] = {"keystone": "http://k"}
    report = read(lines(evs))
    text = summary(report, "dev")
    assert "Preview of stack dev: 2 to update (72 unchanged)" in text
    assert "  NovaControlPlane nova:\n    StatefulSet nova-api: ~ update (spec)\n" in text
    assert "Stack outputs: + endpoints" in text
    assert not report.nothing_to_change


def test_a_preview_that_changes_nothing_says_so(tmp_path: Path) -> None:
    evs = [e for e in events() if not any(
        e.get(k, {}).get("metadata", {}).get("urn") == NOVA_0 for k in ("resourcePreEvent", "resOutputsEvent"))]
    assert read(lines(evs)).nothing_to_change
    file = tmp_path / "preview.json"
    file.write_text(lines(evs))
    assert main(["preview", str(file)]) == NOTHING_TO_CHANGE
    assert main(["preview", str(PREVIEW)]) == 0


def test_no_value_of_any_input_reaches_the_summary() -> None:
    """Even a preview taken with --show-secrets: the summary holds names, never values."""
    evs = events()
    sentinel = "s3cr3t-value-never-printed"
    for event in evs:
        for kind in ("resourcePreEvent", "resOutputsEvent"):
            meta = event.get(kind, {}).get("metadata")
            for state in (meta or {}).get("old") or {}, (meta or {}).get("new") or {}:
                inputs = state.get("inputs") or {}
                for key in list(inputs):
                    if key not in ("host", "node_set", "pinned", "public_files"):
                        inputs[key] = sentinel
                if "public_files" in inputs:
                    inputs["public_files"] = {f: v + sentinel for f, v in inputs["public_files"].items()}
    text = summary(read(lines(evs)), "dev")
    assert "nova: ~ update (files 26-nova-extra-host.conf" in text
    assert sentinel not in text
    # the recorded preview itself: the CLI masked every secret input of the runs
    for event in events():
        meta = event.get("resourcePreEvent", {}).get("metadata") or {}
        for key in ("files", "ssh_private_key"):
            if key in ((meta.get("new") or {}).get("inputs") or {}):
                assert meta["new"]["inputs"][key]["ciphertext"] == "[secret]"


def test_policy_violations_and_errors_are_listed_and_fail_the_preview(tmp_path: Path) -> None:
    evs = events()
    evs.insert(-2, {"policyEvent": {
        "resourceUrn": "urn:pulumi:dev::openstack-nova::kubernetes:core/v1:ConfigMap::nova-extra",
        "message": "Config files that set a password ... are kept in Secrets.\nnova.conf sets [database] connection",
        "policyName": "no-credentials-in-configmaps", "policyPackName": "openstack-nova",
        "policyPackVersion": "0.1.0", "enforcementLevel": "mandatory"}})
    evs.insert(-2, {"diagnosticEvent": {"prefix": "error: ", "message": "preview failed\n", "severity": "error"}})
    evs[-2]["summaryEvent"]["result"] = "failed"
    report = read(lines(evs))
    text = summary(report, "dev")
    assert ("  [mandatory] openstack-nova/no-credentials-in-configmaps on nova-extra: Config files that set a "
            "password ... are kept in Secrets. nova.conf sets [database] connection") in text
    assert "error: preview failed" in text and "error: error:" not in text
    file = tmp_path / "preview.json"
    file.write_text(lines(evs))
    assert main(["preview", str(file)]) == 1


def test_the_preview_document_without_streaming_is_read_too() -> None:
    steps = [{"op": "update", "urn": NOVA_0,
              "oldState": {"type": "pulumi-python:dynamic/ansible:PlaybookRun", "parent": "p::edpm-compute",
                           "inputs": {"host": {"name": "edpm-compute-0"}, "node_set": "edpm-compute",
                                      "pinned": {"cell": "cell1"}, "public_files": {"a.conf": "1"}}},
              "newState": {"type": "pulumi-python:dynamic/ansible:PlaybookRun", "parent": "p::edpm-compute",
                           "inputs": {"host": {"name": "edpm-compute-0"}, "node_set": "edpm-compute",
                                      "pinned": {"cell": "cell1"}, "public_files": {"a.conf": "2"}}}}]
    text = summary(read(json.dumps({"steps": steps, "changeSummary": {"update": 1}}, indent=4)), "dev")
    assert "  edpm-compute / edpm-compute-0 (cell1):\n    nova: ~ update (files a.conf)\n" in text


def test_the_table_after_an_up_shows_each_service_of_each_node() -> None:
    up = read(lines(up_of(events(), changed={NOVA_0: 2})))
    header, table = rows(outputs_after(), up)
    assert header == ["NODE SET", "NODE", "CELL", "ssh-known-hosts", "libvirt", "nova", "neutron-metadata", "IN SYNC"]
    assert table == [
        ["edpm-compute", "edpm-compute-0", "cell1", "unchanged", "unchanged", "changed", "unchanged", "yes"],
        ["edpm-compute", "edpm-compute-1", "cell2", "unchanged", "unchanged", "unchanged", "unchanged", "yes"],
    ]
    text = report_text(outputs_after(), up)
    assert text.endswith(
        "\nKeystone:    http://keystone-public.openstack.svc:5000\n"
        "nova API:    http://nova-public.openstack.svc:8774/v2.1\n"
        "noVNC cell1: http://nova-novncproxy-cell1-public.openstack.svc:6080/vnc_lite.html\n"
        "noVNC cell2: http://nova-novncproxy-cell2-public.openstack.svc:6080/vnc_lite.html\n")


def test_a_run_that_changed_nothing_on_its_node_is_unchanged() -> None:
    up = read(lines(up_of(events(), changed={NOVA_0: 0})))
    assert rows(outputs_after(), up)[1][0][5] == "unchanged"


def test_a_failed_run_is_failed_out_of_sync_and_the_error_is_printed(tmp_path: Path, capsys: Any) -> None:
    preview = up_of(events(), changed={}, updated=[NOVA_1])
    for event in preview:
        if "summaryEvent" in event:
            event["summaryEvent"]["isPreview"] = True
    # the neutron-metadata run after nova would have gone too: the up never got to it
    after = RUN + "edpm-compute-1-neutron-metadata"
    planned = up_of(preview, changed={}, updated=[after])
    up = up_of(events(), changed={NOVA_0: 1}, failed={NOVA_1: FAILURE}, updated=[NOVA_1])
    table = rows(outputs_after(), read(lines(up)), read(lines(planned)))[1]
    assert table[0][3:] == ["unchanged", "unchanged", "changed", "unchanged", "yes"]
    assert table[1][3:] == ["unchanged", "unchanged", "failed", "not reached", "no (nova, neutron-metadata)"]
    for name, evs in (("up.json", up), ("preview.json", planned)):
        (tmp_path / name).write_text(lines(evs))
    (tmp_path / "outputs.json").write_text(json.dumps(outputs_after()))
    assert main(["report", "--outputs", str(tmp_path / "outputs.json"), "--events", str(tmp_path / "up.json"),
                 "--preview", str(tmp_path / "preview.json")]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"error (edpm-compute-1-nova): {FAILURE}\nNODE SET")


def test_a_node_out_of_sync_says_which_service() -> None:
    found = outputs_after()
    found["inSync"]["edpm-compute"]["edpm-compute-1"]["libvirt"] = False
    assert rows(found, None)[1][1][-1] == "no (libvirt)"


def test_a_stack_from_before_the_nodes_output_still_gets_its_table() -> None:
    up = read(lines(up_of(events(), changed={NOVA_0: 3})))
    header, table = rows(json.loads((DATA / "outputs-before.json").read_text()), up)
    assert header[:3] == ["NODE SET", "NODE", "CELL"] and "marker" not in header
    assert table[0][:3] == ["edpm-compute", "edpm-compute-0", "cell1"]
    assert table[0][header.index("nova")] == "changed"


def test_the_stack_exports_its_endpoints_and_nodes() -> None:
    settings = load(good_config(), secret_keys=ALL_SECRET, catalog=None)
    assert stack_outputs.endpoints(settings) == {
        "keystone": "http://keystone-public.openstack.svc:5000",
        "compute": "http://nova-public.openstack.svc:8774/v2.1",
        "novncproxy": {c: f"http://nova-novncproxy-{c}-public.openstack.svc:6080/vnc_lite.html"
                       for c in ("cell1", "cell2")},
    }
    nodes = stack_outputs.nodes(settings)
    assert nodes["edpm-a"]["compute-1"]["cell"] == "cell2"
    assert nodes["edpm-b"] == {"compute-2": {"cell": "cell2", "hostName": "c2.example",
                                             "services": ["ceph-client", "nova", "motd"]}}
    assert set(nodes["edpm-a"]) == {"compute-0", "compute-1"}


# devenv/apply.sh against a `pulumi` that answers from the recordings and logs its arguments.
FAKE_PULUMI = """#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(" ".join(args) + "\\n")
data = os.environ["FAKE_DATA"]
if args[0] == "preview":
    sys.stdout.write(open(os.path.join(data, "preview.json")).read())
elif args[0] == "up":
    with open(os.environ["OPENSTACK_NOVA_PROGRESS"], "a") as progress:
        progress.write("2026-05-04T10:12:09Z edpm-compute-0 nova: started\\n")
    sys.stdout.write(open(os.path.join(data, "up.json")).read())
    sys.exit(int(os.environ.get("FAKE_UP_RC", "0")))
elif args[:2] == ["stack", "output"]:
    sys.stdout.write(open(os.path.join(data, "outputs.json")).read())
"""


def apply(tmp_path: Path, preview: list[dict[str, Any]], up: list[dict[str, Any]],
          env: dict[str, str] | None = None, stdin: Any = subprocess.DEVNULL) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "pulumi"
    fake.write_text(FAKE_PULUMI)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "preview.json").write_text(lines(preview))
    (tmp_path / "up.json").write_text(lines(up))
    (tmp_path / "outputs.json").write_text(json.dumps(outputs_after()))
    venv_bin = ROOT / ".venv" / "bin"
    environ = {"PATH": f"{bin_dir}:{venv_bin}:/usr/bin:/bin", "HOME": str(tmp_path),
               "OPENSTACK_NOVA_CACHE": str(tmp_path / "cache"), "PULUMI_PARALLEL": "4",
               "FAKE_LOG": str(tmp_path / "calls"), "FAKE_DATA": str(tmp_path), **(env or {})}
    return subprocess.run([str(ROOT / "devenv" / "apply.sh"), "dev"], capture_output=True, text=True,
                          env=environ, stdin=stdin, timeout=120, check=False)


def calls(tmp_path: Path) -> list[str]:
    return (tmp_path / "calls").read_text().splitlines()


def test_apply_shows_the_preview_then_applies_with_the_policy_pack_then_the_table(tmp_path: Path) -> None:
    done = apply(tmp_path, events(), up_of(events(), changed={NOVA_0: 2}))
    assert done.returncode == 0, done.stderr
    made = calls(tmp_path)
    assert [c.split()[0] for c in made] == ["refresh", "preview", "up", "stack"]
    assert "--policy-pack policy" in made[1] and "--policy-pack policy" in made[2]
    assert "--parallel 4" in made[2] and "--json" in made[2]
    out = done.stdout
    assert out.index("nova: ~ update (files 26-nova-extra-host.conf)") < out.index("NODE SET")
    assert "edpm-compute  edpm-compute-0  cell1  unchanged        unchanged  changed" in out
    assert "Keystone:" in out and "== pulumi up -s dev: done" in out
    assert "edpm-compute-0 nova: started" in done.stderr
    # the logs and events name every input: the owner's only
    for log in (tmp_path / "cache" / "logs").iterdir():
        assert stat.S_IMODE(log.stat().st_mode) & 0o077 == 0, log


def test_apply_with_nothing_to_change_applies_nothing(tmp_path: Path) -> None:
    evs = [e for e in events() if not any(
        e.get(k, {}).get("metadata", {}).get("urn") == NOVA_0 for k in ("resourcePreEvent", "resOutputsEvent"))]
    done = apply(tmp_path, evs, [])
    assert done.returncode == 0, done.stderr
    assert [c.split()[0] for c in calls(tmp_path)] == ["refresh", "preview", "stack"]
    assert "nothing to change in stack dev: nothing applied" in done.stdout
    assert "NODE SET" in done.stdout


def test_apply_stops_when_the_preview_fails(tmp_path: Path) -> None:
    evs = events()
    evs[-2]["summaryEvent"]["result"] = "failed"
    done = apply(tmp_path, evs, [])
    assert done.returncode == 1
    assert "the preview of stack dev failed" in done.stderr
    assert "up" not in [c.split()[0] for c in calls(tmp_path)]


def test_a_failed_up_shows_its_error_and_the_table_and_fails(tmp_path: Path) -> None:
    up = up_of(events(), changed={}, failed={NOVA_0: FAILURE})
    done = apply(tmp_path, events(), up, env={"FAKE_UP_RC": "255"})
    assert done.returncode == 1
    assert f"error (edpm-compute-0-nova): {FAILURE}" in done.stdout
    assert "edpm-compute  edpm-compute-0  cell1  unchanged        unchanged  failed" in done.stdout
    assert "pulumi up -s dev failed" in done.stderr


@pytest.mark.parametrize(("answer", "yes", "applied"), [("n\n", "", False), ("y\n", "", True), ("", "1", True)])
def test_on_a_terminal_it_asks_unless_yes(tmp_path: Path, answer: str, yes: str, applied: bool) -> None:
    controller, terminal = os.openpty()
    os.write(controller, answer.encode())
    try:
        done = apply(tmp_path, events(), up_of(events(), changed={NOVA_0: 1}), env={"YES": yes}, stdin=terminal)
    finally:
        os.close(terminal)
        os.close(controller)
    assert ("up" in [c.split()[0] for c in calls(tmp_path)]) is applied
    assert done.returncode == (0 if applied else 1), done.stderr
    if not applied:
        assert "not applied: nothing was changed" in done.stderr
