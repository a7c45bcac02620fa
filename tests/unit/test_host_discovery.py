"""The host-discovery Job's script: maps only its cell's hosts, retries until the expected ones are mapped."""

from __future__ import annotations

import os
import subprocess
import types
from pathlib import Path

from components.cell import COMPUTE_HOSTS_ENV, DISCOVER_TIMEOUT, _discover_script


def _script(name: str = "cell1") -> str:
    return _discover_script(types.SimpleNamespace(name=name, is_cell0=False))  # type: ignore[arg-type]


def test_the_script_is_valid_bash() -> None:
    assert subprocess.run(["bash", "-n"], input=_script(), text=True, check=False).returncode == 0


def test_discovery_is_limited_to_the_cell_and_bounded() -> None:
    script = _script("cell2")
    assert "$2 ~ / cell2 /" in script
    assert 'discover_hosts --cell_uuid "$uuid" --by-service' in script
    assert 'list_hosts --cell_uuid "$uuid"' in script
    assert f"${{{COMPUTE_HOSTS_ENV}//,/ }}" in script
    assert f"deadline=$((SECONDS + {DISCOVER_TIMEOUT}))" in script


FAKE_NOVA_MANAGE = r"""#!/bin/bash
# a stand-in answering what the script asks; discover_hosts maps the hosts
state=$(dirname "$0")/mapped
case "$*" in
  *list_cells*) printf '| Name | UUID |\n|  cell1  | c1-uuid |\n' ;;
  *discover_hosts*--cell_uuid\ c1-uuid*) echo "$*" >>"$(dirname "$0")/calls"; touch "$state" ;;
  *list_hosts*--cell_uuid\ c1-uuid*)
    printf '| Cell Name | Cell UUID | Hostname |\n'
    [ -e "$state" ] || exit 0
    printf '|   cell1   | c1-uuid | edpm-compute-0 |\n| cell1 | c1-uuid | edpm-compute-10 |\n' ;;
  *) exit 1 ;;
esac
"""


def test_the_job_ends_once_every_expected_host_is_mapped(tmp_path: Path) -> None:
    fake = tmp_path / "nova-manage"
    fake.write_text(FAKE_NOVA_MANAGE)
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}",
           COMPUTE_HOSTS_ENV: "edpm-compute-0,edpm-compute-10"}
    proc = subprocess.run(["bash", "-c", _script()], env=env, capture_output=True, text=True, timeout=30,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "mapped to cell1: edpm-compute-0,edpm-compute-10" in proc.stdout
    assert len((tmp_path / "calls").read_text().splitlines()) == 1
