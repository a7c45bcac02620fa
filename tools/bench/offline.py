"""The bench items that need no cluster and no test node: previews of made-up
estates (item 1), the engine's floor (2), a no-change `up` (3), the cost of
checking customServiceConfig (6), fan-out with stand-in playbooks (5 offline)
and the dynamic provider's own limit on it (provider-threads). Each runs in a
project copy and a backend of the bench's own below `workdir`. Where playbooks
run (3, 5), the project copy's venv has stand-ins for `ansible-playbook` and
for the `ssh` by which the run guard takes a node's run lock: everything else,
the program, the dynamic provider, PlaybookRun and its run guard, is real."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.ansible_runner import runguard

from . import stack, workspace
from .measure import Sample, run

STACK = "bench"
MAX_RUNS = "OPENSTACK_NOVA_MAX_RUNS"  # the dynamic provider's thread pool (devenv/dynamic_provider.py)
_COUNT = re.compile(r"^\s*[-+~]*\s*(\d+) (?:to create|to update|to delete|to replace|unchanged|created|updated|"
                    r"deleted|replaced)\b", re.M)
# Stands in for ansible-playbook where the made-up nodes would have to be reached: it records
# the call and reports a run that changed nothing (the recap event PlaybookRun reads, written
# where the project's callback would write it).
STUB_ANSIBLE = """echo "$*" >>"$(dirname "$0")/../ansible-calls"
echo 'PLAY RECAP'
[ -z "${OPENSTACK_NOVA_EVENTS:-}" ] ||
  echo '{"event": "stats", "hosts": {"node": {"ok": 1, "changed": 0}}}' >>"$OPENSTACK_NOVA_EVENTS\""""
# Stands in for ssh to a made-up node, for the run guard's connection that takes and holds
# the node's run lock (components/ansible_runner/runguard.py; argv from nodessh.ssh_argv): a node that
# answers. Like ssh, it refuses a node with no key in the run's known hosts file and a key
# file that is not there (exit 255, in ssh's words); then it runs the remote command as the
# node's shell would, in a directory that stands for the node's root (nodes/<node> beside
# bin/): the guard's own lock script, with the lock at LOCK_PATH below that directory. Each
# connection is recorded (ssh-calls). The bench's venvs alone have it, ahead of the real ssh.
STUB_SSH = f"""lock={shlex.quote(runguard.LOCK_PATH)}
venv=$(cd "$(dirname "$0")/.." && pwd)
port=22 key= known=
while [ $# -gt 2 ]; do
  case $1 in
    -p) port=$2; shift 2 ;;
    -i) key=$2; shift 2 ;;
    -o) case $2 in UserKnownHostsFile=*) known=${{2#*=}} ;; esac; shift 2 ;;
    -[lJFEcmLRDWwbBSQ]) shift 2 ;;
    *) shift ;;
  esac
done
[ $# -eq 2 ] || {{ echo "stand-in ssh: wants [options] destination command" >&2; exit 255; }}
host=$1 remote=$2 name=$1
[ "$port" = 22 ] || name="[$host]:$port"
echo "$name" >>"$venv/ssh-calls"
[ -n "$key" ] && [ -r "$key" ] || {{ echo "$name: Permission denied (publickey)." >&2; exit 255; }}
if ! awk -v n="$name" '{{ k = split($1, names, ","); for (i = 1; i <= k; i++) if (names[i] == n) found = 1 }}
                      END {{ exit !found }}' "${{known:-/dev/null}}"; then
  echo "No ED25519 host key is known for $name and you have requested strict checking." >&2
  echo "Host key verification failed." >&2
  exit 255
fi
root=$venv/nodes/$name
mkdir -p "$root"
printf -v moved %q "$root$lock"
remote=${{remote#sudo -n }}
case $remote in *"$lock"*) remote=${{remote%%"$lock"*}}$moved${{remote#*"$lock"}} ;; esac
cd "$root" && exec sh -c "$remote\""""
# Replaces a project copy's __main__.py: the same program with nova's options unchecked
# (load() with no catalog checks snippets' syntax only), for item 6.
UNCHECKED_MAIN = '''"""The program with customServiceConfig checked for syntax only (the bench's item 6)."""
import functools
import runpy

import components.settings.source as source

source.load = functools.partial(source.load, catalog=None)
runpy.run_path("program.py", run_name="__main__")
'''


