"""The documentation holds together: the README stays short, every link leads to a file
and a heading that exist, every document is reachable from the README, and what the docs
tell a user to type (stack config keys, `--path` keys, `make` targets) exists."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.stackconfig import load
from tests.unit.test_schema import VALIDATOR
from tests.unit.test_settings import ALL_SECRET

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MARKDOWN = [README, *sorted(DOCS.glob("*.md"))]
GUIDE = DOCS / "real-cluster.md"
MAX_README_WORDS = 1600
CONFIG_PREFIX = "openstack-nova:"

FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*$", re.MULTILINE)
PATH_ARG = re.compile(r"--path\s+(?:'([^']+)'|([A-Za-z<][\w.<>-]*))")  # not `--path ...`
MAKE = re.compile(r"(?:^|[\s(])make\s+(?:-\S+\s+)*([a-z][\w-]*)")
PLACEHOLDER = re.compile(r"<[A-Za-z0-9][^<>\n]*>")  # a value of the user's, in the guide


def prose(text: str) -> str:
    """The text without fenced code blocks."""
    return FENCE.sub("", text)


def fenced(text: str, language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(text) if lang == language]


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text lowercased, without punctuation, spaces as dashes."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    result = set()
    for heading in HEADING.findall(prose(path.read_text())):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


def links(path: Path) -> Iterator[tuple[Path, str]]:
    """The relative links of a Markdown file: (target file, anchor or "")."""
    for target in LINK.findall(CODE_SPAN.sub("", prose(path.read_text()))):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        file, _, anchor = target.partition("#")
        yield (path.parent / file).resolve() if file else path.resolve(), anchor


def test_the_readme_is_short() -> None:
    words = len(README.read_text().split())
    assert words <= MAX_README_WORDS, f"README.md has {words} words; move the detail to docs/"


def test_the_slug_of_a_heading_is_githubs() -> None:
    assert slug("An interrupted `pulumi up` (Ctrl-C, `kill -9`, a CI job's timeout)") == \
        "an-interrupted-pulumi-up-ctrl-c-kill--9-a-ci-jobs-timeout"
    assert slug("Migrating from the operators: adopting what exists") == \
        "migrating-from-the-operators-adopting-what-exists"


@pytest.mark.parametrize("path", MARKDOWN, ids=[p.name for p in MARKDOWN])
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(path: Path) -> None:
    broken = []
    for target, anchor in links(path):
        if not target.is_file():
            broken.append(f"{target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target):
            broken.append(f"{target.relative_to(ROOT)}#{anchor}: no such heading")
    assert broken == []


def test_a_broken_link_or_anchor_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## A section\n\n[ok](#a-section) [gone](missing.md) [bad](#no-section)\n")
    found = [(t.name, a) for t, a in links(page)]
    assert found == [("page.md", "a-section"), ("missing.md", ""), ("page.md", "no-section")]
    assert anchors(page) == {"title", "a-section"}


def test_every_document_is_reachable_from_the_readme() -> None:
    seen = {README.resolve()}
    todo = [README.resolve()]
    while todo:
        page = todo.pop()
        for target, _ in links(page):
            if target not in seen and target.is_file():
                seen.add(target)
                if target.suffix == ".md":
                    todo.append(target)
    unreachable = sorted(p.name for p in DOCS.iterdir() if p.is_file() and p.resolve() not in seen)
    assert unreachable == [], "link these from README.md or a document it links"


def _kubernetes_object(block: dict[str, Any]) -> bool:
    """A manifest the guide has the user apply (the bus's Service on the data plane), not stack config."""
    return "apiVersion" in block and "kind" in block


def _guide_yaml_blocks() -> list[dict[str, Any]]:
    parsed = [yaml.safe_load(body) for body in fenced(GUIDE.read_text(), "yaml")]
    return [block for block in parsed if not _kubernetes_object(block)]


def test_the_guides_stack_config_follows_the_schema() -> None:
    blocks = _guide_yaml_blocks()
    assert blocks, "docs/real-cluster.md shows the stack config in ```yaml blocks"
    for block in blocks:
        config = block.get("config", block)
        assert config and all(k.startswith(CONFIG_PREFIX) for k in config), sorted(config)
        assert [e.message for e in VALIDATOR.iter_errors({"config": config})] == []


def test_the_guides_stack_config_with_values_given_is_one_the_program_takes(tmp_path: Path) -> None:
    def value(placeholder: str) -> str:
        name = placeholder.strip("<>")
        if "URL" in name:
            return "http://keystone-internal.keystone.svc:5000"
        if "connection" in name:
            return "tcp:10.0.0.5:6642"
        if "version" in name:
            return "34.0.0"
        if "addresses" in name:
            return "172.17.0.80-172.17.0.90"
        if "file" in name or name == "kubeconfig":
            path = tmp_path / re.sub(r"\W+", "-", name)
            path.write_text("")
            return str(path)
        return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")

    for body in fenced(GUIDE.read_text(), "yaml"):
        block = yaml.safe_load(PLACEHOLDER.sub(lambda m: value(m.group(0)), body))
        if _kubernetes_object(block):
            continue
        config = block.get("config", block)
        load({k.removeprefix(CONFIG_PREFIX): v for k, v in config.items()}, secret_keys=ALL_SECRET, catalog=None)


def _branches(schema: dict[str, Any], node: dict[str, Any]) -> list[dict[str, Any]]:
    """The object schemas `node` may be, its $refs followed; Pulumi secrets and null left out."""
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return [] if name == "Secure" else _branches(schema, schema["$defs"][name])
    if "anyOf" in node:
        return [b for option in node["anyOf"] for b in _branches(schema, option)]
    return [node] if node.get("type") == "object" else []


def path_problem(path: str) -> str | None:
    """Why `pulumi config set --path <path>` names no key of the schema, or None."""
    schema = VALIDATOR.schema
    first, *rest = path.split(".")
    node = schema["properties"]["config"]["properties"].get(CONFIG_PREFIX + first)
    if node is None:
        return f"{path}: no key {first}"
    for segment in rest:
        choices = _branches(schema, node)
        if any("properties" not in b and b.get("additionalProperties", True) is True for b in choices):
            return None  # a free-form mapping (ansibleVars): any key below
        found = [b["properties"][segment] for b in choices if segment in b.get("properties", {})]
        found += [b["additionalProperties"] for b in choices if isinstance(b.get("additionalProperties"), dict)]
        if not found:
            return f"{path}: no key {segment}"
        node = found[0]
    return None


def test_a_path_is_checked_against_the_schema() -> None:
    assert path_problem("dataplane.nodeSets.<node set>.nodes.<node>.ansibleHost") is None
    assert path_problem("dataplane.nodeSets.x.nodeTemplate.ansibleVars.edpm_nova_start_mode") is None
    assert path_problem("nova.cellTemplates.cell1.cellDatabase.pasword") == \
        "nova.cellTemplates.cell1.cellDatabase.pasword: no key pasword"
    assert path_problem("novaa.keystone") == "novaa.keystone: no key novaa"


@pytest.mark.parametrize("path", MARKDOWN, ids=[p.name for p in MARKDOWN])
def test_every_path_the_docs_set_is_a_key_of_the_stack_config(path: Path) -> None:
    paths = [quoted or bare for quoted, bare in PATH_ARG.findall(path.read_text())]
    assert [problem for p in paths if (problem := path_problem(p))] == []


def _make_targets() -> dict[str, bool]:
    """The Makefile's targets, and whether each has a `## target:` line that documents it."""
    text = (ROOT / "Makefile").read_text()
    documented = set(re.findall(r"^## ([\w-]+):", text, re.MULTILINE))
    return {t: t in documented for t in re.findall(r"^([a-z][\w-]*):", text, re.MULTILINE)}


@pytest.mark.parametrize("path", MARKDOWN, ids=[p.name for p in MARKDOWN])
def test_every_make_target_the_docs_name_exists(path: Path) -> None:
    text = path.read_text()
    code = CODE_SPAN.findall(text) + [line for body in FENCE.findall(text) for line in body[1].splitlines()]
    code += [line for line in text.splitlines() if line.startswith("    ")]
    named = {m for snippet in code for m in MAKE.findall(snippet.strip("`"))}
    assert sorted(named - set(_make_targets())) == []


def test_every_documented_make_target_is_in_the_local_environment_doc() -> None:
    text = (DOCS / "local-environment.md").read_text()
    missing = [t for t, documented in _make_targets().items() if documented and f"`make {t}" not in text]
    assert missing == []


TEST_FILE = re.compile(r"(test_\w+\.py)(?:::(test_\w+))?|::(test_\w+)")


def defined_tests() -> dict[str, set[str]]:
    """Test file name -> the test functions defined in it (files of one name in unit and
    integration pooled)."""
    found: dict[str, set[str]] = {}
    for path in (ROOT / "tests").rglob("test_*.py"):
        names = re.findall(r"^\s*(?:async\s+)?def\s+(test_\w+)", path.read_text(), re.MULTILINE)
        found.setdefault(path.name, set()).update(names)
    return found


def missing_citations(text: str, tests: dict[str, set[str]]) -> list[str]:
    """The tests `text` names that do not exist: `file.py`, `file.py::test` and, later on the
    same line, `::test` of that file."""
    missing = []
    for line in text.splitlines():
        file = None
        for match in TEST_FILE.finditer(line):
            name = match.group(2) or match.group(3)
            if match.group(1):
                file = match.group(1)
                if file not in tests:
                    missing.append(file)
                    continue
            if name and (file is None or name not in tests.get(file, set())):
                missing.append(f"{file or '?'}::{name}")
    return missing


def test_a_cited_test_that_does_not_exist_is_found() -> None:
    tests = {"test_a.py": {"test_one", "test_two"}}
    assert missing_citations("unit `test_a.py::test_one`, `::test_two`", tests) == []
    assert missing_citations("`test_a.py::test_one`, `::test_gone`; `test_b.py`", tests) == [
        "test_a.py::test_gone", "test_b.py"]
    assert missing_citations("`::test_one` alone", tests) == ["?::test_one"]


@pytest.mark.parametrize("path", MARKDOWN, ids=[p.name for p in MARKDOWN])
def test_every_test_the_docs_cite_exists(path: Path) -> None:
    assert missing_citations(path.read_text(), defined_tests()) == []
