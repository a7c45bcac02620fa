"""The fixes devenv/toolchain.sh applies to the Pulumi CLI's source (devenv/cli-fixes/)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
# the lines of cmd/pulumi/pulumi.go the fix edits, as in the pinned CLI
PULUMI_GO = """import (
\t"context"
\t"os"
)

func run() {
\t\t\tvar logErr error
\t\t\tautoLogger, logErr = backendlogging.StartLogging(cmd.Context(), nil /* sm */, commandPath)
\t\t\tif logErr != nil {
\t\t\t}
}
"""


def _fix() -> ModuleType:
    path = ROOT / "devenv" / "cli-fixes" / "automatic_logs_switch.py"
    spec = importlib.util.spec_from_file_location("automatic_logs_switch", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tree(tmp_path: Path, text: str) -> Path:
    source = tmp_path / "cmd" / "pulumi" / "pulumi.go"
    source.parent.mkdir(parents=True)
    source.write_text(text)
    return source


def test_the_automatic_log_starts_unless_the_environment_says_off(tmp_path: Path) -> None:
    source = _tree(tmp_path, PULUMI_GO)
    assert _fix().main(str(tmp_path)) == 0
    edited = source.read_text()
    guard = edited.index('if os.Getenv("OPENSTACK_NOVA_PULUMI_LOGS") != "off" {')
    start = edited.index("autoLogger, logErr = backendlogging.StartLogging(")
    assert guard < start < edited.index("}", start) < edited.index("if logErr != nil")
    assert edited.count("StartLogging(") == 1


def test_a_changed_source_is_refused_loudly(tmp_path: Path) -> None:
    source = _tree(tmp_path, PULUMI_GO.replace("nil /* sm */", "sm"))
    assert _fix().main(str(tmp_path)) == 1
    assert source.read_text() == PULUMI_GO.replace("nil /* sm */", "sm")
