"""nova-compute on the test nodes, seen as an operator sees it: the nova_compute
container its Quadlet unit runs (podman, under systemd), the option values the
process dumped as it started, and its service record in nova."""

from __future__ import annotations

import re
import shlex
import subprocess
import time
from collections.abc import Callable
from typing import Any, TypeVar

from tests.integration.local_env import node, nova_manage, openstack

CONTAINER = "nova_compute"
UNIT = "edpm_nova_compute.service"

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


def container(name: str) -> dict[str, str] | None:
    """The running nova_compute container of the node: its id, image, start time and main
    pid (the node's), None when none runs."""
    fmt = "{{.State.Running}} {{.Id}} {{.ImageName}} {{.State.StartedAt.UnixNano}} {{.State.Pid}}"
    out = node(name, f"podman inspect --type container --format '{fmt}' {CONTAINER} 2>/dev/null").stdout.split()
    if len(out) != 5 or out[0] != "true":
        return None
    return {"id": out[1], "image": out[2], "started": out[3], "pid": out[4]}


def in_compute(name: str, command: str) -> subprocess.CompletedProcess[str]:
    """`command` (sh) in the node's running nova_compute container, as its user (nova)."""
    return node(name, f"podman exec {CONTAINER} sh -c {shlex.quote(command)}")


def compute_process(name: str) -> tuple[int, str, str] | None:
    """(pid, user, command) of nova-compute in the node's nova_compute container (the
    container shares the node's pid namespace), None when none runs."""
    running = container(name)
    if running is None:
        return None
    out = node(name, f"ps -o pid=,user=,args= -p {running['pid']}").stdout.strip()
    if "nova-compute" not in out:
        return None
    pid, user, args = out.split(None, 2)
    return int(pid), user, args


def option_dump(name: str, option: str) -> list[str]:
    """The values of `option` (e.g. `libvirt.cpu_mode`) in the start-up dump of the
    nova-compute process running now on the node (debug logging, which podman's journald
    log driver keeps), oldest first; [] when none runs or it has not dumped yet."""
    running = container(name)
    if running is None:
        return []
    # <date> <time> <pid> DEBUG nova.cmd.compute [-] libvirt.cpu_mode   = custom log_opt_values ...
    # (nova 27 dumps from oslo_service.service, in a request's context: [None req-... - - - - - -])
    line = re.compile(rf"^\S+ \S+ {running['pid']} DEBUG \S+ \[[^]]*\] {re.escape(option)}\s+= (.*) log_opt_values ",
                      re.M)
    return line.findall(node(name, f"journalctl --no-pager -o cat CONTAINER_ID_FULL={running['id']}").stdout)


def compute_services(namespace: str = "openstack") -> dict[str, dict[str, Any]]:
    """nova-compute service records by host, through nova-api."""
    listed = openstack("compute", "service", "list", "--service", "nova-compute", namespace=namespace)
    return {s["Host"]: s for s in listed}


def mapped_hosts(namespace: str = "openstack") -> dict[str, str]:
    """host -> cell of `nova-manage cell_v2 list_hosts` in a stack's superconductor."""
    table = nova_manage("cell_v2", "list_hosts", namespace=namespace)
    # | Cell Name | Cell UUID | Hostname |
    return {cells[3]: cells[1] for line in table.splitlines()
            if len(cells := [c.strip() for c in line.split("|")]) > 4 and cells[1] != "Cell Name"}
