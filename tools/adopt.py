"""Adopts what a deployment made by the operators left on the cluster into a stack.

nova-operator and its neighbours created the Namespace and Secrets this
program declares under the same names (nova-api-config-data,
nova-cell1-compute-config, ...). Instead of recreating them, a new stack takes
them over with `pulumi import`, and its first `pulumi up` changes them in
place to what the program renders.

    tools/adopt.py -s STACK [--kind Secret --kind Namespace ...] [--yes]

It previews the stack (the program decides which objects it would create),
keeps those of the chosen kinds that exist on the stack's cluster, writes an
import file for them (`adopt-STACK.json`, with the components and provider
they hang from) and runs `pulumi import --file` on it. Needs `pulumi` and
`kubectl` on PATH with the stack's backend and passphrase, as `pulumi up` does.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROG = "adopt"
SUMMARY = "Adopts the Namespace and Secrets an operator-made deployment left on the cluster into a stack."
ROOT_STACK_TYPE = "pulumi:pulumi:Stack"
DEFAULT_KINDS = ("Namespace", "Secret")
# Kinds without a namespace, among those worth adopting.
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "PersistentVolume", "StorageClass",
                  "CustomResourceDefinition"}


@dataclass(frozen=True)
class Candidate:
    """An object the program would create: its URN and where it is on the cluster."""

    urn: str
    kind: str
    namespace: str | None
    name: str
    declared: frozenset[str] = frozenset()  # the inputs the program sets (top-level keys)

    @property
    def import_id(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


class AdoptError(Exception):
    pass


def kind_of(resource_type: str) -> str | None:
    """`Secret` for kubernetes:core/v1:Secret; None for anything not a Kubernetes object."""
    package, _, rest = resource_type.partition(":")
    return rest.rpartition(":")[2] if package == "kubernetes" and ":" in rest else None


def candidates(steps: Iterable[dict[str, Any]], kinds: set[str]) -> list[Candidate]:
    """The creates of a `pulumi preview --json` whose kind is one of `kinds`."""
    found = []
    for step in steps:
        state = step.get("newState") or {}
        kind = kind_of(str(state.get("type", "")))
        if step.get("op") != "create" or kind not in kinds:
            continue
        meta = (state.get("inputs") or {}).get("metadata") or {}
        name = meta.get("name")
        if not isinstance(name, str):
            raise AdoptError(f"{step['urn']} has no known metadata.name in the preview; give it a fixed name")
        namespace = None if kind in CLUSTER_SCOPED else str(meta.get("namespace") or "default")
        found.append(Candidate(str(step["urn"]), kind, namespace, name, frozenset(state.get("inputs") or {})))
    return found


def trim_inputs(deployment: dict[str, Any], adopted: Iterable[Candidate]) -> bool:
    """Drops from each adopted object's recorded inputs what the program does not set.
    The import records every field the cluster reports (a Secret's defaulted `type`
    among them), and the provider would read a field the program leaves out as removed:
    for `type`, a replacement instead of an update in place. True if anything changed."""
    declared = {c.urn: c.declared for c in adopted}
    changed = False
    for resource in deployment.get("resources", []):
        keep = declared.get(resource.get("urn"))
        if not keep:
            continue
        for recorded in (resource.get("inputs") or {}, (resource.get("outputs") or {}).get("__inputs") or {}):
            for key in [k for k in recorded if k not in keep]:
                del recorded[key]
                changed = True
    return changed


def _qualified_type(urn: str) -> str:
    return urn.split("::")[2]


def entry_urns(import_file: dict[str, Any], stack: str, project: str) -> dict[str, str]:
    """The URN each entry of a `pulumi preview --import-file` file stands for, by entry name."""
    entries = {e["name"]: e for e in import_file.get("resources", [])}
    table: dict[str, str] = dict(import_file.get("nameTable") or {})
    urns: dict[str, str] = {}

    def urn_of(name: str) -> str:
        if name in urns:
            return urns[name]
        if name not in entries:
            if name not in table:
                raise AdoptError(f"the import file names no resource '{name}'")
            return table[name]
        entry = entries[name]
        qualified = entry["type"]
        if entry.get("parent"):
            parent = _qualified_type(urn_of(entry["parent"]))
            if parent != ROOT_STACK_TYPE:
                qualified = f"{parent}${qualified}"
        urns[name] = f"urn:pulumi:{stack}::{project}::{qualified}::{entry.get('logicalName') or name}"
        return urns[name]

    for name in entries:
        urn_of(name)
    return urns


def select(import_file: dict[str, Any], adopt: dict[str, Candidate], stack: str,
           project: str) -> dict[str, Any]:
    """The import file cut down to the objects to adopt (by URN), with their IDs,
    and the components and providers they hang from."""
    urns = entry_urns(import_file, stack, project)
    entries = {e["name"]: e for e in import_file.get("resources", [])}
    keep: set[str] = set()

    def hold(name: str) -> None:
        if name in keep or name not in entries:
            return
        keep.add(name)
        for ref in ("parent", "provider"):
            if entries[name].get(ref):
                hold(entries[name][ref])

    for name, urn in urns.items():
        if urn in adopt:
            hold(name)
    resources = []
    for entry in import_file.get("resources", []):
        if entry["name"] not in keep:
            continue
        entry = dict(entry)
        if urns[entry["name"]] in adopt:
            entry["id"] = adopt[urns[entry["name"]]].import_id
        elif entry.get("id"):
            raise AdoptError(f"{urns[entry['name']]} holds an object to adopt but is not adopted itself")
        resources.append(entry)
    return {**({"nameTable": import_file["nameTable"]} if import_file.get("nameTable") else {}),
            "resources": resources}


# ---- the commands it runs ------------------------------------------------------

def _run(argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=ROOT)
    if check and proc.returncode != 0:
        raise AdoptError(f"`{' '.join(argv)}` failed:\n{proc.stderr.strip() or proc.stdout.strip()}")
    return proc


def _kubectl_target(stack: str) -> list[str]:
    """kubectl flags for the cluster the stack's config names (`kubernetes.kubeconfig`, `.context`)."""
    proc = _run(["pulumi", "config", "get", "kubernetes", "--json", "-s", stack], check=False)
    config: dict[str, Any] = {}
    if proc.returncode == 0:
        config = json.loads(proc.stdout).get("objectValue") or {}
    if str(config.get("mode", "")).lower() == "render":
        raise AdoptError(f"stack {stack} renders manifests (kubernetes.mode: render): "
                         "there is no cluster to adopt from")
    flags = []
    if config.get("kubeconfig"):
        flags += ["--kubeconfig", os.path.expanduser(os.path.expandvars(str(config["kubeconfig"])))]
    if config.get("context"):
        flags += ["--context", str(config["context"])]
    return flags


