"""tools/mutants.py's list stays true to the code: each mutant names the tests that must catch it
(or the integration test that does), and its old text is found however the code is laid out.
Whether each old text stands once is `make mutants`' check, not the unit suite's: a reformat
that keeps the code keeps the suite green. Runs no mutant."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tools.mutants import MUTANTS, Mutant, applied, problems

ROOT = Path(__file__).resolve().parents[2]


def test_every_mutant_names_its_tests() -> None:
    assert problems(MUTANTS, ROOT, texts=False) == []


def test_an_old_text_is_found_however_the_code_is_wrapped_and_indented(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = call(\n    first,\n    second,\n)\n")
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    (tmp_path / "tests" / "unit" / "test_a.py").write_text("")
    mutant = Mutant("m", "a.py", "call(first, second,)", "call(second)", "drops first", ("tests/unit/test_a.py",))
    assert problems([mutant], tmp_path) == []
    with applied(mutant, tmp_path):
        assert (tmp_path / "a.py").read_text() == "x = call(second)\n"
    assert problems([replace(mutant, old="call(first, third)")], tmp_path) != []
    # an indented line keeps its indentation and the line break before it
    indented = replace(mutant, old="    first,\n", new="    third,\n")
    with applied(indented, tmp_path):
        assert (tmp_path / "a.py").read_text() == "x = call(\n    third,\n    second,\n)\n"
    assert problems([replace(mutant, old="call(first, third)")], tmp_path, texts=False) == []


def test_the_list_covers_orderings_secrets_renderers_and_runs() -> None:
    kinds = {m.id.split("-", 1)[0] for m in MUTANTS}
    assert kinds == {"order", "secret", "render", "files", "run"}
    assert len([m for m in MUTANTS if not (m.equivalent or m.killed_by_integration)]) >= 30


def test_an_equivalent_mutant_says_why_and_runs_no_test(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    why = Mutant("m", "a.py", "first, second", "first", "drops second", (), equivalent="second is first")
    assert problems([why], root) == []
    assert problems([replace(why, equivalent="")], root) == ["m (a.py): no tests to run"]
    assert problems([replace(why, tests=("tests/unit/test_a.py",))], root) == [
        "m (a.py): an equivalent mutant is run by no test"]


def _tree(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text("x = [first, second]\n")
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    (tmp_path / "tests" / "unit" / "test_a.py").write_text("")
    (tmp_path / "tests" / "integration").mkdir(parents=True)
    (tmp_path / "tests" / "integration" / "test_b.py").write_text("def test_b() -> None:\n    pass\n")
    return tmp_path


@pytest.mark.parametrize(("old", "integration", "problem"), [
    ("first, second", "", None),
    ("third", "", "the old text stands 0 times, not once: the code moved"),
    ("s", "", "the old text stands 2 times, not once"),
    ("first, second", "tests/integration/test_b.py::test_b: it needs a node", None),
    ("first, second", "tests/integration/test_b.py::test_c: no such test", "names no integration test"),
])
def test_an_entry_that_no_longer_matches_the_code_is_refused(tmp_path: Path, old: str, integration: str,
                                                              problem: str | None) -> None:
    root = _tree(tmp_path)
    mutant = Mutant("m", "a.py", old, "other", "breaks a", ("tests/unit/test_a.py",), integration)
    found = problems([mutant], root)
    if problem is None:
        assert found == []
    else:
        assert len(found) == 1 and problem in found[0], found


def test_a_mutant_is_applied_and_the_file_restored_whatever_happens(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    mutant = Mutant("m", "a.py", "first, second", "second", "order", ("tests/unit/test_a.py",))
    with pytest.raises(RuntimeError), applied(mutant, root):
        assert (root / "a.py").read_text() == "x = [second]\n"
        raise RuntimeError("a test run that failed")
    assert (root / "a.py").read_text() == "x = [first, second]\n"
