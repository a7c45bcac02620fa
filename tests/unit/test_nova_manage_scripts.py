"""The nova-manage Jobs' scripts (components/templates/nova-manage/), as the cells render them,
pass shellcheck, and say what they do."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from components import cell as cell_module
from components.settings import Settings
from components.stackconfig import load

SHELLCHECK = shutil.which("shellcheck")


def _settings() -> Settings:
    return load({"nova": {"cellTemplates": {"cell0": {}, "cell1": {}}}}, catalog=None)


def _scripts() -> dict[str, str]:
    cells = {c.name: c for c in _settings().nova.cells}
    found = {"db-purge": cell_module._db_purge_script()}
    for name, cell in cells.items():
        found[f"db-sync {name}"] = cell_module._db_sync_script(cell)
        found[f"cell-mapping {name}"] = cell_module._mapping_script(cell)
    found["discover-hosts cell1"] = cell_module._discover_script(cells["cell1"])
    return found


@pytest.mark.skipif(SHELLCHECK is None, reason="shellcheck is not installed (make lint installs it)")
@pytest.mark.parametrize("name", sorted(_scripts()))
def test_a_nova_manage_script_passes_shellcheck(name: str) -> None:
    # the Jobs run them with bash -c
    checked = subprocess.run([str(SHELLCHECK), "-s", "bash", "-"], input=_scripts()[name], capture_output=True,
                             text=True, check=False)
    assert checked.returncode == 0, checked.stdout


def test_the_scripts_run_nova_manage_on_the_cells_config() -> None:
    scripts = _scripts()
    manage = "nova-manage --config-dir /etc/nova/nova.conf.d"
    assert scripts["db-sync cell0"] == f"set -e; {manage} api_db sync; {manage} db sync --local_cell"
    assert scripts["db-sync cell1"] == f"set -e; {manage} db sync --local_cell"
    assert f"{manage} cell_v2 create_cell --name cell1;" in scripts["cell-mapping cell1"]
    assert scripts["cell-mapping cell0"].endswith(
        f"update_cell --cell_uuid {cell_module.CELL0_UUID} --transport-url none:///")
    discover = scripts["discover-hosts cell1"]
    assert "for h in ${NOVA_COMPUTE_HOSTS//,/ }; do" in discover and "sleep 10" in discover
    assert "deadline=$((SECONDS + 300))" in discover and not discover.endswith("\n")
