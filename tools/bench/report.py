"""The bench's tables (markdown), its verdicts on the issue's targets, and
docs/benchmarks.md: each item's section is replaced only when it was measured,
so a run of the offline items keeps the live items' last results and the
other way round. Pure functions, apart from reading the machine."""

from __future__ import annotations

import os
import platform
import re
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .live import Round
from .offline import NoChangeUp, Point, ProviderThreads

# The targets (issue 11).
PER_NODE_MS = 12.0  # preview: ms per node above the 0-node floor, at 500 nodes
FLOOR_RATIO = 2.0  # preview time over the engine's floor for as many resources
LINEARITY = 1.5  # per-node cost at the largest size over the one at 50
CHANGE_RATIO = 1.3  # up(8)/up(1), one node changed
FANOUT_RATIO = 2.5  # deploy(8)/deploy(1)
NO_CHANGE_RATIO = 2.0  # no-change up over no-change preview
RUNS_PER_NODE = 5  # the marker and the four built-in services of the bench's nodes


@dataclass(frozen=True)
class Machine:
    cpu: str
    cores: int
    memory_gib: float
    load: tuple[float, float, float]
    date: str
    commit: str
    pulumi: str

    def line(self) -> str:
        load = ", ".join(f"{v:.1f}" for v in self.load)
        busy = "a shared, busy machine" if self.load[0] >= self.cores / 2 else "quiet"
        return (f"_Measured {self.date} on {self.cpu}, {self.cores} cores, {self.memory_gib:.0f} GiB "
                f"(load average {load} when it started: {busy}); commit {self.commit}, Pulumi CLI {self.pulumi}._")


def _first(pattern: str, text: str, default: str) -> str:
    found = re.search(pattern, text, re.M)
    return found.group(1).strip() if found else default


def this_machine(root: Path, env: Mapping[str, str]) -> Machine:
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    meminfo = Path("/proc/meminfo").read_text() if Path("/proc/meminfo").exists() else ""
    git = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=root, capture_output=True, text=True,
                         check=False).stdout.strip() or "unknown"
    pulumi = subprocess.run(["pulumi", "version"], env=dict(env), capture_output=True, text=True,
                            check=False).stdout.strip() or "unknown"
    return Machine(
        cpu=_first(r"^model name\s*:\s*(.+)$", cpuinfo, platform.processor() or "unknown CPU"),
        cores=os.cpu_count() or 1,
        memory_gib=int(_first(r"^MemTotal:\s*(\d+)", meminfo, "0")) / 2**20,
        load=os.getloadavg(),
        date=time.strftime("%Y-%m-%d %H:%M %Z"),
        commit=git,
        pulumi=pulumi,
    )


def _s(seconds: float) -> str:
    return f"{seconds:.1f} s"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def _verdict(ok: bool, measured: str, target: str) -> str:
    """One line of the target list: met or MISSED, what was measured, the target."""
    return f"- {'met' if ok else 'MISSED'}: {measured} (target: {target})"


def per_node(point: Point, base: Point) -> float:
    """Seconds per node above `base` (the 0-node point)."""
    return (point.median_seconds - base.median_seconds) / point.nodes if point.nodes else 0.0


CPU_PARTS = ("program", "engine", "dynamic provider")


def _cpu(point: Point) -> str:
    cpu = point.median_cpu()
    return " / ".join(f"{cpu.get(key, 0.0):.1f}" for key in CPU_PARTS)


def _cpu_per_node(point: Point, base: Point) -> str:
    """CPU ms per node above `base` (the 0-node point), by part (CPU_PARTS)."""
    cpu, below = point.median_cpu(), base.median_cpu()
    return " / ".join(f"{(cpu.get(key, 0.0) - below.get(key, 0.0)) / point.nodes * 1000:.0f}" for key in CPU_PARTS)


