"""What `pulumi preview --json` and `pulumi up --json` report, read into steps.

Both print the engine's events one JSON object per line (preview with
PULUMI_ENABLE_STREAMING_JSON_PREVIEW set); a preview without it prints one document
with `steps` and `diagnostics`, which is read too. Secrets arrive as "[secret]" (the CLI
masks them unless --show-secrets); nothing here prints a property's value anyway, only
names: of resources, inputs and the files a run lays out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

RUN_TYPE = "pulumi-python:dynamic/ansible:PlaybookRun"
# the type of a run recorded before runs were named for what they are (docs/ansible-runs.md)
OLD_RUN_TYPE = "pulumi-python:dynamic:Resource"
STACK_TYPE = "pulumi:pulumi:Stack"
CHANGES = ("create", "update", "replace", "create-replacement", "delete", "delete-replaced", "import")


@dataclass(frozen=True)
class Run:
    """A PlaybookRun: the service `service` of node `node` of node set `node_set`."""

    node_set: str
    node: str
    service: str
    cell: str | None


@dataclass
class Step:
    """One resource's step: what the engine does to it, and how that went."""

    urn: str
    type: str
    op: str
    parent: str | None = None
    run: Run | None = None
    inputs_changed: list[str] = field(default_factory=list)
    files_changed: list[str] = field(default_factory=list)
    outputs: Mapping[str, Any] = field(default_factory=dict)
    done: bool = False
    failed: bool = False

    @property
    def name(self) -> str:
        return self.urn.rsplit("::", 1)[-1]

    @property
    def short_type(self) -> str:
        return self.type.rsplit(":", 1)[-1]

    @property
    def changes(self) -> bool:
        return self.op in CHANGES


@dataclass
class Report:
    """Every step of one preview or up, in the order the engine started them, and what it said."""

    steps: dict[str, Step] = field(default_factory=dict)
    errors: list[tuple[str | None, str]] = field(default_factory=list)  # (urn, message)
    warnings: list[tuple[str | None, str]] = field(default_factory=list)
    policy: list[str] = field(default_factory=list)  # violations, each a line
    policy_packs: dict[str, str] = field(default_factory=dict)
    result: str | None = None  # "succeeded", "failed", ...; None: the engine never got to its end
    outputs_added: list[str] = field(default_factory=list)  # stack outputs the operation adds
    outputs_removed: list[str] = field(default_factory=list)

    @property
    def runs(self) -> list[Step]:
        return [s for s in self.steps.values() if s.run is not None]

    @property
    def changing(self) -> list[Step]:
        return [s for s in self.steps.values() if s.changes]

    @property
    def nothing_to_change(self) -> bool:
        return not self.changing and not self.outputs_added and not self.outputs_removed


def _state(meta: Mapping[str, Any], which: str) -> Mapping[str, Any]:
    return meta.get(which) or {}


def _name_of(urn: str | None) -> str | None:
    return urn.rsplit("::", 1)[-1] if urn else None


def run_of(urn: str, type_: str, parent: str | None, inputs: Mapping[str, Any]) -> Run | None:
    """The node set, node and service of a PlaybookRun, from its inputs (`node_set`, `host.name`;
    its name is `<node>-<service>`), or None for any other resource."""
    if type_ not in (RUN_TYPE, OLD_RUN_TYPE) or not isinstance(inputs.get("host"), Mapping):
        return None
    node = str(inputs["host"].get("name") or "")
    name = _name_of(urn) or ""
    if not node or not name.startswith(f"{node}-"):
        return None
    pinned = inputs.get("pinned")
    cell = pinned.get("cell") if isinstance(pinned, Mapping) else None
    return Run(node_set=str(inputs.get("node_set") or _name_of(parent) or ""), node=node,
               service=name[len(node) + 1:], cell=cell if isinstance(cell, str) else None)


