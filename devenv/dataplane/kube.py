"""kubectl of the toolchain, as the data plane's side uses it: server-side apply of JSON from
stdin, reads as JSON, waits."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .manifests import Obj

FIELD_MANAGER = "openstack-nova-devenv"


class KubectlError(RuntimeError):
    pass


class Kubectl:
    def __init__(self, binary: Path, kubeconfig: Path) -> None:
        self.base = [str(binary), f"--kubeconfig={kubeconfig}", "--request-timeout=30s"]

    def run(self, *args: str, stdin: str | None = None, check: bool = True,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([*self.base, *args], input=stdin, capture_output=True, text=True, check=False,
                              timeout=timeout)
        if check and done.returncode != 0:
            raise KubectlError(f"kubectl {' '.join(args[:3])} failed: {last_line(done.stderr)}")
        return done

    def get_json(self, *args: str) -> dict[str, Any] | None:
        """The object(s) as JSON, or None when kubectl finds none (or fails)."""
        done = self.run("get", *args, "-o", "json", check=False)
        if done.returncode != 0:
            return None
        data: dict[str, Any] = json.loads(done.stdout)
        return data

    def apply(self, objects: Sequence[Obj]) -> None:
        listed = {"apiVersion": "v1", "kind": "List", "items": list(objects)}
        self.run("apply", "--server-side", f"--field-manager={FIELD_MANAGER}", "--force-conflicts", "-f", "-",
                 stdin=json.dumps(listed))

    def apply_file(self, path: Path) -> None:
        self.run("apply", "--server-side", f"--field-manager={FIELD_MANAGER}", "--force-conflicts", "-f", str(path))


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"
