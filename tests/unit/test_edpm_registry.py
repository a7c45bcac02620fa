"""The registry of EDPM services: a built-in service is one module (with one schema key and one
role), and the stack config, the data plane and the whole program take it from there.
`edpm_greeting.py` is such a module: used here as it is, and added to a copy of the tree as it
would be, where nothing but its module, its schema key and its role name it."""

from __future__ import annotations

import dataclasses
import json
import pkgutil
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest

from components.dataplane import EdpmDataPlane
from components.edpm import registry
from components.edpm import services as services_package
from components.edpm.context import ControlPlaneFiles
from components.settings import ServiceSpecs, SettingsError
from components.settings import load as load_settings
from components.stackconfig import load
from tests.unit import KNOWN_HOSTS, LOAD_BALANCER, edpm_greeting
from tests.unit.test_components import PLAYBOOK_RUN, RecordingMocks, _all_runs

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data" / "edpm_greeting"
BUILTIN = ("ssh-known-hosts", "ceph-client", "neutron-metadata", "libvirt", "nova")
WITH_GREETING = ("ssh-known-hosts", "neutron-metadata", "greeting", "libvirt", "nova")
# The tree's files a new built-in service may touch: its module, its schema key, its role (and its playbook).
PRODUCTION = ("__main__.py", "Pulumi.yaml", "Makefile", "components", "ansible", "schema", "stacks", "tools",
              "devenv", "policy")


def _specs() -> ServiceSpecs:
    return ServiceSpecs.ordered([*registry.specs().specs, edpm_greeting.SPEC])


@pytest.fixture()
def mocks() -> Iterator[RecordingMocks]:
    recorder = RecordingMocks()
    pulumi.runtime.set_mocks(recorder, project="openstack-nova", stack="unit", preview=False)
    yield recorder


def test_the_built_in_services_are_the_modules_of_the_services_package() -> None:
    modules = sorted(m.name for m in pkgutil.iter_modules(services_package.__path__))
    builtin = registry.specs()
    assert sorted(s.name.replace("-", "_") for s in builtin.specs) == modules
    assert builtin.names == BUILTIN  # upstream's order
    assert builtin.default == ("ssh-known-hosts", "neutron-metadata", "libvirt", "nova")
    assert [s.name for s in registry.builtin_services()] == list(BUILTIN)
    for spec in builtin.specs:  # their playbooks are the project's own
        for playbook in filter(None, (spec.playbook, spec.stop_playbook)):
            assert (ROOT / "ansible" / "playbooks" / playbook).is_file(), (spec.name, playbook)


def test_a_service_needs_a_place_of_its_own_in_the_order() -> None:
    for order, message in ((40, r"libvirt and greeting share a name or a place in the order \(40\)"),
                           (None, "built-in EDPM service greeting has no place in the order")):
        with pytest.raises(ValueError, match=message):
            ServiceSpecs.ordered([*registry.specs().specs, dataclasses.replace(edpm_greeting.SPEC, order=order)])


def _config(**node_sets: dict[str, Any]) -> dict[str, Any]:
    def node_set(address: str, **extra: Any) -> dict[str, Any]:
        return {"nodeTemplate": {"ansibleSSHPrivateKey": "KEY", "knownHostsFile": KNOWN_HOSTS},
                "nodes": {f"n-{address.rsplit('.', 1)[1]}": {"ansibleHost": address}}, **extra}

    addresses = iter(("192.168.122.100", "192.168.122.101"))
    return {"nova": {"metadataServiceTemplate": LOAD_BALANCER},
            "dataplane": {"ovn": {"sbConnection": "tcp:10.0.0.5:6642"},
                          "nodeSets": {name: node_set(next(addresses), **extra) for name, extra in node_sets.items()}}}


def test_the_stack_config_knows_a_given_service_and_its_place() -> None:
    settings = load_settings(_config(plain={}, listed={"services": ["greeting", "nova"]}), services=_specs(),
                             secret_keys=["dataplane"], catalog=None)
    services = {s.name: s.services for s in settings.dataplane.node_sets}
    assert services == {"plain": WITH_GREETING, "listed": ("greeting", "nova")}
    # a built-in name, as any other
    raw = {**_config(plain={}), "dataplane": {**_config(plain={})["dataplane"],
                                              "customServices": {"greeting": {"playbook": "custom-files.yml"}}}}
    with pytest.raises(SettingsError) as caught:
        load_settings(raw, services=_specs(), secret_keys=["dataplane"], catalog=None)
    assert [str(p) for p in caught.value.problems] == [
        "openstack-nova:dataplane.customServices.greeting: 'greeting' is a built-in service; choose another name"]


def test_without_it_the_name_is_unknown() -> None:
    with pytest.raises(SettingsError) as caught:
        load(_config(listed={"services": ["greeting", "nova"]}), secret_keys=["dataplane"], catalog=None)
    assert [str(p) for p in caught.value.problems] == [
        "openstack-nova:dataplane.nodeSets.listed.services[0]: unknown service 'greeting' (define it under "
        "dataplane.customServices)"]