def _changed_keys(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    # __provider is the provider's pickled class; state_urn names where the state lives
    return sorted(k for k in set(old) | set(new)
                  if not k.startswith("__") and k != "state_urn" and old.get(k) != new.get(k))


def _changed_files(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The names of the public files a run lays out that are new, changed or gone."""
    before, after = old.get("public_files"), new.get("public_files")
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return []
    return sorted(f for f in set(before) | set(after) if before.get(f) != after.get(f))


def _step(meta: Mapping[str, Any]) -> Step:
    old, new = _state(meta, "old"), _state(meta, "new")
    state = new or old
    urn, type_ = str(meta.get("urn")), str(meta.get("type"))
    old_in, new_in = old.get("inputs") or {}, new.get("inputs") or {}
    step = Step(urn=urn, type=type_, op=str(meta.get("op")), parent=state.get("parent"),
                run=run_of(urn, type_, state.get("parent"), new_in or old_in))
    if old and new:
        step.inputs_changed = [str(k) for k in meta.get("diffs") or []] or _changed_keys(old_in, new_in)
        step.files_changed = _changed_files(old_in, new_in)
    return step


def _record(report: Report, meta: Mapping[str, Any], *, done: bool) -> None:
    step = _step(meta)
    known = report.steps.get(step.urn)
    if known is None:
        report.steps[step.urn] = known = step
    if done:
        known.done = True
        known.op = step.op if step.op != "same" or not known.changes else known.op
        known.outputs = _state(meta, "new").get("outputs") or {}
        if step.type == STACK_TYPE:
            before = set(_state(meta, "old").get("outputs") or {})
            after = set(known.outputs)
            report.outputs_added, report.outputs_removed = sorted(after - before), sorted(before - after)


def _diagnostic(report: Report, event: Mapping[str, Any]) -> None:
    severity = event.get("severity")
    message = str(event.get("message") or "").strip()  # its prefix is its severity, said again below
    if event.get("ephemeral") or not message:
        return
    if severity == "error":
        report.errors.append((event.get("urn"), message))
    elif severity == "warning":
        report.warnings.append((event.get("urn"), message))


def _policy(report: Report, event: Mapping[str, Any]) -> None:
    where = _name_of(event.get("resourceUrn")) or "the stack"
    message = " ".join(str(event.get("message") or "").split())
    report.policy.append(f"[{event.get('enforcementLevel', '?')}] {event.get('policyPackName')}/"
                         f"{event.get('policyName')} on {where}: {message}")


def read(text: str) -> Report:
    """The report of an operation from what the CLI printed: a stream of events, one per line,
    or the single document of a preview without streaming."""
    stripped = text.lstrip()
    if stripped.startswith("{") and not stripped.startswith('{"sequence"'):
        try:
            document = json.loads(text)
        except ValueError:
            document = None
        if isinstance(document, dict) and ("steps" in document or "changeSummary" in document):
            return _digest(document)
    report = Report()
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # what is not an event (a plugin's own line): nothing to read in it
        if not isinstance(event, dict):
            continue
        if "resourcePreEvent" in event:
            _record(report, event["resourcePreEvent"]["metadata"], done=False)
        elif "resOutputsEvent" in event:
            _record(report, event["resOutputsEvent"]["metadata"], done=True)
        elif "resOpFailedEvent" in event:
            _record(report, event["resOpFailedEvent"]["metadata"], done=False)
            report.steps[str(event["resOpFailedEvent"]["metadata"].get("urn"))].failed = True
        elif "diagnosticEvent" in event:
            _diagnostic(report, event["diagnosticEvent"])
        elif "policyEvent" in event:
            _policy(report, event["policyEvent"])
        elif "summaryEvent" in event:
            summary = event["summaryEvent"]
            report.result = summary.get("result") or "succeeded"
            report.policy_packs = {k.split("|", 1)[0]: v for k, v in (summary.get("PolicyPacks") or {}).items()}
    for urn, _ in report.errors:
        if urn in report.steps and not report.steps[urn].done:
            report.steps[urn].failed = True
    return report


def _digest(document: Mapping[str, Any]) -> Report:
    """`pulumi preview --json` without streaming: its steps and diagnostics (it drops policy
    events)."""
    report = Report(result="succeeded")
    for raw in document.get("steps") or []:
        meta = {"op": raw.get("op"), "urn": raw.get("urn"), "diffs": raw.get("diffReasons"),
                "type": (raw.get("newState") or raw.get("oldState") or {}).get("type", ""),
                "old": raw.get("oldState"), "new": raw.get("newState")}
        _record(report, meta, done=False)
    for diagnostic in document.get("diagnostics") or []:
        _diagnostic(report, diagnostic)
    if report.errors:
        report.result = "failed"
    return report
