"""The CLI with the project's language host, as `make env` sets it up: the host
the toolchain installed, at the pinned version, and the project's policy pack
run through it against the dev stack."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from tests.integration.local_env import ENV, ROOT, pulumi


def _pin() -> str:
    match = re.search(r"^PULUMI_VERSION=(\S+)$", (ROOT / "devenv" / "versions.env").read_text(), re.MULTILINE)
    assert match
    return match.group(1)


def test_the_cli_runs_the_toolchains_host_at_the_pinned_version(dev_stack: str) -> None:
    host = shutil.which("pulumi-language-python", path=ENV["PATH"])
    assert host is not None
    wrapper = Path(host).resolve().read_text().splitlines()[-1]
    assert wrapper.startswith(f'exec "{Path(ENV["OPENSTACK_NOVA_CACHE"]) / "toolchain" / f"pulumi-{_pin()}"}')
    assert " -P -m langhost " in wrapper  # the package, as toolchain.sh installs it
    about = json.loads(pulumi("about", "--json", "-s", dev_stack).stdout)
    assert {"name": "python", "kind": "language", "version": _pin()} in about["plugins"]


def test_the_policy_pack_passes_on_the_dev_stack(dev_stack: str) -> None:
    proc = pulumi("preview", "--policy-pack", "policy", "-s", dev_stack)
    assert "openstack-nova@v0.1.0 (local: policy)" in proc.stdout
    assert "[mandatory]" not in proc.stdout and "[advisory]" not in proc.stdout
