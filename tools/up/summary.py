"""The summary of a preview that `make up` prints before it asks: what changes, per node set,
node and service, then the rest of the stack per component, then the policy pack's verdict.

Names only (resources, inputs, the files a run lays out): never a value, so no secret can
show however the preview was taken.
"""

from __future__ import annotations

from collections import defaultdict

from .events import STACK_TYPE, Report, Step

_VERB = {"create": "create", "update": "update", "replace": "replace", "create-replacement": "replace",
         "delete": "delete", "delete-replaced": "replace", "import": "import"}
_SIGN = {"create": "+", "update": "~", "replace": "+-", "delete": "-", "import": "="}


def _what(step: Step) -> str:
    """`update (files 26-nova-extra-host.conf)`, `update (host_vars)`, `create`, ..."""
    verb = _VERB.get(step.op, step.op)
    detail = [f"files {', '.join(step.files_changed)}"] if step.files_changed else []
    detail += [k for k in step.inputs_changed if k not in ("public_files", "files") or not step.files_changed]
    return f"{_SIGN.get(verb, '?')} {verb}" + (f" ({'; '.join(detail)})" if detail else "")


def _component(step: Step, steps: dict[str, Step]) -> str:
    """The top-level component a resource belongs to, as `Type name` (its own, if top-level)."""
    urn = step.urn
    while True:
        parent = steps[urn].parent if urn in steps else None
        if not parent or parent not in steps or steps[parent].type == STACK_TYPE:
            break
        urn = parent
    top = steps.get(urn, step)
    return f"{top.short_type} {top.name}"


def summary(report: Report, stack: str) -> str:
    lines: list[str] = []
    counts: dict[str, int] = defaultdict(int)
    for step in report.steps.values():
        if step.type != STACK_TYPE:
            counts[_VERB.get(step.op, "unchanged") if step.changes else "unchanged"] += 1
    told = ", ".join(f"{n} to {verb}" for verb, n in sorted(counts.items()) if verb != "unchanged")
    lines.append(f"Preview of stack {stack}: {told or 'nothing to change'}"
                 f" ({counts['unchanged']} unchanged)")

    runs: dict[str, dict[str, list[Step]]] = defaultdict(lambda: defaultdict(list))
    for step in report.runs:
        assert step.run is not None
        runs[step.run.node_set][step.run.node].append(step)
    if runs:
        lines.append("EDPM nodes:")
    for node_set in sorted(runs):
        for node in sorted(runs[node_set]):
            steps = runs[node_set][node]
            cell = next((s.run.cell for s in steps if s.run and s.run.cell), None)
            where = f"  {node_set} / {node}" + (f" ({cell})" if cell else "")
            changing = [s for s in steps if s.changes]
            if not changing:
                lines.append(f"{where}: unchanged")
                continue
            lines.append(f"{where}:")
            lines += [f"    {s.run.service if s.run else s.name}: {_what(s)}" for s in changing]

    rest: dict[str, list[Step]] = defaultdict(list)
    for step in report.changing:
        if step.run is None and step.type != STACK_TYPE:
            rest[_component(step, report.steps)].append(step)
    if rest:
        lines.append("The rest of the stack:")
    for component in sorted(rest):
        lines.append(f"  {component}:")
        lines += [f"    {s.short_type} {s.name}: {_what(s)}" for s in rest[component]]
    if report.outputs_added or report.outputs_removed:
        outputs = [f"+ {o}" for o in report.outputs_added] + [f"- {o}" for o in report.outputs_removed]
        lines.append(f"Stack outputs: {', '.join(outputs)}")

    packs = ", ".join(f"{name} {version}" for name, version in sorted(report.policy_packs.items()))
    if report.policy:
        lines.append(f"Policy violations ({packs or 'policy pack'}):")
        lines += [f"  {v}" for v in report.policy]
    elif packs:
        lines.append(f"Policy pack {packs}: no violations")
    for urn, message in report.warnings:
        lines.append(f"warning{_on(urn)}: {message}")
    for urn, message in report.errors:
        lines.append(f"error{_on(urn)}: {message}")
    return "\n".join(lines) + "\n"


def _on(urn: str | None) -> str:
    return f" ({urn.rsplit('::', 1)[-1]})" if urn else ""
