"""`make bench` (python -m tools.bench): measures, prints the tables, and writes
them into docs/benchmarks.md. Never a test: nothing here asserts a time."""

from __future__ import annotations

import argparse
import pstats
import shutil
import sys
import tempfile
from pathlib import Path

from devenv import dynamic_provider

from . import live, offline, report, workspace

ITEMS = ("preview", "no-change", "validation", "stub-fanout", "provider-threads", "live")
DOC = workspace.ROOT / "docs" / "benchmarks.md"
STUB_SECONDS = 2.0  # how long each stand-in playbook run of the offline fan-out takes
PROBES = 12  # provider-threads: resources created at once, if the provider lets them
POOLS = ("4", "")  # ... with the SDK's pool of 4 threads, and with the default
PROFILE_PYTHON = """case "${2:-}" in
  *pulumi-language-python-exec) exec "$REAL_PYTHON" "$1" -m cProfile -o "$(dirname "$0")/../program.pstats" "${@:2}" ;;
esac
exec "$REAL_PYTHON" "$@\""""


def _sizes(text: str) -> list[int]:
    return sorted({int(n) for n in text.split(",") if n.strip()})


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="make bench", description=__doc__)
    parser.add_argument("--items", default=",".join(ITEMS),
                        help=f"comma-separated, of: {', '.join(ITEMS)} (default: all)")
    parser.add_argument("--nodes", type=_sizes, default=[0, 50, 200, 500], help="preview sizes (default 0,50,200,500)")
    parser.add_argument("--estate", type=int, default=200, help="nodes of items 3 and 6 (default 200)")
    parser.add_argument("--runs", type=int, default=3, help="runs per measurement, medians reported (default 3)")
    parser.add_argument("--live-runs", type=int, default=1, help="runs of items 4 and 5 (default 1)")
    parser.add_argument("--workdir", type=Path, help="keep the bench's projects and backend here (default: a "
                        "temporary directory, removed afterwards)")
    parser.add_argument("--no-write", action="store_true", help=f"print only; leave {DOC.name} alone")
    parser.add_argument("--profile", type=int, metavar="NODES",
                        help="instead: one preview of NODES made-up nodes with the program under cProfile")
    args = parser.parse_args(argv)
    args.items = [i.strip() for i in args.items.split(",") if i.strip()]
    unknown = sorted(set(args.items) - set(ITEMS))
    if unknown:
        parser.error(f"unknown item(s) {', '.join(unknown)}; choose from {', '.join(ITEMS)}")
    if 0 not in args.nodes:
        args.nodes = [0, *args.nodes]  # per-node costs are above the 0-node preview
    return args


def profile(ws: offline.Workspace, nodes: int) -> None:
    """Where the program's own time goes: the executor (and so the program) under cProfile."""
    project = ws.project("profiled")
    venv = workspace.shim_venv(ws.workdir / "profile-venv", python=PROFILE_PYTHON)
    workspace.use_venv(project, venv)
    ws.made_up_stack(project, "profiled", nodes)
    sample = ws.timed(project, *offline.preview_args("profiled"))
    print(f"preview of {nodes} nodes: {sample.seconds:.1f} s; CPU s by part: "
          + ", ".join(f"{k} {v:.1f}" for k, v in sorted(sample.cpu.items())))
    stats = pstats.Stats(str(venv / "program.pstats"))
    stats.sort_stats("cumulative").print_stats(30)
    stats.sort_stats("tottime").print_stats(20)
    print(f"the whole profile: {venv / 'program.pstats'} (python -m pstats)")


def main(argv: list[str]) -> int:
    args = parse(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="openstack-nova-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        return _run(args, workdir.resolve())
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


def _run(args: argparse.Namespace, workdir: Path) -> int:
    ws = offline.Workspace(workdir, log=lambda line: print(line, file=sys.stderr, flush=True))
    if args.profile is not None:
        profile(ws, args.profile)
        return 0
    machine = report.this_machine(workspace.ROOT, ws.env)
    print(machine.line(), file=sys.stderr)
    sections: dict[str, str] = {}
    if "preview" in args.items:
        ws.log("items 1-2: previews and the engine's floor")
        program = offline.measure_previews(ws, args.nodes, args.runs)
        floor = offline.measure_floor(ws, program, args.runs)
        sections["preview"] = report.section("preview", machine, report.preview_section(program, floor))
    if "no-change" in args.items:
        ws.log(f"item 3: no-change up of {args.estate} nodes")
        result = offline.measure_no_change_up(ws, args.estate, args.runs)
        sections["no-change"] = report.section("no-change", machine, report.no_change_section(result))
    if "validation" in args.items:
        ws.log(f"item 6: validation on and off, {args.estate} nodes")
        on, off = offline.measure_validation(ws, args.estate, args.runs)
        load_on, load_off = offline.settings_load_seconds(ws, args.estate, args.runs)
        sections["validation"] = report.section("validation", machine,
                                                report.validation_section(on, off, load_on, load_off))
    if "stub-fanout" in args.items:
        ws.log(f"item 5 offline: fresh deploys with stand-in playbooks of {STUB_SECONDS:g} s")
        points = offline.measure_stub_fanout(ws, live.SIZES, STUB_SECONDS, args.runs)
        sections["stub-fanout"] = report.section("stub-fanout", machine,
                                                 report.stub_fanout_section(points, STUB_SECONDS))
    if "provider-threads" in args.items:
        pools = ", ".join(p or "default" for p in POOLS)
        ws.log(f"provider threads: {PROBES} creates of {STUB_SECONDS:g} s, with pools {pools}")
        results = offline.measure_provider_threads(ws, POOLS, PROBES, STUB_SECONDS, args.runs)
        default = dynamic_provider.default_threads(dynamic_provider.memory_mib())
        sections["provider-threads"] = report.section(
            "provider-threads", machine, report.provider_threads_section(results, STUB_SECONDS, default))
    if "live" in args.items:
        ws.log("items 4-5: one-node change and fresh deploy on the test nodes")
        try:
            rounds = live.measure_live(workdir, runs=args.live_runs, log=ws.log)
            sections["live"] = report.section("live", machine, report.live_section(rounds, machine.cores))
        except live.NotReadyError as reason:
            ws.log(f"  skipped: {reason}")
            if not DOC.exists() or "bench:live begin" not in DOC.read_text():
                sections["live"] = report.not_run("live", str(reason))
    for text in sections.values():
        print(text)
    if not args.no_write and sections:
        DOC.write_text(report.merge(DOC.read_text() if DOC.exists() else "# Benchmarks\n", sections))
        ws.log(f"wrote {DOC.relative_to(workspace.ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