def test_a_services_own_rules_are_reported_with_every_other_problem() -> None:
    def empty_text(settings: Any) -> Iterator[tuple[tuple[str, ...], str]]:
        yield ("dataplane", "greeting", "text"), "is empty"

    specs = ServiceSpecs.ordered([*registry.specs().specs, dataclasses.replace(edpm_greeting.SPEC, check=empty_text)])
    raw = _config(plain={"cell": "cell9"})
    with pytest.raises(SettingsError) as caught:
        load_settings(raw, services=specs, secret_keys=["dataplane"], catalog=None)
    assert [str(p) for p in caught.value.problems] == [
        "openstack-nova:dataplane.nodeSets.plain.cell: 'cell9' is not in nova.cellTemplates; did you mean cell1?",
        "openstack-nova:dataplane.greeting.text: is empty"]


@pulumi.runtime.test
def test_a_given_service_runs_on_every_node_in_its_place_with_its_stack_part(mocks: RecordingMocks,
                                                                           tmp_path: Path) -> pulumi.Output[Any]:
    from components.render import config_hash

    settings = load_settings(_config(fast={"cell": "cell1"}, default={"cell": "cell1"}), services=_specs(),
                             secret_keys=["dataplane"], catalog=None)
    cell1 = {"01-nova.conf": "[DEFAULT]\n# cell1\n"}
    files = ControlPlaneFiles(compute_configs={"cell1": pulumi.Output.secret(cell1)},
                              metadata_configs={None: pulumi.Output.secret({"m": "m"})})
    data_plane = EdpmDataPlane(settings, files, services=(*registry.builtin_services(), edpm_greeting.SERVICE))
    sets = data_plane.node_sets
    assert [list(runs) for ns in sets for runs in ns.runs.values()] == [["marker", *WITH_GREETING]] * 2
    assert data_plane.stack_parts["greeting"] == edpm_greeting.Greeting("hello", files.compute_configs)

    def check(values: Any) -> None:
        runs = mocks.of_type(PLAYBOOK_RUN)
        for node in ("n-100", "n-101"):
            run = runs[f"{node}-greeting"]
            assert (run["playbook"], run["stop_playbook"]) == ("greeting.yml", "")
            assert run["public_files"] == {"greeting": f"hello, {node} (cell config {config_hash(cell1)[:12]})\n"}
        # the node sets' outputs name it as any other service
        hashes = {node: list(h) for ns_hashes in values for node, h in ns_hashes.items()}
        assert hashes == {"n-100": list(WITH_GREETING), "n-101": list(WITH_GREETING)}

    return _all_runs(sets).apply(lambda _: pulumi.Output.all(*(ns.deployed_hashes for ns in sets))).apply(check)


# --- added to a copy of the tree: one module, one schema key, one role ----------------------------

_RUN_PROGRAM = """
import json, sys
from pathlib import Path
from tests.unit.test_components import RecordingMocks
from tests.unit.test_rotation import _dev_config, run_main
config = _dev_config(Path(sys.argv[1]))
config["dataplane"]["greeting"] = {"text": "good morning"}
mocks = RecordingMocks()
run_main(config, mocks)
print(json.dumps({n: a.inputs["public_files"] for n, a in mocks.resources.items() if n.endswith("-greeting")}))
"""


def _add_greeting(tree: Path) -> set[str]:
    """The greeting service added to `tree` as its author would: the files added or changed."""
    shutil.copy(Path(edpm_greeting.__file__), tree / "components" / "edpm" / "services" / "greeting.py")
    shutil.copytree(DATA / "roles" / "edpm_greeting", tree / "ansible" / "roles" / "edpm_greeting")
    shutil.copy(DATA / "playbooks" / "greeting.yml", tree / "ansible" / "playbooks" / "greeting.yml")
    schema = tree / "components" / "settings" / "schema.py"
    text = schema.read_text()
    anchor = "\n\nclass Dataplane(Shape):\n"
    key = '    greeting: Greeting = Field(default_factory=Greeting)\n'
    start = text.index(anchor)
    end = text.index("\n\n", start + len(anchor))
    schema.write_text(text[:start] + (DATA / "schema.py.part").read_text().rstrip("\n") + text[start:end] + "\n"
                      + key + text[end:])
    return {"components/edpm/services/greeting.py", "components/settings/schema.py",
            "ansible/playbooks/greeting.yml", "ansible/roles/edpm_greeting/meta/argument_specs.yml",
            "ansible/roles/edpm_greeting/tasks/main.yml"}


def _naming(tree: Path, word: str) -> set[str]:
    """The production files of `tree` that contain `word`."""
    found = set()
    for top in PRODUCTION:
        for path in [tree / top] if (tree / top).is_file() else (tree / top).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and word in path.read_text(errors="replace"):
                found.add(str(path.relative_to(tree)))
    return found


def test_a_service_with_a_stack_input_is_one_module_one_schema_key_and_one_role(tmp_path: Path) -> None:
    assert _naming(ROOT, edpm_greeting.NAME) == set()
    tree = tmp_path / "tree"
    shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", ".*_cache"))
    added = _add_greeting(tree)
    assert _naming(tree, edpm_greeting.NAME) == added
    shown = subprocess.run([sys.executable, "-c", _RUN_PROGRAM, str(tmp_path)], cwd=tree, check=True,
                           capture_output=True, text=True).stdout
    runs = json.loads(shown.strip().splitlines()[-1])
    # every node of the dev stack greets with the stack config's text and its cell's compute config
    assert sorted(runs) == ["edpm-compute-0-greeting", "edpm-compute-1-greeting"]
    for name, files in runs.items():
        assert files["greeting"].startswith(f"good morning, {name.removesuffix('-greeting')} (cell config ")
    assert runs["edpm-compute-0-greeting"] != runs["edpm-compute-1-greeting"]  # cell1's config, cell2's
