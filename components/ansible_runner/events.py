"""A run's events as Ansible reports them to the runner: one JSON object per line, written by
the project's callback (ansible/callback_plugins/openstack_nova_events.py) to the file that
EVENTS names.

`play` and `task` (with `handler`) as they start; `result` per host and task (`status`: ok,
changed, skipped, failed or unreachable; `ignored`; for a failure `msg`, `rc`, `stderr`,
`stdout`, the failed `items`, or `censored` for a task with no_log); `stats`, the recap per
host. Each has its `time` (seconds since the epoch).

The run guard reads them as they come: for the progress lines of a run and, at its end, a
summary of where it got to and what failed (`summarize`), which it hands to the provider.
Standard library only: the guard imports it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

EVENTS = "OPENSTACK_NOVA_EVENTS"  # the events file of a run, for the callback
CALLBACK = "openstack_nova_events"
# A file the guard appends a run's progress lines to (devenv/up.sh shows it during `make up`).
PROGRESS = "OPENSTACK_NOVA_PROGRESS"
_STATS = ("ok", "changed", "unreachable", "failures", "skipped", "rescued", "ignored")


class EventFile:
    """The events of one run read as they are appended: each call of `new` returns the
    complete lines written since the last one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._partial = b""

    def new(self) -> list[dict[str, Any]]:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self._offset)
                data = handle.read()
        except FileNotFoundError:
            return []
        self._offset += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        events = []
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # not the callback's: nothing to read in it
            if isinstance(event, dict):
                events.append(event)
        return events


def summarize(events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Where a run got to and how it ended: the play and task it last started, the failure
    that stopped it (the last one not ignored: its play, task, whether the node was
    unreachable, and what the module said), and its recap summed over its hosts (None when
    Ansible did not get to it)."""
    play: str | None = None
    task: str | None = None
    failure: dict[str, Any] | None = None
    stats: dict[str, int] | None = None
    for event in events:
        kind = event.get("event")
        if kind == "play":
            play, task = event.get("name"), None
        elif kind == "task":
            task = event.get("name")
        elif kind == "result" and event.get("status") in ("failed", "unreachable") and not event.get("ignored"):
            failure = {"play": play, "task": event.get("task", task), "host": event.get("host"),
                       "unreachable": event.get("status") == "unreachable",
                       **{k: event[k] for k in ("msg", "rc", "stderr", "stdout", "items", "censored") if k in event}}
        elif kind == "stats":
            hosts = event.get("hosts") or {}
            stats = {key: sum(int(h.get(key, 0)) for h in hosts.values()) for key in _STATS}
    return {"play": play, "task": task, "failure": failure, "stats": stats}


def _stamp(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


class Progress:
    """The progress lines of one run: its node and service, each play and task as it starts
    and ends, with how long it took."""

    def __init__(self, node: str, playbook: str, check: bool = False) -> None:
        service = Path(playbook).stem + (" (check)" if check else "")
        self.prefix = f"{node} {service}"
        self.started = time.time()
        self._play: tuple[str, float] | None = None
        self._task: tuple[str, float] | None = None

    def line(self, text: str, at: float | None = None) -> str:
        return f"{_stamp(time.time() if at is None else at)} {self.prefix}: {text}\n"

    def start(self) -> str:
        return self.line("started")

    def _end_play(self, at: float) -> list[str]:
        if self._play is None:
            return []
        name, began = self._play
        self._play = None
        return [self.line(f"play '{name}' done ({at - began:.1f}s)", at)]

    def of(self, event: Mapping[str, Any]) -> list[str]:
        """The lines an event makes (none for most results of a task already started)."""
        kind, at = event.get("event"), float(event.get("time") or time.time())
        if kind == "play":
            lines = self._end_play(at)
            self._play = (str(event.get("name")), at)
            return [*lines, self.line(f"play '{event.get('name')}'", at)]
        if kind == "task":
            what = "handler" if event.get("handler") else "task"
            self._task = (f"{what} '{event.get('name')}'", at)
            return [self.line(f"{self._task[0]} ...", at)]
        if kind == "result":
            name, began = self._task or (f"task '{event.get('task')}'", at)
            status = str(event.get("status"))
            if event.get("ignored"):
                status += ", ignored"
            return [self.line(f"{name}: {status} ({at - began:.1f}s)", at)]
        if kind == "stats":
            return self._end_play(at)
        return []

    def end(self, outcome: Mapping[str, Any]) -> str:
        """The run's last line: how it ended, its recap, how long it took in all."""
        took = f"{time.time() - self.started:.1f}s"
        stats = (outcome.get("run") or {}).get("stats")
        recap = f": ok={stats['ok']} changed={stats['changed']}" if stats else ""
        kind = outcome.get("outcome")
        if kind == "done" and outcome.get("exit") == 0:
            return self.line(f"done in {took}{recap}")
        if kind == "done":
            return self.line(f"failed in {took} (exit {outcome.get('exit')}){recap}")
        return self.line(f"ended in {took}: {kind}")
