"""The table `make up` ends with: per node, its node set and cell, how each of its services
fared in this `pulumi up` (changed, unchanged, failed, not reached) and whether the node is in
sync; then the endpoints a user needs.

It reads the stack's outputs (`pulumi stack output --json`: `nodes`, `inSync`, `endpoints`,
from components/outputs.py and __main__.py) and, when there was one, the up's report.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.edpm.marker import MARKER

from .events import Report, Step

CHANGED, UNCHANGED, FAILED, NOT_REACHED = "changed", "unchanged", "failed", "not reached"


def layout(outputs: Mapping[str, Any], report: Report | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    """{node set: {node: {cell, services}}}: the `nodes` output; for a stack whose last up came
    before it existed, the services that `inSync` lists and the cells the up's runs name."""
    nodes = outputs.get("nodes")
    if isinstance(nodes, Mapping) and nodes:
        return {s: {n: dict(v) for n, v in ns.items()} for s, ns in nodes.items()}
    cells = {(r.run.node_set, r.run.node): r.run.cell for r in (report.runs if report else []) if r.run}
    return {s: {n: {"cell": cells.get((s, n)), "services": [k for k in services if k != MARKER.name]}
                for n, services in ns.items()}
            for s, ns in (outputs.get("inSync") or {}).items()}


def outcome(step: Step | None, planned: Step | None, up_failed: bool) -> str:
    """How one service of one node fared in the up: changed when its run changed something on the
    node, unchanged when it did not run or changed nothing, failed, or not reached when the up
    stopped before the run that the preview (`planned`) had said would go."""
    if step is not None and step.failed:
        return FAILED
    if step is None or not step.changes or not step.done:
        due = (planned is not None and planned.changes) or (step is not None and step.changes)
        return NOT_REACHED if up_failed and due else UNCHANGED
    changed = step.outputs.get("changed")
    return UNCHANGED if changed == 0 else CHANGED


def _by_run(report: Report | None) -> dict[tuple[str, str, str], Step]:
    return {(s.run.node_set, s.run.node, s.run.service): s for s in (report.runs if report else []) if s.run}


def rows(outputs: Mapping[str, Any], report: Report | None,
         preview: Report | None = None) -> tuple[list[str], list[list[str]]]:
    nodes = layout(outputs, report)
    services: list[str] = []
    for members in nodes.values():
        for info in members.values():
            services += [s for s in info.get("services") or [] if s not in services]
    by_run, planned = _by_run(report), _by_run(preview)
    up_failed = report is not None and report.result != "succeeded"
    in_sync = outputs.get("inSync") or {}
    header = ["NODE SET", "NODE", "CELL", *services, "IN SYNC"]
    table = []
    for node_set in sorted(nodes):
        for node in sorted(nodes[node_set]):
            info = nodes[node_set][node]
            own = info.get("services") or []
            fared = {s: outcome(by_run.get((node_set, node, s)), planned.get((node_set, node, s)), up_failed)
                     for s in [MARKER.name, *own]}
            row = [node_set, node, str(info.get("cell") or "?")]
            row += [fared[s] if s in own else "" for s in services]
            synced = (in_sync.get(node_set) or {}).get(node) or {}
            behind = [s for s in [MARKER.name, *own] if synced.get(s) is False or fared[s] in (FAILED, NOT_REACHED)]
            row.append(f"no ({', '.join(behind)})" if behind else "yes" if synced else "?")
            table.append(row)
    return header, table


def render(header: list[str], table: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *table]) for i in range(len(header))]
    return "".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n"
                   for r in [header, *table])


def endpoint_lines(outputs: Mapping[str, Any]) -> list[str]:
    found = outputs.get("endpoints")
    if not isinstance(found, Mapping):
        return []
    named = [("Keystone", found.get("keystone")), ("nova API", found.get("compute"))]
    named += [(f"noVNC {cell}", url) for cell, url in sorted((found.get("novncproxy") or {}).items())]
    width = max(len(n) for n, _ in named)
    return [f"{n + ':':<{width + 1}} {url}" for n, url in named if url]


def report_text(outputs: Mapping[str, Any], report: Report | None, preview: Report | None = None) -> str:
    header, table = rows(outputs, report, preview)
    text = render(header, table) if table else "No EDPM nodes in this stack.\n"
    lines = endpoint_lines(outputs)
    return text + ("\n" + "\n".join(lines) + "\n" if lines else "")
