"""The bench items that need the local environment (`make up NODES=8`): a fresh
deploy of K real test nodes (item 5) and a one-node config change with K nodes
deployed (item 4), K = 1, 4, 8.

They drive the environment's dev stack from a copy of the project whose stack
config lists the K nodes, as the integration tests' dev_copy does, and leave
the dev stack as the checkout's config says when they end.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.ansible_runner.playbook import TYPE as PLAYBOOK_RUN

from . import stack, workspace
from .measure import Sample, run

DEV = "dev"
SIZES = (1, 4, 8)


class NotReadyError(Exception):
    """The environment cannot run these items; the message says what to start."""


@dataclass
class Round:
    """The measurements with K test nodes."""

    nodes: int
    deploy_seconds: list[float] = field(default_factory=list)
    deployed_runs: list[int] = field(default_factory=list)  # PlaybookRuns created by the deploy
    deploy_cpu: list[float] = field(default_factory=list)  # CPU seconds of the whole machine during the deploy
    change_seconds: list[float] = field(default_factory=list)
    changed_runs: list[list[str]] = field(default_factory=list)  # PlaybookRuns the change updated

    @property
    def deploy(self) -> float:
        return statistics.median(self.deploy_seconds)

    @property
    def cpu(self) -> float:
        return statistics.median(self.deploy_cpu)

    @property
    def change(self) -> float:
        return statistics.median(self.change_seconds)


def steps(output: str) -> dict[str, list[str]]:
    """The PlaybookRuns of a `pulumi up --json` run, by operation: {"create": [names], ...}."""
    found: dict[str, list[str]] = {}
    for line in output.splitlines():
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        meta = (event.get("resOutputsEvent") or {}).get("metadata") or {}
        if meta.get("type") == PLAYBOOK_RUN:
            found.setdefault(str(meta.get("op")), []).append(str(meta.get("urn", "")).rsplit("::", 1)[-1])
    return found


def running_nodes(env: Mapping[str, str]) -> int:
    """How many test nodes devenv/nodes.sh started (0 when none)."""
    path = Path(env["OPENSTACK_NOVA_ENV"]) / "nodes" / "nodes.json"
    try:
        return len(json.loads(path.read_text()))
    except (OSError, ValueError):
        return 0


def readiness_problem(env: Mapping[str, str], sizes: Sequence[int]) -> str | None:
    need = max(sizes)
    have = running_nodes(env)
    if have < need:
        return f"{have} test nodes are running, these items need {need}: run `make up NODES={need}` first"
    if not Path(env["KUBECONFIG"]).is_file():
        return "the local Kubernetes is not running: run `make up NODES=8` first"
    listing = run(["pulumi", "--non-interactive", "stack", "ls", "--json"], env, workspace.ROOT)
    stacks = json.loads(listing.output) if listing.returncode == 0 and listing.output.startswith("[") else []
    if not any(s.get("name") == DEV for s in stacks):
        return "the dev stack has not been brought up: run `make up NODES=8` first"
    return None


def change_snippet(index: int) -> str:
    """A one-node change that differs on every run (so every run is a change)."""
    return f"[DEFAULT]\nreserved_host_memory_mb = {512 + index}\n"


class LiveBench:
    def __init__(self, workdir: Path, log: Callable[[str], None] = print) -> None:
        self.env = workspace.local_env()
        self.log = log
        self.project = workspace.copy_project(workdir / "live")
        self.dev = workspace.read_stack(workspace.ROOT, DEV)

    def apply(self, document: Mapping[str, Any]) -> Sample:
        workspace.write_stack(self.project, DEV, document)
        sample = run(["pulumi", "--non-interactive", "up", "--yes", "--skip-preview", "--json", "-s", DEV],
                     self.env, self.project)
        if sample.returncode != 0:
            raise RuntimeError(f"pulumi up of the dev stack failed:\n{sample.output[-3000:]}")
        return sample

    def nodes(self, count: int, changed: str | None = None) -> Sample:
        return self.apply(stack.with_test_nodes(self.dev, count, changed=changed))

    def restore(self) -> None:
        """The dev stack as the checkout's config says (what `make up` leaves)."""
        result = run(["pulumi", "--non-interactive", "up", "--yes", "--skip-preview", "-s", DEV],
                     self.env, workspace.ROOT)
        if result.returncode != 0:
            self.log(f"  could not bring the dev stack back; run `make up`:\n{result.output[-2000:]}")


def measure_live(workdir: Path, sizes: Sequence[int] = SIZES, runs: int = 1,
                 log: Callable[[str], None] = print) -> list[Round]:
    """Items 4 and 5. Every node is deployed once and removed before the measured rounds, so each
    round finds its nodes alike: deployed before, services stopped, files left in place."""
    env = workspace.local_env()
    problem = readiness_problem(env, sizes)
    if problem:
        raise NotReadyError(problem)
    bench = LiveBench(workdir, log)
    rounds = {k: Round(k) for k in sizes}
    try:
        log(f"  warm-up: deploy and remove {max(sizes)} nodes")
        bench.nodes(max(sizes))
        bench.nodes(0)
        for index in range(runs):
            for k in sizes:
                deployed = bench.nodes(k)
                rounds[k].deploy_seconds.append(deployed.seconds)
                rounds[k].deployed_runs.append(len(steps(deployed.output).get("create", [])))
                rounds[k].deploy_cpu.append(deployed.machine_cpu)
                changed = bench.nodes(k, changed=change_snippet(index))
                rounds[k].change_seconds.append(changed.seconds)
                rounds[k].changed_runs.append(steps(changed.output).get("update", []))
                log(f"  {k} nodes, run {index + 1}: deploy {deployed.seconds:.0f} s "
                    f"(machine CPU {deployed.machine_cpu:.0f} s), "
                    f"one-node change {changed.seconds:.0f} s ({', '.join(rounds[k].changed_runs[-1]) or 'nothing'})")
                bench.nodes(0)
    finally:
        bench.restore()
    return [rounds[k] for k in sizes]