def preview_section(program: Sequence[Point], floor: Sequence[Point] | None) -> str:
    """Items 1 and 2."""
    base = program[0]
    floor_by = {p.nodes: p for p in floor or ()}
    floor_base = floor_by.get(base.nodes)
    rows = ["| nodes | resources | preview | per node above 0 nodes | peak memory | CPU s: program / engine / "
            "dyn. provider | engine's floor (same resources) | floor per node | preview / floor |",
            "| ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |"]
    for point in program:
        f = floor_by.get(point.nodes)
        rows.append(" | ".join([
            f"| {point.nodes}", str(point.resources), _s(point.median_seconds),
            _ms(per_node(point, base)) if point.nodes else "-", f"{point.median_peak_mib:.0f} MiB", _cpu(point),
            _s(f.median_seconds) if f else "-",
            _ms(per_node(f, floor_base)) if f and floor_base and point.nodes else "-",
            f"{point.median_seconds / f.median_seconds:.2f}" if f else "-"]) + " |")
    runs = len(base.seconds)
    lines = [f"Median of {runs} run{'s' if runs != 1 else ''} of `pulumi preview` of a fresh stack (every resource "
             "a create), `kubernetes.mode: render`, the nodes split over cell1-cell3 in one node set per cell, "
             "each node with one of four `customServiceConfig.nova` snippets. Peak memory: the resident sets of "
             "the CLI, language host, program and providers, summed. CPU: seconds each part used.", "", *rows, ""]
    if floor_base is not None:
        # where the time per node goes, by CPU (steadier than wall time on a busy machine)
        lines += ["| nodes | CPU ms per node above 0 nodes: program / engine / dyn. provider | the floor's |",
                  "| ---: | --- | --- |"]
        lines += [f"| {p.nodes} | {_cpu_per_node(p, base)} | "
                  f"{_cpu_per_node(floor_by[p.nodes], floor_base) if p.nodes in floor_by else '-'} |"
                  for p in program if p.nodes]
        lines.append("")
    largest, small = program[-1], next((p for p in program if p.nodes == 50), None)
    cost = per_node(largest, base)
    lines.append(_verdict(cost * 1000 <= PER_NODE_MS,
                          f"{_ms(cost)} per node above the 0-node preview at {largest.nodes} nodes",
                          f"at most {PER_NODE_MS:.0f} ms"))
    if small is not None and small is not largest:
        ratio = cost / per_node(small, base) if per_node(small, base) > 0 else float("inf")
        lines.append(_verdict(ratio <= LINEARITY,
                              f"the per-node cost at {largest.nodes} nodes is {ratio:.2f}x the one at 50",
                              f"at most {LINEARITY}x"))
    f = floor_by.get(largest.nodes)
    if f is not None:
        ratio = largest.median_seconds / f.median_seconds
        lines.append(_verdict(ratio <= FLOOR_RATIO,
                              f"the {largest.nodes}-node preview takes {ratio:.2f}x the engine's floor for its "
                              f"{largest.resources} resources", f"at most {FLOOR_RATIO:.0f}x"))
    return "\n".join(lines) + "\n"


def no_change_section(result: NoChangeUp) -> str:
    """Item 3."""
    ratio = result.up.median_seconds / result.preview.median_seconds
    runs = len(result.up.seconds)
    return "\n".join([
        f"A stack of {result.nodes} made-up nodes ({result.up.resources} resources) deployed once (stand-ins "
        f"took the first deploy's {result.deploy_calls} playbook runs, since the nodes do not exist: "
        "`ansible-playbook`, and the `ssh` by which each run's guard took its node's run lock, running the "
        f"lock script locally), then, {runs} times each, `pulumi preview` and `pulumi up --yes --skip-preview` "
        "(what `make up` runs) with nothing changed.", "",
        "| nodes | no-change preview | no-change up | up / preview | playbooks run by the ups | nodes contacted "
        "by the ups | peak memory (up) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| {result.nodes} | {_s(result.preview.median_seconds)} | {_s(result.up.median_seconds)} | {ratio:.2f} | "
        f"{result.up_calls} | {result.up_locks} | {result.up.median_peak_mib:.0f} MiB |", "",
        _verdict(result.up_calls == 0 and result.up_locks == 0,
                 f"{result.up_calls} playbooks ran, {result.up_locks} run locks were taken", "none"),
        _verdict(ratio <= NO_CHANGE_RATIO, f"the no-change up takes {ratio:.2f}x the no-change preview",
                 f"at most {NO_CHANGE_RATIO:.0f}x"),
        ""])


