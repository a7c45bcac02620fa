"""`python -m tools.up preview FILE`: the summary of what `pulumi preview --json` wrote to FILE;
exits 0 when something changes, 3 when nothing does, 1 when the preview failed.

`python -m tools.up report --outputs FILE [--events FILE [--preview FILE]]`: what `pulumi up --json` wrote to
the events FILE went wrong, if anything, then the table per node and the endpoints, from the
stack's outputs (`pulumi stack output --json`) in the outputs FILE.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .events import read
from .summary import summary
from .table import report_text

NOTHING_TO_CHANGE = 3


def _preview(args: argparse.Namespace) -> int:
    report = read(Path(args.file).read_text())
    sys.stdout.write(summary(report, args.stack))
    if report.result != "succeeded" or report.errors:
        return 1
    return NOTHING_TO_CHANGE if report.nothing_to_change else 0


def _report(args: argparse.Namespace) -> int:
    outputs = json.loads(Path(args.outputs).read_text() or "{}") if Path(args.outputs).exists() else {}
    report = read(Path(args.events).read_text()) if args.events else None
    preview = read(Path(args.preview).read_text()) if args.preview else None
    if report is not None:
        for urn, message in report.errors:
            where = f" ({urn.rsplit('::', 1)[-1]})" if urn else ""
            sys.stdout.write(f"error{where}: {message}\n")
    sys.stdout.write(report_text(outputs, report, preview))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.up", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    preview = sub.add_parser("preview", help="summarize a preview")
    preview.add_argument("file")
    preview.add_argument("--stack", default="dev")
    report = sub.add_parser("report", help="the table per node and the endpoints after an up")
    report.add_argument("--outputs", required=True)
    report.add_argument("--events", help="what `pulumi up --json` printed")
    report.add_argument("--preview", help="what the preview before it printed (runs it did not reach)")
    args = parser.parse_args(argv)
    return _preview(args) if args.command == "preview" else _report(args)


if __name__ == "__main__":
    sys.exit(main())