def exists_on_cluster(target: list[str]) -> Callable[[Candidate], bool]:
    def exists(candidate: Candidate) -> bool:
        where = ["-n", candidate.namespace] if candidate.namespace else []
        proc = _run(["kubectl", *target, "get", candidate.kind.lower(), candidate.name, *where,
                     "-o", "name", "--ignore-not-found"], check=False)
        if proc.returncode != 0:
            raise AdoptError(f"kubectl cannot read {candidate.kind} {candidate.import_id}: {proc.stderr.strip()}")
        return bool(proc.stdout.strip())
    return exists


def _write_private(path: Path, text: str) -> None:
    # The provider's inputs are in it, secrets encrypted: readable by the user only all the same.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def _project_name() -> str:
    for line in (ROOT / "Pulumi.yaml").read_text().splitlines():
        if line.startswith("name:"):
            return line.partition(":")[2].strip()
    raise AdoptError("Pulumi.yaml names no project")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=SUMMARY)
    parser.add_argument("-s", "--stack", required=True)
    parser.add_argument("--kind", action="append", help=f"a kind to adopt (default: {', '.join(DEFAULT_KINDS)})")
    parser.add_argument("--file", type=Path, help="where to write the import file (default: adopt-STACK.json)")
    parser.add_argument("--yes", action="store_true", help="import without asking")
    args = parser.parse_args(argv)
    out = args.file or ROOT / f"adopt-{args.stack}.json"
    try:
        target = _kubectl_target(args.stack)
        with tempfile.TemporaryDirectory() as scratch:
            plan = Path(scratch) / "import.json"
            preview = _run(["pulumi", "preview", "--json", "-s", args.stack, "--import-file", str(plan)])
            import_file = json.loads(plan.read_text())
        found = candidates(json.loads(preview.stdout).get("steps", []), set(args.kind or DEFAULT_KINDS))
        exists = exists_on_cluster(target)
        adopt = {c.urn: c for c in found if exists(c)}
        for c in found:
            print(f"{'adopt ' if c.urn in adopt else 'create'}  {c.kind} {c.import_id}")
        if not adopt:
            print(f"{PROG}: nothing of stack {args.stack} exists on its cluster yet; `pulumi up` creates it all")
            return 0
        selected = select(import_file, adopt, args.stack, _project_name())
        _write_private(out, json.dumps(selected, indent=2) + "\n")
    except AdoptError as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return 1
    print(f"{PROG}: wrote {out}; importing {len(adopt)} object(s) into stack {args.stack}")
    # Adopted objects are the program's from now on: not protected, and no code to paste
    # (the CLI cannot write code for an import file that declares a provider anyway).
    command = ["pulumi", "import", "-s", args.stack, "--file", str(out), "--protect=false", "--generate-code=false"]
    if args.yes:
        command += ["--yes", "--skip-preview"]
    status = subprocess.run(command, cwd=ROOT, check=False).returncode
    if status != 0:
        return status
    try:
        _trim_state(args.stack, adopt.values())
    except AdoptError as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return 1
    return 0


def _trim_state(stack: str, adopted: Iterable[Candidate]) -> None:
    state = json.loads(_run(["pulumi", "stack", "export", "-s", stack]).stdout)
    if not trim_inputs(state.get("deployment") or {}, adopted):
        return
    with tempfile.TemporaryDirectory() as scratch:
        trimmed = Path(scratch) / "state.json"
        _write_private(trimmed, json.dumps(state))
        _run(["pulumi", "stack", "import", "-s", stack, "--file", str(trimmed)])
    print(f"{PROG}: recorded only the inputs the program sets for the adopted objects")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
