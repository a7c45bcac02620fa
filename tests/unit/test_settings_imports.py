"""The settings layer imports nothing above it: no module of components/settings/ imports
components.edpm, a component module or Pulumi, at its top or inside a function; only source.py,
which reads Pulumi's config, imports the Pulumi SDK's config store."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SETTINGS = Path(__file__).resolve().parents[2] / "components" / "settings"
READS_PULUMI_CONFIG = "source.py"
ALLOWED_PULUMI = ("pulumi.runtime",)  # source.py's raw config access


def imported(tree: ast.AST) -> list[str]:
    """Every module an `import` or `from ... import` of `tree` names, wherever it stands (relative
    imports as written, dots and all)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found += [base] if node.module else [f"{base}{alias.name}" for alias in node.names]
    return found


def forbidden(module: str, file_name: str) -> bool:
    if module.startswith("."):
        return module.startswith("..")  # above the package: components.<something>
    if module == "pulumi" or module.startswith(("pulumi.", "pulumi_")):
        return not (file_name == READS_PULUMI_CONFIG and module.startswith(ALLOWED_PULUMI))
    return module.startswith("components.") and not module.startswith("components.settings")


@pytest.mark.parametrize("path", sorted(SETTINGS.glob("*.py")), ids=lambda p: p.name)
def test_a_settings_module_imports_nothing_above_the_settings(path: Path) -> None:
    modules = imported(ast.parse(path.read_text(), str(path)))
    assert [m for m in modules if forbidden(m, path.name)] == []


@pytest.mark.parametrize(("source", "bad"), [
    ("import pulumi\n", True),
    ("def f():\n    from components.edpm import registry\n", True),
    ("def f():\n    import components.dataplane\n", True),
    ("from .. import render\n", True),
    ("import pulumi_kubernetes\n", True),
    ("from .model import Settings\nfrom components.settings.errors import Path\nimport json\n", False),
])
def test_the_walk_sees_imports_at_the_top_and_inside_functions(source: str, bad: bool) -> None:
    assert any(forbidden(m, "x.py") for m in imported(ast.parse(source))) is bad
