"""Timing a command and the peak memory of everything it starts (the CLI, the
language host, the program, the providers): resident sets summed over the
process tree, sampled a few times a second."""

from __future__ import annotations

import os
import statistics
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

SAMPLE_EVERY = 0.1  # seconds; finer sampling would cost CPU on the 2-core machine
_PAGE = os.sysconf("SC_PAGE_SIZE")


_TICK = os.sysconf("SC_CLK_TCK")
# Which part of Pulumi a process is, by its command line (first match wins).
PARTS = (
    ("program", "pulumi-language-python-exec"),
    ("dynamic provider", "dynamic_provider.py"),  # the toolchain's plugin (devenv/dynamic_provider.py)
    ("dynamic provider", "pulumi.dynamic"),  # the SDK's
    ("kubernetes provider", "pulumi-resource-kubernetes"),
    ("language host", "pulumi_language_python"),
    ("engine", "pulumi"),
)


@dataclass(frozen=True)
class Sample:
    seconds: float
    peak_mib: float
    returncode: int
    output: str
    cpu: dict[str, float]  # CPU seconds by part (PARTS), as last sampled before each process ended
    machine_cpu: float = 0.0  # CPU seconds the whole machine spent meanwhile, on every process (/proc/stat)


def part_of(cmdline: str) -> str:
    return next((part for part, marker in PARTS if marker in cmdline), "other")


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                # the command name may hold spaces: fields start after its closing parenthesis
                ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def machine_busy_seconds(stat: str | None = None) -> float:
    """CPU seconds all cores have spent not idle since boot (from /proc/stat, or `stat`, its text):
    user, nice, system, irq, softirq and steal; idle and iowait are not busy."""
    if stat is None:
        with open("/proc/stat", encoding="ascii") as handle:
            stat = handle.read()
    fields = [int(v) for v in stat.splitlines()[0].split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / _TICK


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime + stime


def _cmdline(pid: int) -> str:
    with open(f"/proc/{pid}/cmdline", "rb") as cmd:
        return cmd.read().replace(b"\0", b" ").decode(errors="replace")


def tree_usage(root: int, cpu: dict[int, tuple[str, float]]) -> int:
    """Bytes resident in `root` and all its descendants; records each one's CPU time in `cpu`."""
    tree, total, todo = _children(), 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(tree.get(pid, []))
        try:
            with open(f"/proc/{pid}/statm", encoding="ascii") as statm:
                total += int(statm.read().split()[1]) * _PAGE
            label = cpu[pid][0] if pid in cpu else part_of(_cmdline(pid))
            cpu[pid] = (label, _cpu_seconds(pid))
        except (OSError, IndexError, ValueError):
            continue
    return total


def run(argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> Sample:
    """Runs `argv` to its end; its wall time, peak tree memory, status and output."""
    peak = 0
    cpu: dict[int, tuple[str, float]] = {}
    done = threading.Event()
    start, busy = time.perf_counter(), machine_busy_seconds()
    proc = subprocess.Popen(list(argv), env=dict(env), cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)

    def sample() -> None:
        nonlocal peak
        while not done.wait(SAMPLE_EVERY):
            peak = max(peak, tree_usage(proc.pid, cpu))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output, _ = proc.communicate()
    seconds, busy = time.perf_counter() - start, machine_busy_seconds() - busy
    done.set()
    sampler.join()
    parts: dict[str, float] = {}
    for label, seconds_used in cpu.values():
        parts[label] = parts.get(label, 0.0) + seconds_used
    return Sample(seconds=seconds, peak_mib=peak / 2**20, returncode=proc.returncode, output=output, cpu=parts,
                  machine_cpu=busy)


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")
