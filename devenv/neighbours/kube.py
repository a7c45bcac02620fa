"""kubectl, as the neighbours use it: server-side apply from stdin, waits that fail fast, clean-up.

Manifests always go through stdin (they hold Secrets); nothing secret is
ever an argument or printed.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from .render import MANAGED_BY, MANAGED_BY_LABEL, Obj

FIELD_MANAGER = "openstack-nova-devenv"
MANAGED_KINDS = "deployments.apps,statefulsets.apps,jobs.batch,services,secrets"
SELECTOR = f"{MANAGED_BY_LABEL}={MANAGED_BY}"
# Waiting reasons no retry mends: fail at once instead of at the timeout.
PULL_REASONS = frozenset({"ErrImageNeverPull", "ErrImagePull", "ImagePullBackOff"})
FATAL_REASONS = PULL_REASONS | {
    "InvalidImageName", "CreateContainerConfigError", "CreateContainerError", "RunContainerError",
}
CRASH_RESTARTS = 2  # a container that crashed this often is reported, not waited for
LOG_LINES = 20


class WaitError(Exception):
    """An object did not become ready: `line` names it, `log` is its pod's last lines."""

    def __init__(self, line: str, log: str = "") -> None:
        self.line = line
        self.log = log
        super().__init__(line)


@dataclass(frozen=True)
class PodState:
    name: str
    owner: str  # the object the pod belongs to, e.g. deployment/keystone
    problem: str | None  # a reason to stop waiting, e.g. "CrashLoopBackOff (2 restarts)"
    created: str


