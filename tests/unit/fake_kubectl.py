"""A stand-in kubectl for devenv/dataplane's start and status: it logs each call (one JSON line
per argv in calls.jsonl beside it), takes what is applied (so the workloads exist afterwards)
and answers the reads deploy.py makes from a state file (state.json beside it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCRIPT = r'''#!/usr/bin/env python3
import json, sys
from pathlib import Path
here = Path(__file__).resolve().parent
args = [a for a in sys.argv[1:] if not a.startswith(("--kubeconfig=", "--request-timeout="))]
with open(here / "calls.jsonl", "a") as f:
    f.write(json.dumps(args) + "\n")
state = json.loads((here / "state.json").read_text())
def out(obj):
    print(json.dumps(obj))
    sys.exit(0)
if args[0] == "apply":
    if "-" in args:
        sys.stdin.read()
    state["applied"] = True
    (here / "state.json").write_text(json.dumps(state))
    sys.exit(0)
if args[0] in ("wait", "rollout", "delete", "logs"):
    sys.exit(0)
if args[0] == "get":
    if args[1] == "nodes":
        out({"items": [{"metadata": {"name": "openstack-nova-node", "labels": state.get("node_labels", {})}}]})
    if args[1] == "service":
        out({"status": {"loadBalancer": {"ingress": [{"ip": a} for a in state.get("ingress", [])]}}})
    if args[1] == "servicel2statuses":
        out({"items": [{"status": {"interfaces": [{"name": i} for i in state.get("announced", [])]}}]})
    if args[1] == "pods":
        out({"items": []})
    if args[1] == "-n" and state.get("applied"):
        kind = args[3].split("/")[0]
        if kind == "daemonset":
            out({"kind": "DaemonSet", "status": {"desiredNumberScheduled": 1, "numberReady": 1}})
        out({"kind": "Deployment", "spec": {"replicas": 1}, "status": {"readyReplicas": 1}})
sys.stderr.write("Error from server (NotFound): not found\n")
sys.exit(1)
'''


def install(bin_dir: Path, **state: Any) -> Path:
    """kubectl in bin_dir, with its state; returns the calls log."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    kubectl = bin_dir / "kubectl"
    kubectl.write_text(SCRIPT)
    kubectl.chmod(0o755)
    (bin_dir / "state.json").write_text(json.dumps(state))
    return bin_dir / "calls.jsonl"


def calls(log: Path) -> list[list[str]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]
