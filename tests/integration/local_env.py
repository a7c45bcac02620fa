"""Helpers for integration tests: they drive the real Pulumi CLI, API server
and test nodes of the local environment (`make environment` starts them)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# the test nodes the local environment starts by default (devenv/nodes.sh)
NODES = ("edpm-compute-0", "edpm-compute-1")


def _local_env() -> dict[str, str]:
    out = subprocess.run([str(ROOT / "devenv" / "env.sh")], capture_output=True, text=True, check=True).stdout
    env = dict(os.environ)
    env.pop("PULUMI_CONFIG", None)
    for line in out.splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        value = value.strip("'")
        if name == "PATH":
            value = value.replace("'\"$PATH\"", "").replace("\"$PATH\"", "").rstrip(":") + ":" + os.environ["PATH"]
        env[name] = value
    return env


ENV = _local_env()
# The toolchain's bin directory, first on the environment's PATH (devenv/env.sh).
TOOLCHAIN_BIN = ENV["PATH"].split(":")[0]


def run(
    *args: str, check: bool = True, cwd: Path | None = None, input: str | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Runs a command in the local environment (plus `env`) and returns what it printed."""
    proc = subprocess.run(list(args), cwd=cwd or ROOT, env={**ENV, **(env or {})}, capture_output=True, text=True,
                          input=input, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def pulumi(*args: str, check: bool = True, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run("pulumi", "--non-interactive", *args, check=check, cwd=cwd)


def node(name: str, command: str) -> subprocess.CompletedProcess[str]:
    return run(str(ROOT / "devenv" / "ssh.sh"), name, command, check=False)


# Each test node's cgroup tree on the host (devenv/nodes.sh); the node's systemd
# keeps a cgroup per unit in it.
NODE_CGROUPS = Path("/sys/fs/cgroup/unified/openstack-nova-nodes")


def node_unit_pids(name: str, unit: str) -> list[int]:
    """The host's pids of the processes of one systemd unit of a test node (e.g. ssh.service),
    read from the node's cgroup tree: found even when the node cannot be asked."""
    pids: list[int] = []
    for procs in sorted((NODE_CGROUPS / name).rglob(f"{unit}/cgroup.procs")):
        pids += [int(p) for p in procs.read_text().split()]
    return pids


def cluster(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """devenv/cluster.sh of the local environment, e.g. cluster("restart", "kubelet")."""
    return run(str(ROOT / "devenv" / "cluster.sh"), *args, check=check, env={"TOOLCHAIN_BIN": TOOLCHAIN_BIN})


def kubectl_json(*args: str) -> dict[str, Any]:
    return json.loads(run("kubectl", *args, "-o", "json").stdout)


def stack_output(stack: str, name: str, cwd: Path | None = None) -> Any:
    """One output of the stack, e.g. stack_output("dev", "inSync")."""
    return json.loads(pulumi("stack", "output", name, "--json", "-s", stack, cwd=cwd).stdout)


def up(stack: str, cwd: Path | None = None, refresh: bool = False, replace: Sequence[str] = ()) -> dict[str, Any]:
    """`pulumi up` (with `--replace` of each URN in `replace`) and its resource changes by kind,
    e.g. {"same": 57, "update": 1}; see `changes_of`."""
    extra = ["--refresh"] if refresh else []
    extra += [arg for urn in replace for arg in ("--replace", urn)]
    proc = pulumi("up", "--yes", "--skip-preview", "--json", *extra, "-s", stack, cwd=cwd)
    return changes_of(proc.stdout)


def changes_of(up_json: str) -> dict[str, Any]:
    """The resource changes by kind in what `pulumi up --json` printed, and the operations
    per resource under "steps": [(op, type, name)], e.g. ("update", "pulumi-python:dynamic/ansible:PlaybookRun",
    "edpm-compute-0-nova"); a replacement is ("create-replacement" | "replace" | "delete-replaced", ...)."""
    changes: dict[str, Any] = {}
    steps: list[tuple[str, str, str]] = []
    for line in up_json.splitlines():
        event = json.loads(line) if line.startswith("{") else {}
        if "summaryEvent" in event:
            changes.update(event["summaryEvent"].get("resourceChanges", {}))
        if "resOutputsEvent" in event:
            meta = event["resOutputsEvent"]["metadata"]
            urn = meta["urn"]
            steps.append((meta["op"], meta["type"], urn.rsplit("::", 1)[-1]))
    changes["steps"] = steps
    return changes


SECRET_SIG = "4dabf18193072939515e22adb298388d"


def revealed(value: Any) -> Any:
    """A value of `pulumi stack export --show-secrets`: a secret keeps its JSON in `plaintext`."""
    if isinstance(value, dict) and SECRET_SIG in value:
        return json.loads(value["plaintext"])
    return value


def openstack(*args: str, namespace: str = "openstack", want_json: bool = True) -> Any:
    """The openstack CLI in the environment's openstackclient pod (admin of cloud `default`), as JSON
    (want_json=False: for commands that print no table, its output as text)."""
    fmt = ("-f", "json") if want_json else ()
    proc = run("kubectl", "exec", "-n", namespace, "deploy/openstackclient", "--", "openstack", *args, *fmt)
    return json.loads(proc.stdout or "null") if want_json else proc.stdout


def in_client(namespace: str, script: str) -> Any:
    """A Python script in the openstackclient pod (admin of cloud `default`); what it prints, as JSON."""
    proc = run("kubectl", "exec", "-n", namespace, "deploy/openstackclient", "--", "python3", "-c", script)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def nova_manage(*args: str, namespace: str = "openstack") -> str:
    """nova-manage in the superconductor, with the config the pod runs with."""
    return run("kubectl", "exec", "-n", namespace, "nova-cell0-conductor-0", "--",
               "nova-manage", "--config-dir", "/etc/nova/nova.conf.d", *args).stdout
