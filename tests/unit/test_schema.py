"""The JSON Schema of a stack file (schema/stack-config.schema.json): what `make schema` writes,
and in agreement with the program: it takes every stack the program takes, and refuses a
config of the wrong shape where the program does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from jsonschema.exceptions import best_match

from components.settings import SettingsError
from components.settings.errors import format_path
from components.settings.load import CONFIG_PREFIX
from components.stackconfig import load
from tests.unit import test_settings, test_settings_nodemounts
from tools import schema as generator

ROOT = Path(__file__).resolve().parents[2]
STACKS = sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))
MODELINE = "# yaml-language-server: $schema=../schema/stack-config.schema.json\n"
VALIDATOR = jsonschema.Draft7Validator(json.loads(generator.OUTPUT.read_text()))


def stack_file(raw: dict[str, Any]) -> dict[str, Any]:
    """The stack file that gives the program `raw`."""
    return {"config": {CONFIG_PREFIX + key: value for key, value in raw.items()}}


def test_the_committed_schema_is_what_make_schema_writes() -> None:
    assert generator.OUTPUT.read_text() == generator.text(), (
        "schema/stack-config.schema.json is not what components/settings/schema.py declares: run `make schema`")
    jsonschema.Draft7Validator.check_schema(VALIDATOR.schema)


@pytest.mark.parametrize("path", STACKS, ids=[p.name for p in STACKS])
def test_every_stack_file_names_the_schema_and_follows_it(path: Path) -> None:
    text = path.read_text()
    assert text.startswith(MODELINE)
    assert [e.message for e in VALIDATOR.iter_errors(yaml.safe_load(text))] == []


@pytest.mark.parametrize("raw", [
    {},
    test_settings.good_config(),
    test_settings.with_change("dataplane.migrationSSHKey", {"privateKey": "k", "publicKey": "ssh-ed25519 A"}),
    test_settings_nodemounts.config({"propagation": ["Compute"], "volumes": [test_settings_nodemounts.CEPH_SECRET],
                                     "mounts": [test_settings_nodemounts.AT_ETC_CEPH]},
                                    kubernetes={"mode": "cluster", "skipAwait": True}),
    # null reads as absent: a key with nothing after it in YAML
    {"nova": {"keystone": None, "cellTemplates": {"cell0": None, "cell1": {"dbPurge": {"schedule": None}}}}},
], ids=["empty", "good_config", "migration key", "extraMounts", "nulls"])
def test_the_tests_stack_configs_follow_the_schema(raw: dict[str, Any]) -> None:
    load(raw, secret_keys=test_settings.ALL_SECRET, catalog=None)
    assert [e.message for e in VALIDATOR.iter_errors(stack_file(raw))] == []


def test_a_secret_may_stand_for_any_leaf_or_a_whole_key() -> None:
    secret = {"secure": "v1:abc"}
    document = {"config": {
        "openstack-nova:namespace": secret,
        "openstack-nova:dataplane": secret,
        "openstack-nova:nova": {"apiTimeout": secret, "keystone": {"password": secret},
                                "apiServiceTemplate": {"nodeSelector": {"zone": secret}}},
        "openstack-nova:extraMounts": [{"propagation": [secret]}],
        "kubernetes:context": "another provider's key",
    }}
    assert [e.message for e in VALIDATOR.iter_errors(document)] == []
    # not an object: the program would get the string
    assert list(VALIDATOR.iter_errors(stack_file({"nova": {"keystone": secret}})))


WRONG_SHAPES: list[tuple[str, Any]] = [
    ("nova.keystone.regoin", "x"),
    ("nova.apiServiceTemplate.replicas", "2"),
    ("nova.apiServiceTemplate.replicas", 33),
    ("nova.cellTemplates.cell1.hasAPIAccess", "yes"),
    ("nova.messagingBus.queueType", "quorum"),
    ("nova.schedulerServiceTemplate.nodeSelector", {"zone": 1}),
    ("kubernetes.mode", "dry"),
    ("images.api", ""),
    ("dataplane.nodeSets.edpm-b.services", ["nova", 5]),
    ("dataplane.nodeSets.edpm-a.nodes.compute-0.ansibleHots", "10.0.0.1"),
    ("dataplane.nodeSets.edpm-a.nodes.compute-0.ansibleHost", None),
    ("dataplane.nodeSets.edpm-a.nodeTemplate.timeouts", {"hang": 5}),
    ("dataplane.customServices.motd.playbook", None),
    ("extraMounts", [{"volumes": [{"hostPath": {}}]}]),
    ("extraMounts", {"name": "x"}),
    ("nodesets", {}),
]


@pytest.mark.parametrize(("change", "value"), WRONG_SHAPES, ids=[f"{c}={v!r}"[:60] for c, v in WRONG_SHAPES])
def test_the_schema_refuses_a_wrong_shape_where_the_program_does(change: str, value: Any) -> None:
    raw = test_settings.with_change(change, value)
    with pytest.raises(SettingsError) as caught:
        load(raw, secret_keys=test_settings.ALL_SECRET, catalog=None)
    error = best_match(VALIDATOR.iter_errors(stack_file(raw)))
    assert error is not None
    # the editor marks the key, or the object that holds it
    path = list(error.absolute_path)[1:]  # below config:
    prefix = format_path((path[0].removeprefix(CONFIG_PREFIX), *path[1:])) if path else CONFIG_PREFIX
    assert any(p.path.startswith(prefix) for p in caught.value.problems), (prefix, caught.value.problems)
