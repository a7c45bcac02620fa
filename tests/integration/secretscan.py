"""Where secrets must never be in plain text, and how the tests look for them: the stack's
secrets (state and config), the places they are searched (CLI output, Ansible logs, command
lines, files others can read on the host, and every file and the journal of each node, where
only the files the roles write on purpose may hold them)."""

from __future__ import annotations

import base64
import json
import os
import stat
import threading
import time
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

import yaml

from tests.integration import nodescan
from tests.integration.local_env import ENV, ROOT, SECRET_SIG, kubectl_json, revealed, run
from tests.integration.nodesecrets import AllowedFile, allowed_files
from tests.integration.stacks import Stack


def plain_secrets(stack: Stack) -> set[str]:
    """Every secret the stack made or was given: generated passwords and the shared secret
    (their `value`), the migration private key, and the nodes' SSH key."""
    state = json.loads(stack.cli("stack", "export", "--show-secrets").stdout)
    found: set[str] = set()
    for resource in state["deployment"]["resources"]:
        outputs = resource.get("outputs", {})
        for key in ("value", "private_key"):
            value = outputs.get(key)
            if isinstance(value, dict) and SECRET_SIG in value:
                found.add(revealed(value))
    found.add(Path(ENV["OPENSTACK_NOVA_ENV"], "ssh", "id_ed25519").read_text())
    return found


def config_secrets(stack: Stack) -> set[str]:
    """The secret values of the stack config: each `secure:` value of its file, decrypted."""
    document = yaml.safe_load(stack.file.read_text())["config"]
    shown = json.loads(stack.cli("config", "--show-secrets", "--json").stdout)
    found: set[str] = set()

    def walk(raw: Any, plain: Any) -> None:
        if isinstance(raw, dict) and set(raw) == {"secure"}:
            found.add(str(plain))
        elif isinstance(raw, dict):
            for key, value in raw.items():
                walk(value, plain[key])
        elif isinstance(raw, list):
            for item, plain_item in zip(raw, plain, strict=True):
                walk(item, plain_item)

    for key, raw in document.items():
        walk(raw, shown[key].get("objectValue", shown[key]["value"]))
    return found


def needles_of(secrets: set[str]) -> set[str]:
    """What to search for: each secret; for a key, each line of its body but the first,
    which is the same format header in every OpenSSH key."""
    needles: set[str] = set()
    for value in secrets:
        if value.startswith("-----BEGIN"):
            body = [ln.strip() for ln in value.splitlines() if ln.strip() and not ln.startswith("-----")]
            needles.update(ln for ln in body[1:] if len(ln) >= 24)
        else:
            needles.add(value)
    return needles


def leaks(places: dict[str, str], needles: set[str]) -> dict[str, list[str]]:
    """Where each needle was found (its first characters only): {place: [needle...]}."""
    found = {where: sorted(n[:6] + "..." for n in needles if n in text) for where, text in places.items()}
    return {where: hits for where, hits in found.items() if hits}


def ansible_logs() -> str:
    """What every Ansible run of the session printed (the run guard keeps it, 0600)."""
    return "\n".join(p.read_text() for p in Path(ENV["OPENSTACK_NOVA_ANSIBLE_LOG_DIR"]).glob("*.log"))


# The node-side scan's source: sent through SSH's stdin with its spec appended.
_NODE_SCAN = Path(nodescan.__file__)
# A whole node's disk is read (about 1 GiB on a test node): minutes, not hours.
_NODE_SCAN_SECONDS = 900
# The runs of a node whose secret files the roles write, by service (components/edpm/services).
_RUN_SERVICES = ("nova", "neutron-metadata", "libvirt")


def node_allowed_files(stack: Stack, name: str) -> list[AllowedFile]:
    """The files node `name` may hold the stack's secrets in: those its runs' roles write on
    purpose (nodesecrets.allowed_files), from the names of each run's secret `files` in the state."""
    runs = {r["urn"].rsplit("::", 1)[-1]: r for r in stack.resources()}
    names: dict[str, list[str]] = {}
    for service in _RUN_SERVICES:
        run_state = runs.get(f"{name}-{service}")
        if run_state is not None:
            names[service] = sorted(revealed(run_state["inputs"].get("files")) or {})
    return allowed_files(names)


def node_files_holding(name: str, needles: set[str], allowed: Collection[AllowedFile] = ()) -> dict[str, list[str]]:
    """Files on node `name` (its whole disk and its journal: nodescan.py) that hold any of
    `needles` and are not among `allowed` with their mode and owner: {path (mode uid): [the
    needles' first characters]}. No secret goes into a command line: the needles travel on stdin."""
    ordered = sorted(needles)
    spec = {"needles": ordered, "allow": [list(a) for a in allowed]}
    script = _NODE_SCAN.read_text() + f"\nrun_scan({base64.b64encode(json.dumps(spec).encode()).decode()!r})\n"
    proc = run("timeout", str(_NODE_SCAN_SECONDS), str(ROOT / "devenv" / "ssh.sh"), name, "python3 -",
               input=script, check=False)
    assert proc.returncode == 0, f"the scan of {name} failed ({proc.returncode}): {proc.stderr[-2000:]}"
    found: dict[str, list[str]] = {}
    for line in proc.stdout.splitlines():
        hit = json.loads(line)
        where = hit["path"] + (f" ({hit['mode']} uid {hit['uid']})" if "mode" in hit else "")
        assert "error" not in hit, f"{name}: {where}: {hit.get('error')}"
        found[where] = [ordered[i][:6] + "..." for i in hit["hits"]]
    return found


class ArgvSampler:
    """Samples every process's command line while a run goes on."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            for proc in Path("/proc").iterdir():
                try:
                    self.seen.add((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
                except OSError:
                    continue
            time.sleep(0.05)

    def __enter__(self) -> ArgvSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def readable_files(roots: list[Path], skip: Collection[Path] = ()) -> Iterator[Path]:
    """Regular files that group or others may read, under `roots` but not under `skip`."""
    for root in roots:
        for dirpath, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if Path(dirpath, d) not in skip]
            for name in names:
                path = Path(dirpath, name)
                try:
                    info = path.lstat()
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode) and info.st_mode & 0o044 and info.st_size < 64 * 1024 * 1024:
                    yield path


def resource_state(stack: Stack, name: str) -> dict[str, Any]:
    """The state of one resource, secrets decrypted (JSON of `pulumi stack export --show-secrets`)."""
    return next(r for r in stack.resources() if r["urn"].endswith(f"::{name}"))


def stateful_pods() -> dict[str, str]:
    """Name -> uid of the pods of the stack's StatefulSets: a pod replaced has a new uid."""
    pods = kubectl_json("get", "pods", "-n", "openstack", "-l", "app.kubernetes.io/managed-by=openstack-nova")
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods["items"]
            if any(o["kind"] == "StatefulSet" for o in p["metadata"].get("ownerReferences", []))}


def secret_file(secret: str, key: str) -> str:
    """One file of a Secret of the stack's namespace, as the pods that mount it see it."""
    data = kubectl_json("get", "secret", secret, "-n", "openstack")["data"]
    return base64.b64decode(data[key]).decode()