class Kubectl:
    def __init__(self, namespace: str) -> None:
        self.namespace = namespace

    def run(self, *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(["kubectl", "-n", self.namespace, *args], input=stdin, capture_output=True,
                              text=True, check=False)
        if check and done.returncode != 0:
            raise RuntimeError(f"kubectl {args[0]} failed: {_last_line(done.stderr)}")
        return done

    def get_json(self, *args: str) -> dict[str, Any] | None:
        done = self.run("get", *args, "-o", "json", check=False)
        if done.returncode != 0:
            return None
        data: dict[str, Any] = json.loads(done.stdout)
        return data

    def ensure_namespace(self) -> bool:
        """Creates the namespace if missing (never applied: the program's Namespace adopts it)."""
        found = self.run("get", "namespace", self.namespace, check=False)
        if found.returncode == 0:
            return False
        if "NotFound" not in found.stderr:
            raise RuntimeError(f"kubectl get namespace failed: {_last_line(found.stderr)}")
        self.run("create", "namespace", self.namespace)
        return True

    def apply(self, objects: Sequence[Obj]) -> None:
        self.run("apply", "--server-side", f"--field-manager={FIELD_MANAGER}", "--force-conflicts", "-f", "-",
                 stdin=yaml.safe_dump_all(objects, sort_keys=False))

    def versions(self) -> dict[str, str]:
        """kind/name -> resourceVersion of every managed object."""
        data = self.get_json(MANAGED_KINDS, "-l", SELECTOR) or {"items": []}
        return {f"{i['kind']}/{i['metadata']['name']}": i["metadata"]["resourceVersion"] for i in data["items"]}

    def prune(self, keep: Iterable[str]) -> list[str]:
        """Deletes managed objects not in `keep` (kind/name): old Jobs, a removed cell's instance."""
        stale = sorted(set(self.versions()) - set(keep))
        if stale:
            self.run("delete", "--wait=false", *stale)
        return stale

    def delete_all(self, timeout: int) -> None:
        self.run("delete", MANAGED_KINDS, "-l", SELECTOR, "--cascade=foreground", f"--timeout={timeout}s",
                 "--ignore-not-found")
        self.run("wait", "--for=delete", "pod", "-l", SELECTOR, f"--timeout={timeout}s", check=False)

    # ---- waiting --------------------------------------------------------------------------

    def pods(self, selector: Mapping[str, str] | None = None) -> list[PodState]:
        """The live pods of `selector` (every managed pod without one), newest first."""
        text = ",".join(f"{k}={v}" for k, v in sorted(selector.items())) if selector else SELECTOR
        data = self.get_json("pods", "-l", text) or {"items": []}
        states = [
            PodState(p["metadata"]["name"], _owner(p), _pod_problem(p), p["metadata"]["creationTimestamp"])
            for p in data["items"] if not p["metadata"].get("deletionTimestamp")
        ]
        return sorted(states, key=lambda s: s.created, reverse=True)

    def log_tail(self, pod: str) -> str:
        done = self.run("logs", pod, f"--tail={LOG_LINES}", "--all-containers", check=False)
        text = done.stdout.strip()
        if not text:  # a crashed container: what it said before it died
            text = self.run("logs", pod, f"--tail={LOG_LINES}", "--previous", check=False).stdout.strip()
        return text  # nothing when the container never started

    def _fail(self, what: str, reason: str, pods: list[PodState]) -> WaitError:
        if not pods:
            return WaitError(f"{what}: {reason} (no pod)")
        return WaitError(f"{what}: {reason} (pod {pods[0].name})", self.log_tail(pods[0].name))

    def _check_pods(self) -> None:
        """Fails at once when any neighbour's pod cannot get ready, not only the awaited one."""
        for pod in self.pods():
            if pod.problem:
                raise self._fail(pod.owner, pod.problem, [pod])

    def wait_rollout(self, kind: str, name: str, selector: Mapping[str, str], timeout: float) -> None:
        what = f"{kind.lower()}/{name}"
        deadline = time.monotonic() + timeout
        while True:
            done = self.run("rollout", "status", what, "--timeout=5s", check=False)
            if done.returncode == 0:
                return
            self._check_pods()
            if time.monotonic() > deadline:
                raise self._fail(what, f"not ready after {timeout:.0f}s", self.pods(selector))

    def wait_job(self, name: str, timeout: float) -> None:
        what = f"job/{name}"
        deadline = time.monotonic() + timeout
        selector = {"job-name": name}
        while True:
            job = self.get_json("job", name)
            conditions = {c["type"]: c for c in (job or {}).get("status", {}).get("conditions", [])
                          if c.get("status") == "True"}
            if "Complete" in conditions:
                return
            if "Failed" in conditions:
                raise self._fail(what, f"failed: {conditions['Failed'].get('reason', 'Failed')}", self.pods(selector))
            self._check_pods()
            if time.monotonic() > deadline:
                raise self._fail(what, f"not complete after {timeout:.0f}s", self.pods(selector))
            time.sleep(1)

    def wait_load_balancer(self, name: str, timeout: float) -> str:
        """The address MetalLB gave the LoadBalancer Service `name` (the data plane's DNS names
        it only then, and the nodes reach nothing else)."""
        deadline = time.monotonic() + timeout
        while True:
            addresses = ingress_addresses(self.get_json("service", name) or {})
            if addresses:
                return ", ".join(addresses)
            if time.monotonic() > deadline:
                raise WaitError(f"MetalLB assigned no address to Service {name} in {timeout:.0f} s: "
                                "is MetalLB running (make status)?")
            time.sleep(1)


def ingress_addresses(service: Mapping[str, Any]) -> list[str]:
    """The LoadBalancer addresses in a Service's status (none until one is assigned)."""
    ingress = service.get("status", {}).get("loadBalancer", {}).get("ingress") or []
    return [i.get("ip") or i.get("hostname") for i in ingress if i.get("ip") or i.get("hostname")]


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def _owner(pod: Mapping[str, Any]) -> str:
    meta = pod["metadata"]
    refs = meta.get("ownerReferences") or [{"kind": "Pod", "name": meta["name"]}]
    kind, name = refs[0]["kind"], refs[0]["name"]
    if kind == "ReplicaSet":  # a Deployment's pods: name the Deployment
        kind, name = "Deployment", meta.get("labels", {}).get("app.kubernetes.io/instance", name)
    return f"{kind.lower()}/{name}"


def _pod_problem(pod: Mapping[str, Any]) -> str | None:
    """Why waiting for this pod is pointless, or None."""
    status = pod.get("status", {})
    for container in status.get("containerStatuses", []) + status.get("initContainerStatuses", []):
        waiting = container.get("state", {}).get("waiting") or {}
        reason = waiting.get("reason", "")
        if reason in PULL_REASONS:  # there is no registry: the image must be imported
            return f"{reason}: the node has no image {container.get('image')} (devenv/images.sh import)"
        if reason in FATAL_REASONS:
            return f"{reason}: {waiting.get('message', '')}".rstrip(": ")
        restarts = int(container.get("restartCount", 0))
        if reason == "CrashLoopBackOff" and restarts >= CRASH_RESTARTS:
            return f"CrashLoopBackOff ({restarts} restarts)"
    for condition in status.get("conditions", []):
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "Unschedulable":
            return f"unschedulable: {condition.get('message', '')}"
    return None
