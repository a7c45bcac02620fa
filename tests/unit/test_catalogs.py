"""Option catalogs per nova release: which one a stack gets, what each release
accepts, the errors, and that the shipped files are what the generator writes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.settings import SHIPPED_CATALOGS, CatalogError, CatalogStore, SettingsError
from components.settings.catalog import CATALOG_DIR, FORMAT
from components.settings.customconfig import check
from components.settings.load import CONFIG_PREFIX, DEFAULT_IMAGES_RELEASE
from components.stackconfig import load
from tests.unit import LOCAL_IMAGES_RELEASE, ROOT, pins
from tools import nova_catalog

ANTELOPE = "27.5.1"  # 2023.1, the release of upstream's podified-antelope images
LOCAL = LOCAL_IMAGES_RELEASE  # 34.0.0, the images built here
PATH = "openstack-nova:images.novaRelease"
# Real differences between the two shipped releases (diff of their catalogs):
# nova 29 (2024.1) added [libvirt] migration_inbound_addr; nova 34 no longer
# has the availability-zone prefilter switch that upstream's templates set.
ONLY_34 = "[libvirt]\nmigration_inbound_addr = %s\n"
ONLY_27 = "[scheduler]\nquery_placement_for_availability_zone = true\n"


def _stack(release: str | None, snippet: str) -> dict[str, Any]:
    images = {"novaRelease": release} if release is not None else {}
    return {"images": images, "nova": {"schedulerServiceTemplate": {"customServiceConfig": snippet}}}


def _problems(raw: dict[str, Any], store: CatalogStore = SHIPPED_CATALOGS) -> dict[str, str]:
    with pytest.raises(SettingsError) as caught:
        load(raw, catalog=store)
    return {p.path: p.message for p in caught.value.problems}


# --- selection ------------------------------------------------------------


def test_the_images_release_and_antelope_ship() -> None:
    assert {ANTELOPE, LOCAL} <= set(SHIPPED_CATALOGS.releases())


@pytest.mark.parametrize("stack", sorted(p.name for p in (ROOT / "stacks").glob("Pulumi.*.yaml")))
def test_every_example_stack_names_a_shipped_release(stack: str) -> None:
    config = yaml.safe_load((ROOT / "stacks" / stack).read_text())["config"]
    release = config.get(f"{CONFIG_PREFIX}images", {}).get("novaRelease", DEFAULT_IMAGES_RELEASE)
    assert SHIPPED_CATALOGS.load(release).release == release


def test_the_antelope_example_stack_loads_and_selects_antelope() -> None:
    config = yaml.safe_load((ROOT / "stacks" / "Pulumi.antelope.yaml").read_text())["config"]
    raw = {key.removeprefix(CONFIG_PREFIX): value for key, value in config.items()}
    settings = load(raw, catalog=SHIPPED_CATALOGS)
    assert settings.images.release.version == ANTELOPE
    assert settings.images.api.startswith("quay.io/podified-antelope-centos9/")
    # it only names what its images hold already
    del raw["images"]
    assert load(raw, catalog=SHIPPED_CATALOGS) == settings


# --- what each release accepts ----------------------------------------------


def test_an_option_added_after_antelope_is_refused_for_antelope() -> None:
    snippet = ONLY_34 % "192.168.122.100"
    load(_stack(LOCAL, snippet), catalog=SHIPPED_CATALOGS)
    for release in (ANTELOPE, None):  # None: the default images' release, antelope's
        (message,) = _problems(_stack(release, snippet)).values()
        assert message.startswith("[libvirt] migration_inbound_addr is not a nova 27.5.1 option")


def test_an_option_nova_34_removed_is_accepted_for_antelope_only() -> None:
    load(_stack(ANTELOPE, ONLY_27), catalog=SHIPPED_CATALOGS)
    (message,) = _problems(_stack(LOCAL, ONLY_27)).values()
    assert message.startswith("[scheduler] query_placement_for_availability_zone is not a nova 34.0.0 option")


def test_the_releases_differ_where_the_tests_say() -> None:
    old, new = SHIPPED_CATALOGS.load(ANTELOPE), SHIPPED_CATALOGS.load(LOCAL)
    assert old.lookup("libvirt", "migration_inbound_addr") is None
    assert new.lookup("libvirt", "migration_inbound_addr") is not None
    assert old.lookup("scheduler", "query_placement_for_availability_zone") is not None
    assert new.lookup("scheduler", "query_placement_for_availability_zone") is None
    # both run nova's run-time groups through the generator
    assert check("[neutron]\nphysnets = a\n[neutron_physnet_a]\nnuma_nodes = 0\n", old) == []


# --- errors ---------------------------------------------------------------


def test_a_supported_release_without_its_catalog_says_how_to_make_it(tmp_path: Path) -> None:
    problems = _problems(_stack(ANTELOPE, "[libvirt]\ncpu_modle = x\n"), CatalogStore(tmp_path))
    # the snippet is not checked against another release's options: only the release is a problem
    assert problems == {PATH: (
        f"no option catalog for nova 27.5.1 (catalogs: none); generate {tmp_path}/nova-27.5.1.json "
        "with `make catalog NOVA_RELEASE=27.5.1` and commit it")}


def test_a_release_missing_from_the_store_names_its_shipped_path() -> None:
    with pytest.raises(CatalogError) as caught:
        SHIPPED_CATALOGS.load("33.0.2")
    assert str(caught.value) == (
        "no option catalog for nova 33.0.2 (catalogs: 27.5.1, 34.0.0); generate "
        "components/settings/catalogs/nova-33.0.2.json with `make catalog NOVA_RELEASE=33.0.2` and commit it"
    )


def test_an_openstack_series_is_explained() -> None:
    message = _problems(_stack("2023.1", ""))[PATH]
    assert message.startswith("the program does not deploy nova 2023.1 (nova's own version, not the OpenStack "
                              "series: 2023.1 antelope is nova 27)")


@pytest.mark.parametrize("release", ["../../etc/passwd", "34.0.0/../x", "", "latest"])
def test_a_release_that_is_not_a_version_is_refused(release: str) -> None:
    message = _problems(_stack(release, ""))[PATH]
    if release:
        assert message.startswith(f"'{release}' is not a nova version like 34.0.0")
    else:
        assert message == "must not be empty; remove the key to use the default"


def test_a_release_of_the_wrong_type_is_one_problem_and_no_snippet_is_judged() -> None:
    raw = _stack(None, "[libvirt]\nmigration_inbound_addr = x\n")
    raw["images"]["novaRelease"] = 27.5
    assert _problems(raw) == {PATH: "expected a string, got a number"}


def test_a_catalog_of_another_release_is_refused(tmp_path: Path) -> None:
    (tmp_path / "nova-27.5.1.json").write_text((CATALOG_DIR / "nova-34.0.0.json").read_text())
    problems = _problems(_stack(ANTELOPE, ""), CatalogStore(tmp_path))
    assert problems[PATH] == (
        f"{tmp_path}/nova-27.5.1.json holds the options of nova 34.0.0, not 27.5.1; "
        "regenerate it with `make catalog NOVA_RELEASE=27.5.1`"
    )


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json", "cannot be read"),
        ('{"format": 0, "nova": "27.5.1", "groups": {}}', "is not a catalog this program reads (format 1)"),
        ('{"DEFAULT": {"debug": {"type": "Boolean"}}}', "is not a catalog this program reads (format 1)"),
        ('{"format": 1, "nova": "27.5.1", "groups": {"DEFAULT": []}}', "has a malformed option"),
        ('{"format": 1, "groups": {}}', "names no nova release, not 27.5.1"),
    ],
)
def test_a_broken_catalog_is_a_problem_not_a_traceback(tmp_path: Path, content: str, reason: str) -> None:
    (tmp_path / "nova-27.5.1.json").write_text(content)
    message = _problems(_stack(ANTELOPE, ""), CatalogStore(tmp_path))[PATH]
    assert message.startswith(f"{tmp_path}/nova-27.5.1.json {reason}")
    assert message.endswith("regenerate it with `make catalog NOVA_RELEASE=27.5.1`")


def test_store_errors_name_the_command() -> None:
    with pytest.raises(CatalogError, match=re.escape("make catalog NOVA_RELEASE=1.0.0")):
        CatalogStore(CATALOG_DIR).load("1.0.0")


# --- the shipped files ------------------------------------------------------


@pytest.mark.parametrize("path", sorted(CATALOG_DIR.glob("nova-*.json")), ids=lambda p: p.name)
def test_shipped_catalog_records_its_release_and_the_pins_it_came_from(path: Path) -> None:
    release = path.name.removeprefix("nova-").removesuffix(".json")
    data = json.loads(path.read_text())
    assert data["format"] == FORMAT == nova_catalog.FORMAT
    assert data["nova"] == release == data["libraries"]["nova"]
    assert data["namespaces"] == list(nova_catalog.NAMESPACES)
    # the libraries are those devenv/catalog.sh installs for this release: its images' pins
    images = ROOT / "devenv" / "images" / "constraints.txt"
    release_images = ROOT / "devenv" / "images" / "releases" / release / "constraints.txt"
    pinned = pins(images if pins(images)["nova"] == release else
                  release_images if release_images.exists() else
                  ROOT / "devenv" / "catalog-constraints" / f"nova-{release}.txt")
    assert {name.lower(): version for name, version in data["libraries"].items()} == {
        name.lower(): pinned[name.lower()] for name in data["libraries"]
    }
    assert len(data["groups"]) > 50 and "neutron_physnet_*" in data["groups"]
    assert path.read_text() == json.dumps(data, indent=1, sort_keys=True) + "\n"  # as the generator writes


@pytest.mark.nova
def test_committed_catalog_is_what_the_generator_writes(tmp_path: Path) -> None:
    """The generator, run with the project venv's nova (the images' release, at the
    images' pins), writes the committed file byte for byte."""
    pytest.importorskip("nova")
    release = metadata.version("nova")
    out = tmp_path / "catalog.json"
    subprocess.run(
        [sys.executable, str(ROOT / "tools" / "nova_catalog.py"), release, str(out)],
        cwd=ROOT, check=True, capture_output=True,
    )
    assert out.read_text() == (CATALOG_DIR / f"nova-{release}.json").read_text()


@pytest.mark.nova
def test_generator_refuses_another_release(tmp_path: Path) -> None:
    pytest.importorskip("nova")
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "nova_catalog.py"), ANTELOPE, str(tmp_path / "x.json")],
        cwd=ROOT, check=False, capture_output=True, text=True,
    )
    assert result.returncode != 0 and not (tmp_path / "x.json").exists()
    assert f"not {ANTELOPE}: run devenv/catalog.sh {ANTELOPE}" in result.stderr
