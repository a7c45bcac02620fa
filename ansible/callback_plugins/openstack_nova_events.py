"""Ansible's account of a run as the project's runner reads it: one JSON object per line.

Enabled by the runner only (ANSIBLE_CALLBACKS_ENABLED, components/ansible_runner/playbook.py),
beside the usual text output, which still goes to the run's log. The runner's reading of
these lines is components/ansible_runner/events.py.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: openstack_nova_events
type: notification
short_description: Writes each event of a run as one JSON line, for the openstack-nova runner
description:
  - Appends one JSON object per line to the file that OPENSTACK_NOVA_EVENTS names - plays and
    tasks as they start, each host's result of a task, and the recap.
  - A result of a task with no_log is written censored, without its output or items.
options:
  path:
    description: The file the events are appended to; nothing is written without it.
    type: path
    env:
      - name: OPENSTACK_NOVA_EVENTS
"""

# The most of a module's message or output kept per result: enough to say why it failed.
KEEP = 2000
CENSORED = "the output has been hidden due to the fact that 'no_log: true' was specified for this result"


def _tail(value: Any) -> str | None:
    if value in (None, ""):
        return None
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text[-KEEP:]


def _head(value: Any) -> str | None:
    if value in (None, ""):
        return None
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text[:KEEP]


def _censored(result: Any) -> bool:
    task = result.task
    return bool((isinstance(task.no_log, bool) and task.no_log) or result.result.get("_ansible_no_log")
                or "censored" in result.result)


def _failed_items(data: dict[str, Any]) -> list[dict[str, Any]]:
    items = []
    for item in data.get("results") or []:
        if not isinstance(item, dict) or not (item.get("failed") or item.get("unreachable")):
            continue
        if item.get("_ansible_no_log") or "censored" in item:
            items.append({"censored": True, "msg": CENSORED})
            continue
        label = item.get("_ansible_item_label", item.get("item"))
        fields = {"item": _head(label), "msg": _head(item.get("msg")), "rc": item.get("rc"),
                  "stderr": _tail(item.get("stderr"))}
        items.append({k: v for k, v in fields.items() if v is not None})
    return items


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "openstack_nova_events"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._path: str | None = None
        self._task: str | None = None

    def set_options(self, task_keys: Any = None, var_options: Any = None, direct: Any = None) -> None:
        super().set_options(task_keys=task_keys, var_options=var_options, direct=direct)
        self._path = self.get_option("path") or os.environ.get("OPENSTACK_NOVA_EVENTS") or None

    def _write(self, event: str, **fields: Any) -> None:
        if not self._path:
            return
        line = json.dumps({"event": event, "time": round(time.time(), 3), **fields}, default=str)
        # one write per line, appended: a reader never sees half of one
        fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)

    def v2_playbook_on_play_start(self, play: Any) -> None:
        self._write("play", name=play.get_name().strip())

    def v2_playbook_on_task_start(self, task: Any, is_conditional: Any) -> None:
        self._task = task.get_name().strip()
        self._write("task", name=self._task, handler=False)

    def v2_playbook_on_handler_task_start(self, task: Any) -> None:
        self._task = task.get_name().strip()
        self._write("task", name=self._task, handler=True)

    def _result(self, status: str, result: Any, ignored: bool = False) -> None:
        fields: dict[str, Any] = {"status": status, "host": result.host.get_name(),
                                  "task": result.task.get_name().strip()}
        if ignored:
            fields["ignored"] = True
        if status in ("failed", "unreachable"):
            if _censored(result):
                fields.update(censored=True, msg=CENSORED)
            else:
                data = result.result
                fields.update(msg=_head(data.get("msg")), rc=data.get("rc"), stderr=_tail(data.get("stderr")),
                              stdout=_tail(data.get("stdout")), items=_failed_items(data))
                if not fields["msg"] and data.get("exception"):
                    fields["msg"] = _tail(data["exception"])
        self._write("result", **{k: v for k, v in fields.items() if v not in (None, [])})

    def v2_runner_on_ok(self, result: Any) -> None:
        self._result("changed" if result.result.get("changed") else "ok", result)

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False) -> None:
        self._result("failed", result, ignored=ignore_errors)

    def v2_runner_on_unreachable(self, result: Any) -> None:
        self._result("unreachable", result)

    def v2_runner_on_skipped(self, result: Any) -> None:
        self._result("skipped", result)

    def v2_playbook_on_stats(self, stats: Any) -> None:
        self._write("stats", hosts={host: stats.summarize(host) for host in sorted(stats.processed)})
