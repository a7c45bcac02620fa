"""No secret in plain text: not in state, preview or up output, Ansible output,
any process's argv during a run, or any file on the host that others can read."""

from __future__ import annotations

import json
import os
import secrets
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from tests.integration.local_env import ENV, ROOT, SECRET_SIG, pulumi, revealed
from tests.integration.stacks import Stack

NODE0 = "dataplane.nodeSets.edpm-compute.nodes.edpm-compute-0.customServiceConfig.nova"
SNIPPET_SECRET = "fixed-key-" + secrets.token_hex(12)


def _plain_secrets(stack: str) -> set[str]:
    """Every secret the stack made or was given: generated passwords and the shared secret
    (their `value`), the migration private key, and the nodes' SSH key."""
    state = json.loads(pulumi("stack", "export", "--show-secrets", "-s", stack).stdout)
    found: set[str] = set()
    for resource in state["deployment"]["resources"]:
        outputs = resource.get("outputs", {})
        for key in ("value", "private_key"):
            value = outputs.get(key)
            if isinstance(value, dict) and SECRET_SIG in value:
                found.add(revealed(value))
    found.add(Path(ENV["OPENSTACK_NOVA_ENV"], "ssh", "id_ed25519").read_text())
    return found


def _needles(secrets: set[str]) -> set[str]:
    """What to search for: each secret; for a key, each line of its body but the first,
    which is the same format header in every OpenSSH key."""
    needles = set()
    for value in secrets:
        if value.startswith("-----BEGIN"):
            body = [ln.strip() for ln in value.splitlines() if ln.strip() and not ln.startswith("-----")]
            needles.update(ln for ln in body[1:] if len(ln) >= 24)
        else:
            needles.add(value)
    return needles


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


def _readable_files(roots: list[Path]) -> Iterator[Path]:
    """Regular files that group or others may read."""
    for root in roots:
        for dirpath, _, names in os.walk(root):
            for name in names:
                path = Path(dirpath, name)
                try:
                    info = path.lstat()
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode) and info.st_mode & 0o044 and info.st_size < 64 * 1024 * 1024:
                    yield path


def test_no_secret_in_plain_text_after_an_up_and_an_update(dev_copy: Stack) -> None:
    outputs: list[str] = []
    with ArgvSampler() as argv:
        outputs.append(dev_copy.cli("up", "--yes", "--skip-preview").stdout)
    # a snippet with a secret option, kept as a Pulumi secret: masked everywhere too (set
    # unsampled: the command's own argv carries the value, as the user's shell would)
    dev_copy.cli("config", "set", "--secret", "--path", NODE0,
                 f"[DEFAULT]\ndebug = true\n[key_manager]\nfixed_key = {SNIPPET_SECRET}\n")
    with ArgvSampler() as later:
        preview = dev_copy.cli("preview", "--diff")
        outputs += [preview.stdout, preview.stderr]
        update = dev_copy.cli("up", "--yes", "--skip-preview", "--diff")
        outputs += [update.stdout, update.stderr]
    assert "edpm-compute-0-nova" in update.stdout  # the update did run Ansible

    needles = _needles(_plain_secrets(dev_copy.name)) | {SNIPPET_SECRET}
    assert len(needles) >= 8, "the stack's passwords, shared secret and keys were collected"
    places: dict[str, str] = {
        "state": dev_copy.cli("stack", "export").stdout,
        "preview and up output": "\n".join(outputs),
        "argv": "\n".join(argv.seen | later.seen),
    }
    log_dir = Path(ENV["OPENSTACK_NOVA_ANSIBLE_LOG_DIR"])
    places["Ansible output"] = "\n".join(p.read_text() for p in log_dir.glob("*.log"))
    assert "edpm-compute-0-nova" in places["argv"] or "ansible-playbook" in places["argv"]
    assert places["Ansible output"], "Ansible output is kept in the private log dir"
    for where, text in places.items():
        leaked = [n[:6] + "..." for n in needles if n in text]
        assert leaked == [], f"secret in {where}: {leaked}"

    roots = [Path("/tmp"), Path("/var/tmp"), Path(ENV["OPENSTACK_NOVA_ENV"]), Path(ENV["PULUMI_HOME"]),
             Path.home() / ".ansible", ROOT, dev_copy.project]
    readable = {}
    for path in _readable_files([r for r in roots if r.exists()]):
        try:
            content = path.read_text(errors="ignore")
        except OSError:
            continue
        hits = [n[:6] + "..." for n in needles if n in content]
        if hits:
            readable[str(path)] = hits
    assert readable == {}, f"secrets in files others can read: {readable}"