class BenchError(Exception):
    pass


@dataclass
class Point:
    """One configuration measured `len(seconds)` times."""

    label: str
    nodes: int
    resources: int = 0
    seconds: list[float] = field(default_factory=list)
    peak_mib: list[float] = field(default_factory=list)
    cpu: list[Mapping[str, float]] = field(default_factory=list)

    def add(self, sample: Sample) -> None:
        self.seconds.append(sample.seconds)
        self.peak_mib.append(sample.peak_mib)
        self.cpu.append(sample.cpu)
        self.resources = resource_count(sample.output) or self.resources

    @property
    def median_seconds(self) -> float:
        return statistics.median(self.seconds)

    @property
    def median_peak_mib(self) -> float:
        return statistics.median(self.peak_mib)

    def median_cpu(self) -> dict[str, float]:
        parts = sorted({p for sample in self.cpu for p in sample})
        return {p: statistics.median(sample.get(p, 0.0) for sample in self.cpu) for p in parts}


def resource_count(output: str) -> int:
    """The resources a preview or up summary counts (0 when it has no summary)."""
    summary = output.rsplit("Resources:", 1)
    return sum(int(n) for n in _COUNT.findall(summary[1])) if len(summary) == 2 else 0


class Workspace:
    """The bench's own Pulumi home, backend and project copies, below `workdir`."""

    def __init__(self, workdir: Path, log: Callable[[str], None] = print) -> None:
        self.workdir = workdir
        self.env = workspace.isolated_env(workspace.local_env(), workdir)
        self.log = log
        (workdir / "id_bench").write_text("not a key: no Ansible run reads it\n")

    def cli(self, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(["pulumi", "--non-interactive", *args], env=self.env, cwd=project,
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise BenchError(f"pulumi {' '.join(args)} failed in {project}:\n"
                             f"{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
        return proc

    def project(self, name: str, *, unchecked: bool = False) -> Path:
        """A fresh copy of the project (`unchecked`: with item 6's __main__.py)."""
        dest = self.workdir / name
        if dest.exists():
            shutil.rmtree(dest)
        workspace.copy_project(dest)
        if unchecked:
            (dest / "__main__.py").rename(dest / "program.py")
            (dest / "__main__.py").write_text(UNCHECKED_MAIN)
        return dest

    def made_up_stack(self, project: Path, name: str, nodes: int) -> None:
        """Stack `name` of `project`: `nodes` made-up nodes in render mode, passwords set as secrets."""
        made_up = stack.bench_nodes(nodes)
        known_hosts = self.workdir / f"known_hosts-{name}"
        known_hosts.write_text(stack.known_hosts(made_up))
        config = stack.bench_config(nodes, render_dir=str(self.workdir / "render" / project.name / name),
                                    key_file=str(self.workdir / "id_bench"), known_hosts_file=str(known_hosts))
        self.fresh_stack(project, name)
        salt = workspace.read_stack(project, name).get("encryptionsalt")
        workspace.write_stack(project, name, stack.stack_document(config, salt))
        pairs = [a for k, v in stack.secret_settings().items() for a in ("--secret", f"{k}={v}")]
        self.cli(project, "config", "set-all", "--path", "-s", name, *pairs)

    def fresh_stack(self, project: Path, name: str) -> None:
        """Stack `name` with no state (one left by an earlier bench in this workdir is removed first)."""
        subprocess.run(["pulumi", "--non-interactive", "stack", "rm", "--yes", "--force", "--preserve-config",
                        "-s", name], env=self.env, cwd=project, capture_output=True, check=False)
        self.cli(project, "stack", "init", name)

    def timed(self, project: Path, *args: str, env: Mapping[str, str] | None = None) -> Sample:
        """`pulumi args` measured (in `env` instead of the workspace's, when given)."""
        sample = run(["pulumi", "--non-interactive", *args], self.env if env is None else env, project)
        if sample.returncode != 0:
            raise BenchError(f"pulumi {' '.join(args)} failed in {project}:\n{sample.output[-3000:]}")
        return sample


def preview_args(name: str) -> list[str]:
    return ["preview", "-s", name]


def measure_previews(ws: Workspace, nodes: Sequence[int], runs: int) -> list[Point]:
    """Item 1: a preview of a fresh stack of each size, `runs` times, sizes interleaved."""
    project = ws.project("program")
    points = {n: Point(f"{n} nodes", n) for n in nodes}
    for n in nodes:
        ws.made_up_stack(project, f"{STACK}-{n}", n)
    for index in range(runs):
        for n in nodes:
            sample = ws.timed(project, *preview_args(f"{STACK}-{n}"))
            points[n].add(sample)
            ws.log(f"  preview, {n} nodes, run {index + 1}: {sample.seconds:.1f} s, {sample.peak_mib:.0f} MiB")
    return [points[n] for n in nodes]


def small_project(ws: Workspace, program: str) -> Path:
    """A project of tools/bench/`program`/__main__.py alone, importing its provider by reference
    as the program does."""
    dest = ws.workdir / program
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir()
    shutil.copy2(workspace.ROOT / "tools" / "bench" / program / "__main__.py", dest / "__main__.py")
    (dest / "tools").symlink_to(workspace.ROOT / "tools")
    venv = (workspace.ROOT / ".venv").resolve()
    (dest / "Pulumi.yaml").write_text(
        f"name: bench-{program}\nruntime:\n  name: python\n  options:\n    virtualenv: {venv}\n")
    return dest


def floor_project(ws: Workspace) -> Path:
    """The minimal program of item 2."""
    return small_project(ws, "floor")


def measure_floor(ws: Workspace, program: Sequence[Point], runs: int) -> list[Point]:
    """Item 2: the floor program previewing as many resources as the program had at each size."""
    project = floor_project(ws)
    points = {p.nodes: Point(f"{p.resources} trivial resources", p.nodes) for p in program}
    for p in program:
        name = f"floor-{p.nodes}"
        ws.fresh_stack(project, name)
        # the stack and the floor's one component count too
        ws.cli(project, "config", "set", "-s", name, "resources", str(max(p.resources - 2, 0)))
    for index in range(runs):
        for p in program:
            sample = ws.timed(project, *preview_args(f"floor-{p.nodes}"))
            points[p.nodes].add(sample)
            ws.log(f"  floor, {p.resources} resources, run {index + 1}: {sample.seconds:.1f} s")
    return [points[p.nodes] for p in program]


def stand_in_venv(venv: Path, ansible: str = STUB_ANSIBLE) -> Path:
    """A shim venv at `venv` (made afresh) where the made-up nodes' playbook runs go all the
    way through PlaybookRun and its run guard: `ansible` stands in for ansible-playbook,
    STUB_SSH for the guard's ssh to the node."""
    if venv.exists():
        shutil.rmtree(venv)  # no calls, locks or nodes of an earlier bench in this workdir
    return workspace.shim_venv(venv, scripts={"ansible-playbook": ansible, "ssh": STUB_SSH})


@dataclass(frozen=True)
class Calls:
    """What the stand-ins of a venv were asked to do so far."""

    playbooks: int  # ansible-playbook runs
    locks: int  # connections to a node, each the run guard taking a node's run lock

    @classmethod
    def of(cls, venv: Path) -> Calls:
        return cls(playbooks=_lines(venv / "ansible-calls"), locks=_lines(venv / "ssh-calls"))

    def __sub__(self, other: Calls) -> Calls:
        return Calls(self.playbooks - other.playbooks, self.locks - other.locks)


def guarded(calls: Calls, what: str) -> Calls:
    """`calls`, once every playbook run was seen to take its node's lock first (else BenchError)."""
    if calls.locks != calls.playbooks:
        raise BenchError(f"{what}: {calls.playbooks} stand-in playbook runs, but {calls.locks} connections to "
                         "nodes for their run locks (one each): the runs did not all go through the run guard")
    return calls


@dataclass
class NoChangeUp:
    nodes: int
    deploy_calls: int  # stand-in ansible-playbook calls of the first deploy
    up_calls: int  # ... of the measured no-change ups (must be 0)
    preview: Point
    up: Point
    up_locks: int = 0  # run locks the no-change ups took (connections to nodes; must be 0)


def measure_no_change_up(ws: Workspace, nodes: int, runs: int) -> NoChangeUp:
    """Item 3: a deployed estate of made-up nodes (stand-ins for ansible-playbook and the run
    guard's ssh took the first deploy), then a no-change preview and a no-change `up`, `runs`
    times each."""
    project = ws.project("estate")
    venv = stand_in_venv(ws.workdir / "estate-venv")
    workspace.use_venv(project, venv)
    ws.made_up_stack(project, "estate", nodes)
    start = time.perf_counter()
    ws.cli(project, "up", "--yes", "--skip-preview", "-s", "estate")
    deployed = guarded(Calls.of(venv), "the first deploy")
    ws.log(f"  estate of {nodes} nodes deployed in {time.perf_counter() - start:.0f} s "
           f"({deployed.playbooks} stand-in playbook runs, each under its node's run lock)")
    preview, up = Point("no-change preview", nodes), Point("no-change up", nodes)
    for index in range(runs):
        preview.add(ws.timed(project, "preview", "-s", "estate"))
        up.add(ws.timed(project, "up", "--yes", "--skip-preview", "-s", "estate"))
        ws.log(f"  no change, run {index + 1}: preview {preview.seconds[-1]:.1f} s, up {up.seconds[-1]:.1f} s")
    ups = Calls.of(venv) - deployed
    return NoChangeUp(nodes=nodes, deploy_calls=deployed.playbooks, up_calls=ups.playbooks, preview=preview, up=up,
                      up_locks=ups.locks)


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def measure_validation(ws: Workspace, nodes: int, runs: int) -> tuple[Point, Point]:
    """Item 6: previews of the same fresh stack with customServiceConfig checked against nova's
    options (the program) and for syntax only (UNCHECKED_MAIN), interleaved."""
    checked, unchecked = ws.project("checked"), ws.project("unchecked", unchecked=True)
    ws.made_up_stack(checked, "checked", nodes)
    ws.made_up_stack(unchecked, "unchecked", nodes)
    on, off = Point("options checked", nodes), Point("syntax only", nodes)
    for index in range(runs):
        on.add(ws.timed(checked, *preview_args("checked")))
        off.add(ws.timed(unchecked, *preview_args("unchecked")))
        ws.log(f"  validation, run {index + 1}: on {on.seconds[-1]:.1f} s, off {off.seconds[-1]:.1f} s")
    return on, off


def settings_load_seconds(ws: Workspace, nodes: int, runs: int) -> tuple[float, float]:
    """Item 6 in process: median seconds of load() of the made-up stack's config, with nova's
    options checked and with syntax only (no CLI, so no noise from the engine)."""
    from components.settings.catalog import _read_cached
    from components.stackconfig import load

    made_up = stack.bench_nodes(nodes)
    known_hosts = ws.workdir / "known_hosts-load"
    known_hosts.write_text(stack.known_hosts(made_up))
    raw = stack.bench_config(nodes, render_dir=str(ws.workdir / "render-load"),
                             key_file=str(ws.workdir / "id_bench"), known_hosts_file=str(known_hosts))
    for path, value in stack.secret_settings().items():
        *parents, last = path.removeprefix(f"{stack.PROJECT}:").split(".")
        target = raw
        for key in parents:
            target = target.setdefault(key, {})
        target[last] = value
    timings: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(runs):
        for checked in (True, False):
            _read_cached.cache_clear()  # the program reads the catalog once per run
            start = time.perf_counter()
            if checked:
                load(raw, secret_keys=["nova"])
            else:
                load(raw, secret_keys=["nova"], catalog=None)
            timings[checked].append(time.perf_counter() - start)
    return statistics.median(timings[True]), statistics.median(timings[False])


def measure_stub_fanout(ws: Workspace, sizes: Sequence[int], seconds: float, runs: int) -> list[Point]:
    """Item 5 without the environment: a fresh deploy of K made-up nodes whose every playbook
    run is a stand-in that takes `seconds` (its run lock taken through the stand-in ssh), so
    what remains is how many runs Pulumi and the dynamic provider let happen at once (the
    nodes' own CPU and real SSH do not count)."""
    project = ws.project("fanout")
    venv = stand_in_venv(ws.workdir / "fanout-venv", f"sleep {seconds}\n{STUB_ANSIBLE}")
    workspace.use_venv(project, venv)
    points = {k: Point(f"{k} nodes", k) for k in sizes}
    for index in range(runs):
        for k in sizes:
            name = f"fanout-{k}"
            ws.made_up_stack(project, name, k)
            before = Calls.of(venv)
            sample = ws.timed(project, "up", "--yes", "--skip-preview", "-s", name)
            calls = guarded(Calls.of(venv) - before, f"the deploy of {k} nodes")
            points[k].add(sample)
            ws.log(f"  stand-in fan-out, {k} nodes, run {index + 1}: {sample.seconds:.1f} s "
                   f"({calls.playbooks} playbook runs)")
    return [points[k] for k in sizes]


@dataclass
class ProviderThreads:
    """One `up` of the provider-threads program: how many creates ran at once."""

    pool: str  # OPENSTACK_NOVA_MAX_RUNS, or "default" (unset)
    resources: int
    at_once: int  # the most creates running together
    creates_seconds: float  # first create's start to last create's end
    up: Point


def at_once(intervals: Sequence[tuple[float, float]]) -> int:
    """The most of these (start, end) intervals that overlap."""
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    running = peak = 0
    for _, step in edges:
        running += step
        peak = max(peak, running)
    return peak


def probe_intervals(state: Mapping[str, Any]) -> list[tuple[float, float]]:
    """(start, end) of each probe create, from `pulumi stack export`'s document."""
    return [(float(r["outputs"]["start"]), float(r["outputs"]["end"]))
            for r in state.get("deployment", {}).get("resources") or []
            if r.get("type") == "pulumi-python:dynamic:Resource" and "start" in (r.get("outputs") or {})]


def measure_provider_threads(ws: Workspace, pools: Sequence[str], count: int, seconds: float,
                             runs: int) -> list[ProviderThreads]:
    """The dynamic provider's own limit: a fresh `up --parallel 4*count` of `count` probes that take
    `seconds` each and depend on nothing, with each pool ("" is the default), `runs` times, pools
    interleaved."""
    project = small_project(ws, "threads")
    points = {pool: Point(f"pool {pool or 'default'}", count) for pool in pools}
    peaks: dict[str, list[int]] = {pool: [] for pool in pools}
    spans: dict[str, list[float]] = {pool: [] for pool in pools}
    for index in range(runs):
        for pool in pools:
            name = f"threads-{pool or 'default'}"
            env = {k: v for k, v in ws.env.items() if k != MAX_RUNS}
            if pool:
                env[MAX_RUNS] = pool
            ws.fresh_stack(project, name)
            ws.cli(project, "config", "set", "-s", name, "count", str(count))
            ws.cli(project, "config", "set", "-s", name, "seconds", str(seconds))
            sample = ws.timed(project, "up", "--yes", "--skip-preview", "--parallel", str(4 * count), "-s", name,
                              env=env)
            points[pool].add(sample)
            intervals = probe_intervals(json.loads(ws.cli(project, "stack", "export", "-s", name).stdout))
            if len(intervals) != count:
                raise BenchError(f"{len(intervals)} of {count} probes in the state of {name}")
            peaks[pool].append(at_once(intervals))
            spans[pool].append(max(e for _, e in intervals) - min(s for s, _ in intervals))
            ws.log(f"  provider threads, pool {pool or 'default'}, run {index + 1}: {peaks[pool][-1]} at once, "
                   f"creates {spans[pool][-1]:.1f} s, up {sample.seconds:.1f} s")
    return [ProviderThreads(pool=pool or "default", resources=count, at_once=max(peaks[pool]),
                            creates_seconds=statistics.median(spans[pool]), up=points[pool]) for pool in pools]
