"""Values computed again by new Python interpreters, as the next `pulumi up` or `make up`
computes them: a value that depends on hash seeds, set order or a per-process cache
differs there, where computing it twice in one process would not show it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Two seeds: each interpreter orders sets of strings its own way.
HASH_SEEDS = ("0", "4242")


def printed_by_new_interpreters(source: str) -> list[str]:
    """What `source` prints, run from the project's root by one new interpreter per hash seed."""
    printed = []
    for seed in HASH_SEEDS:
        proc = subprocess.run([sys.executable, "-c", source], cwd=ROOT, capture_output=True, text=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}, check=False, timeout=120)
        assert proc.returncode == 0, proc.stderr[-3000:]
        printed.append(proc.stdout)
    return printed
