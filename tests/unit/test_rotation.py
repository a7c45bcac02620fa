"""What a rotated secret reaches: the whole program (`__main__.py`) under Pulumi mocks, with the dev
stack's config, run once as it is and once with one secret given a new value. The resources whose
inputs differ are what `pulumi up` updates; the integration tests check the same on the real stack
(tests/integration/test_secrets.py)."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from pulumi.runtime import config as runtime_config

from components.ansible_runner.playbook import TYPE as PLAYBOOK_RUN_TYPE
from components.dynamictypes import type_token
from components.generated import GeneratedSecret, GeneratedSSHKey
from tests.unit import KNOWN_HOSTS
from tests.unit.test_components import SECRET_SIG, RecordingMocks

ROOT = Path(__file__).resolve().parents[2]
SECRET = "kubernetes:core/v1:Secret"
STATEFULSET = "kubernetes:apps/v1:StatefulSet"
RUN = PLAYBOOK_RUN_TYPE
GENERATED = type_token(GeneratedSecret)
GENERATED_KEY = type_token(GeneratedSSHKey)
NEW_SHARED_SECRET = "rotated-metadata-secret-4f1d"
NEW_KEY = ("-----BEGIN OPENSSH PRIVATE KEY-----\nrotated-migration-key-body-8c2e\n-----END OPENSSH PRIVATE KEY-----\n",
           "ssh-ed25519 AAAArotatedmigrationkey nova-migration\n")

Inputs = dict[tuple[str, str], str]  # (type, name) -> its inputs as JSON, secrets revealed


def _plain(value: Any, path: str) -> Any:
    """`value` of the dev stack's file with each `secure:` leaf a known test value named after its path."""
    if isinstance(value, dict) and set(value) == {"secure"}:
        return f"test-{path}"
    if isinstance(value, dict):
        return {k: _plain(v, f"{path}.{k}") for k, v in value.items()}
    return value


def _dev_config(tmp_path: Path) -> dict[str, Any]:
    """The dev stack's config (stacks/Pulumi.dev.yaml), its files made local to the test."""
    document = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())["config"]
    config = {k.removeprefix("openstack-nova:"): _plain(v, k) for k, v in document.items()}
    key = tmp_path / "id_ed25519"
    key.write_text("key\n")
    template = config["dataplane"]["nodeSets"]["edpm-compute"]["nodeTemplate"]
    template.update(ansibleSSHPrivateKeyFile=str(key), knownHostsFile=KNOWN_HOSTS)
    return config


def _reveal(value: Any) -> Any:
    if isinstance(value, dict) and SECRET_SIG in value:
        return _reveal(value["value"])
    if isinstance(value, dict):
        return {k: _reveal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_reveal(v) for v in value]
    return value


def run_main(config: dict[str, Any], mocks: pulumi.runtime.Mocks,
             monitor: pulumi.runtime.mocks.MockMonitor | None = None) -> None:
    """Runs __main__.py under `mocks` (through `monitor`, when given) with `config` (`nova` and
    `dataplane` held as secrets, as `--secret --path` makes them)."""
    pulumi.runtime.set_mocks(mocks, project="openstack-nova", stack="dev", preview=False, monitor=monitor)
    runtime_config.set_all_config({f"openstack-nova:{k}": v if isinstance(v, str) else json.dumps(v)
                                   for k, v in config.items()},
                                  [f"openstack-nova:{k}" for k in ("nova", "dataplane")])

    @pulumi.runtime.test
    def program() -> None:
        runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")

    try:
        program()
    finally:
        runtime_config.set_all_config({}, [])


def _program_inputs(config: dict[str, Any]) -> Inputs:
    mocks = RecordingMocks()
    run_main(config, mocks)
    return {(a.typ, name): json.dumps(_reveal(a.inputs), sort_keys=True) for name, a in mocks.resources.items()}


def _changed(before: Inputs, after: Inputs) -> set[tuple[str, str]]:
    return {k for k in before.keys() & after.keys() if before[k] != after[k]}


@pytest.fixture()
def dev_inputs(tmp_path: Path) -> tuple[dict[str, Any], Inputs]:
    config = _dev_config(tmp_path)
    return config, _program_inputs(config)


def test_a_new_metadata_shared_secret_changes_the_metadata_service_and_agents_only(
        dev_inputs: tuple[dict[str, Any], Inputs]) -> None:
    config, before = dev_inputs
    config["nova"]["metadataSharedSecret"] = NEW_SHARED_SECRET
    after = _program_inputs(config)
    holders = {(SECRET, "nova-metadata-config-data"), (SECRET, "nova-metadata-neutron-config"),
               (RUN, "edpm-compute-0-neutron-metadata"), (RUN, "edpm-compute-1-neutron-metadata")}
    # nova-metadata's pods roll through their config hash; nothing else changes
    assert _changed(before, after) == holders | {(STATEFULSET, "nova-metadata")}
    assert {k for k, v in after.items() if NEW_SHARED_SECRET in v} == holders
    # the generated secret it replaces goes; nothing is created
    assert before.keys() - after.keys() == {(GENERATED, "nova-credentials-metadata-shared-secret")}
    assert after.keys() - before.keys() == set()


def test_a_new_migration_key_changes_its_secret_and_every_nodes_nova_run_only(
        dev_inputs: tuple[dict[str, Any], Inputs]) -> None:
    config, before = dev_inputs
    config["dataplane"]["migrationSSHKey"] = {"privateKey": NEW_KEY[0], "publicKey": NEW_KEY[1]}
    after = _program_inputs(config)
    holders = {(SECRET, "nova-migration-ssh-key"), (RUN, "edpm-compute-0-nova"), (RUN, "edpm-compute-1-nova")}
    assert _changed(before, after) == holders
    assert {k for k, v in after.items() if "rotated-migration-key-body" in v} == holders
    assert before.keys() - after.keys() == {(GENERATED_KEY, "nova-migration-ssh-key-generated")}
    assert after.keys() - before.keys() == set()