def live_section(rounds: Sequence[Round], cores: int) -> str:
    """Items 4 and 5. The machine's CPU during the deploys says whether it, and not the program's
    fan-out, set their pace: the test nodes run on the same `cores` as the CLI and Ansible."""
    one = rounds[0]
    rows = ["| K nodes | fresh deploy | deploy(K) / deploy(1) | playbook runs created | machine CPU per node "
            f"deployed | cores busy (of {cores}) | up, one node changed | up(K) / up(1) | runs updated |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rounds:
        updated = ", ".join(sorted({name for names in r.changed_runs for name in names})) or "none"
        rows.append(f"| {r.nodes} | {_s(r.deploy)} | {r.deploy / one.deploy:.2f} | {max(r.deployed_runs)} | "
                    f"{_s(r.cpu / r.nodes)} | {r.cpu / r.deploy:.2f} | {_s(r.change)} | "
                    f"{r.change / one.change:.2f} | {updated} |")
    last = rounds[-1]
    fan, change = last.deploy / one.deploy, last.change / one.change
    # with every core busy, K nodes cannot deploy faster than K times one node's CPU spread over the cores
    bound = last.cpu / cores / one.deploy
    return "\n".join([
        "The local environment's dev stack driven with K real test nodes (cell1 and cell2 alternately), "
        "every node deployed and removed once before. Fresh deploy: `pulumi up` adding the K nodes (Ansible "
        "over SSH, nova-compute started, the cells' host discovery). One node changed: node 0's "
        "`customServiceConfig.nova`, with the K nodes deployed. Machine CPU: what every process of the "
        "machine spent during the deploy (/proc/stat), the test nodes' own included: they share the "
        "runner's cores.", "", *rows, "",
        _verdict(change <= CHANGE_RATIO, f"up({last.nodes})/up({one.nodes}) = {change:.2f} for a one-node change",
                 f"at most {CHANGE_RATIO}"),
        _verdict(fan <= FANOUT_RATIO, f"deploy({last.nodes})/deploy({one.nodes}) = {fan:.2f}",
                 f"at most {FANOUT_RATIO}"),
        f"- the CPU the {last.nodes}-node deploy needed, spread over all {cores} cores, takes "
        f"{bound:.2f}x deploy({one.nodes}): no fan-out on this machine gets deploy({last.nodes})/deploy"
        f"({one.nodes}) below that",
        ""])


def stub_fanout_section(points: Sequence[Point], seconds: float) -> str:
    """Item 5, offline: how many playbook runs happen at once."""
    one = points[0]
    rows = ["| K nodes | playbook runs | fresh deploy | deploy(K) / deploy(1) | runs at once (serial time / wall "
            "time) |", "| ---: | ---: | ---: | ---: | ---: |"]
    for p in points:
        serial = p.nodes * RUNS_PER_NODE * seconds
        rows.append(f"| {p.nodes} | {p.nodes * RUNS_PER_NODE} | {_s(p.median_seconds)} | "
                    f"{p.median_seconds / one.median_seconds:.2f} | {serial / p.median_seconds:.1f} |")
    return "\n".join([
        f"A fresh deploy (`pulumi up`) of K made-up nodes whose every playbook run is a stand-in that sleeps "
        f"{seconds:g} s and reports success, its run guard taking the node's run lock through a stand-in `ssh` "
        "that runs the lock script locally: no real SSH, no CPU spent on nodes, so the time left is the program, "
        "the engine, and how many runs they let happen at once. Each node's runs form a chain of "
        f"{RUNS_PER_NODE} (marker, then its services in order).", "", *rows, ""])


def provider_threads_section(results: Sequence[ProviderThreads], seconds: float, default_pool: int) -> str:
    """The dynamic provider's own limit on runs at once."""
    count = results[0].resources
    rows = ["| OPENSTACK_NOVA_MAX_RUNS | creates | most at once | first start to last end | `pulumi up` |",
            "| --- | ---: | ---: | ---: | ---: |"]
    for r in results:
        pool = f"unset (default: {default_pool})" if r.pool == "default" else r.pool
        rows.append(f"| {pool} | {r.resources} | {r.at_once} | {_s(r.creates_seconds)} | "
                    f"{_s(r.up.median_seconds)} |")
    return "\n".join([
        f"A fresh `pulumi up --parallel {4 * count}` of {count} dynamic resources that depend on nothing, each "
        f"created in {seconds:g} s (tools/bench/threads): all that limits how many run at once is the thread "
        "pool of the dynamic-provider plugin, which serves every PlaybookRun (devenv/dynamic_provider.py). "
        "4 is the pool of the SDK's own plugin.", "", *rows, ""])


def validation_section(on: Point, off: Point, load_on: float, load_off: float) -> str:
    """Item 6."""
    difference = on.median_seconds - off.median_seconds
    return "\n".join([
        f"Preview of the fresh {on.nodes}-node stack with `customServiceConfig` checked against nova's options "
        "(the program as it is) and for oslo.config syntax only (the same program with `load(catalog=None)`); "
        f"the {on.nodes} node snippets hold four distinct texts. In process, without the CLI: `load()` of the "
        "same config.", "",
        "| nodes | options checked | syntax only | difference | per node | load() checked | load() syntax only |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| {on.nodes} | {_s(on.median_seconds)} | {_s(off.median_seconds)} | {_ms(difference)} | "
        f"{_ms(difference / on.nodes)} | {_ms(load_on)} | {_ms(load_off)} |", ""])


SECTIONS = {
    "preview": "1-2. Preview of made-up estates, and the engine's floor",
    "no-change": "3. `pulumi up` with nothing changed",
    "live": "4-5. One-node change and fresh deploy on real test nodes",
    "stub-fanout": "5 (offline). Fan-out with stand-in playbooks",
    "provider-threads": "5 (offline). The dynamic provider's limit on runs at once",
    "validation": "6. The cost of checking customServiceConfig",
}
_BEGIN, _END = "<!-- bench:{} begin -->", "<!-- bench:{} end -->"


def section(key: str, machine: Machine, body: str) -> str:
    return f"{_BEGIN.format(key)}\n### {SECTIONS[key]}\n\n{machine.line()}\n\n{body}{_END.format(key)}\n"


def not_run(key: str, reason: str) -> str:
    return f"{_BEGIN.format(key)}\n### {SECTIONS[key]}\n\nNot measured yet: {reason}.\n{_END.format(key)}\n"


def merge(document: str, sections: Mapping[str, str]) -> str:
    """`document` with each of `sections` (key -> text from section()) in place of its previous
    text; sections it lacks are added at the end, in SECTIONS order."""
    for key in SECTIONS:
        if key not in sections:
            continue
        pattern = re.compile(re.escape(_BEGIN.format(key)) + r".*?" + re.escape(_END.format(key)) + r"\n?", re.S)
        found = pattern.search(document)
        if found:
            document = document[:found.start()] + sections[key] + document[found.end():]
        else:
            document = document.rstrip("\n") + "\n\n" + sections[key]
    return document
