"""The registry of EDPM services: a built-in service is one module, and the stack config, the node
sets and the whole program take it from there. `edpm_motd.py` is such a module, registered here at
run time; nothing else of the program knows it."""

from __future__ import annotations

import dataclasses
import pkgutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest

from components.edpm import registry
from components.edpm import services as services_package
from components.edpm.service import EdpmService
from components.settings import SettingsError
from components.stackconfig import load
from tests.unit import KNOWN_HOSTS, edpm_motd
from tests.unit.test_components import PLAYBOOK_RUN, SECRET_SIG, RecordingMocks, _two_node_sets, revealed
from tests.unit.test_rotation import RUN, _dev_config, _program_inputs

ROOT = Path(__file__).resolve().parents[2]
BUILTIN = ("ssh-known-hosts", "ceph-client", "neutron-metadata", "libvirt", "nova")
WITH_MOTD = ("ssh-known-hosts", "neutron-metadata", "motd", "libvirt", "nova")


@pytest.fixture()
def motd() -> Iterator[EdpmService]:
    with registry.registered(edpm_motd.SERVICE) as service:
        yield service


@pytest.fixture()
def mocks() -> Iterator[RecordingMocks]:
    recorder = RecordingMocks()
    pulumi.runtime.set_mocks(recorder, project="openstack-nova", stack="unit", preview=False)
    yield recorder


def test_the_built_in_services_are_the_modules_of_the_services_package() -> None:
    modules = sorted(m.name for m in pkgutil.iter_modules(services_package.__path__))
    builtin = registry.builtin()
    assert sorted(s.name.replace("-", "_") for s in builtin.services) == modules
    assert builtin.names == BUILTIN  # upstream's order
    assert builtin.default == ("ssh-known-hosts", "neutron-metadata", "libvirt", "nova")
    for service in builtin.services:  # their playbooks are the project's own
        for playbook in filter(None, (service.playbook, service.stop_playbook)):
            assert (ROOT / "ansible" / "playbooks" / playbook).is_file(), (service.name, playbook)


def test_a_service_needs_a_place_of_its_own_in_the_order() -> None:
    for order, message in ((40, r"libvirt and motd share a name or a place in the order \(40\)"),
                           (None, "built-in EDPM service motd has no place in the order")):
        with pytest.raises(ValueError, match=message), registry.registered(
                dataclasses.replace(edpm_motd.SERVICE, order=order)):
            pass
    assert registry.builtin().names == BUILTIN


def _config(**node_sets: dict[str, Any]) -> dict[str, Any]:
    def node_set(address: str, **extra: Any) -> dict[str, Any]:
        return {"nodeTemplate": {"ansibleSSHPrivateKey": "KEY", "knownHostsFile": KNOWN_HOSTS},
                "nodes": {f"n-{address.rsplit('.', 1)[1]}": {"ansibleHost": address}}, **extra}

    addresses = iter(("192.168.122.100", "192.168.122.101"))
    return {"dataplane": {"ovn": {"sbConnection": "tcp:10.0.0.5:6642"},
                          "nodeSets": {name: node_set(next(addresses), **extra) for name, extra in node_sets.items()}}}


def test_the_stack_config_knows_a_registered_service_and_its_place(motd: EdpmService) -> None:
    settings = load(_config(plain={}, listed={"services": ["motd", "nova"]}), secret_keys=["dataplane"],
                    catalog=None)
    services = {s.name: s.services for s in settings.dataplane.node_sets}
    assert services == {"plain": WITH_MOTD, "listed": ("motd", "nova")}
    # a built-in name, as any other
    raw = {**_config(plain={}), "dataplane": {**_config(plain={})["dataplane"],
                                              "customServices": {"motd": {"playbook": "custom-files.yml"}}}}
    with pytest.raises(SettingsError) as caught:
        load(raw, secret_keys=["dataplane"], catalog=None)
    assert [str(p) for p in caught.value.problems] == [
        "openstack-nova:dataplane.customServices.motd: 'motd' is a built-in service; choose another name"]


def test_without_it_the_name_is_unknown() -> None:
    with pytest.raises(SettingsError) as caught:
        load(_config(listed={"services": ["motd", "nova"]}), secret_keys=["dataplane"], catalog=None)
    assert [str(p) for p in caught.value.problems] == [
        "openstack-nova:dataplane.nodeSets.listed.services[0]: unknown service 'motd' (define it under "
        "dataplane.customServices)"]


@pulumi.runtime.test
def test_a_registered_service_runs_on_every_node_in_its_place(motd: EdpmService, mocks: RecordingMocks,
                                                             tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                             ) -> pulumi.Output[Any]:
    import components.dataplane

    after: dict[str, list[Any]] = {}

    class Recording(components.dataplane.PlaybookRun, module="ansible", name="PlaybookRun"):  # type: ignore[misc]
        def __init__(self, name: str, **kwargs: Any) -> None:
            after[name] = list(kwargs["opts"].depends_on or [])
            super().__init__(name, **kwargs)

    monkeypatch.setattr(components.dataplane, "PlaybookRun", Recording)
    sets = _two_node_sets(tmp_path)
    assert [list(runs) for ns in sets for runs in ns.runs.values()] == [["marker", *WITH_MOTD]] * 2
    run_names = {id(run): f"{node}-{service}" for ns in sets for node, runs in ns.runs.items()
                 for service, run in runs.items()}
    for node in ("n0", "n1"):  # each run after the one before
        chain = [f"{node}-{s}" for s in ("marker", *WITH_MOTD)]
        assert [[run_names[id(r)] for r in after[name]] for name in chain] == [[], *[[c] for c in chain[:-1]]]
    urns = [r.urn for ns in sets for runs in ns.runs.values() for r in runs.values()]
    hashes = [ns.deployed_hashes for ns in sets]

    def check(values: list[Any]) -> None:
        runs = mocks.of_type(PLAYBOOK_RUN)
        for node, node_set in (("n0", "fast"), ("n1", "default")):
            run = runs[f"{node}-motd"]
            assert (run["playbook"], run["stop_playbook"]) == ("motd.yml", "")
            assert run["public_files"] == {"motd": f"{node}, node set {node_set}\n"}
            assert SECRET_SIG in run["files"] and revealed(run["files"]) == {}
            assert (run["vars"], run["host_vars"], run["pinned"]) == ({}, {}, {"cell": "cell1"})
        # the node set's outputs name it as any other service
        assert {node: list(h[node]) for h in values[-2:] for node in h} == {"n0": list(WITH_MOTD),
                                                                            "n1": list(WITH_MOTD)}

    return pulumi.Output.all(*urns, *hashes).apply(check)


def test_the_whole_program_gets_one_more_run_per_node_and_nothing_else_changes(tmp_path: Path) -> None:
    config = _dev_config(tmp_path)
    before = _program_inputs(config)
    with registry.registered(edpm_motd.SERVICE):
        after = _program_inputs(config)
    assert after.keys() - before.keys() == {(RUN, "edpm-compute-0-motd"), (RUN, "edpm-compute-1-motd")}
    assert before.keys() - after.keys() == set()
    assert {k for k in before if before[k] != after[k]} == set()
