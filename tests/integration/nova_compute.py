"""nova-compute on the test nodes, seen as an operator sees it: the process its
supervisor runs, the option values that process dumped as it started, and its
service record in nova."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any, TypeVar

from tests.integration.local_env import node, openstack

# the edpm_nova role's defaults (kolla_set_configs mode)
SUPERVISOR = "/var/lib/kolla/nova-compute-supervisor.sh"
PID_FILE = "/run/node-private/nova-compute-supervisor.pid"
LOG_FILE = "/var/log/nova/nova-compute.log"

T = TypeVar("T")


def eventually(probe: Callable[[], T], ok: Callable[[T], bool], seconds: float = 90, interval: float = 3) -> T:
    """`probe()` once `ok` holds of it (asked every `interval` seconds); its last value (for
    the assertion) after `seconds`."""
    deadline = time.time() + seconds
    while True:
        value = probe()
        if ok(value) or time.time() > deadline:
            return value
        time.sleep(interval)


def compute_process(name: str) -> tuple[int, str, str] | None:
    """(pid, user, command) of the command the node's supervisor runs, None when none runs."""
    out = node(name, f"ps -o pid=,user=,args= --ppid \"$(cat {PID_FILE} 2>/dev/null || echo 0)\"").stdout
    for line in out.splitlines():
        pid, user, args = line.split(None, 2)
        if "nova-compute" in args:
            return int(pid), user, args
    return None


def option_dump(name: str, option: str) -> list[str]:
    """The values of `option` (e.g. `libvirt.cpu_mode`) in the start-up dump of the
    nova-compute process running now on the node (debug logging), oldest first;
    [] when none runs or it has not dumped yet."""
    process = compute_process(name)
    if process is None:
        return []
    # <date> <time> <pid> DEBUG nova.cmd.compute [-] libvirt.cpu_mode   = custom log_opt_values ...
    line = re.compile(rf"^\S+ \S+ {process[0]} DEBUG \S+ \[-\] {re.escape(option)}\s+= (.*) log_opt_values ", re.M)
    # the supervisor keeps one rotated log, LOG_FILE.1
    return line.findall(node(name, f"cat {LOG_FILE}.1 {LOG_FILE} 2>/dev/null").stdout)


def compute_services(namespace: str = "openstack") -> dict[str, dict[str, Any]]:
    """nova-compute service records by host, through nova-api."""
    listed = openstack("compute", "service", "list", "--service", "nova-compute", namespace=namespace)
    return {s["Host"]: s for s in listed}
