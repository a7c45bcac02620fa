"""What stays secret: no password, key or shared secret in clear text in any resource's inputs
(what preview shows) or state, the whole program (`__main__.py`) run under Pulumi mocks that keep
secret what the engine keeps secret; what each resource that makes a secret asks the engine to keep
secret; and the components' own promises (a run's key and files, a refresh, the credentials)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pulumi
import pytest

from components.ansible_runner import playbook
from components.ansible_runner.playbook import PlaybookRun, _PlaybookProvider, roles_fingerprint
from tests.unit import LOAD_BALANCER
from tests.unit.engine import EngineMonitor, Registration, in_clear, is_secret, name_of, secret
from tests.unit.test_components import RecordingMocks, settings
from tests.unit.test_playbook import PROPS
from tests.unit.test_rotation import NEW_KEY, _dev_config, run_main

# set by a node's customServiceConfig: a snippet that sets secret options (a neutron password)
SNIPPET_SECRET = "snippet-password-51c3"


def _secrets_of(config: Any) -> Iterator[str]:
    """The stack config's secret values (test values named after their path: test_rotation._plain)."""
    if isinstance(config, dict):
        for value in config.values():
            yield from _secrets_of(value)
    elif isinstance(config, str) and config.startswith("test-openstack-nova:"):
        yield config


class KeyMakingMocks(RecordingMocks):
    """RecordingMocks whose generated SSH keys have a private key."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        id_, state = super().new_resource(args)
        if "comment" in state:
            state["private_key"] = f"private-key-of-{args.name}\n"
            state["public_key"] = f"ssh-ed25519 AAAA {args.name}\n"
        return id_, state


def _run(config: dict[str, Any]) -> EngineMonitor:
    mocks = KeyMakingMocks()
    monitor = EngineMonitor(mocks)
    run_main(config, mocks, monitor)
    return monitor


def _made_secrets(program: EngineMonitor) -> set[str]:
    """What the program's dynamic resources made secret: generated passwords, keys."""
    made = set()
    for r in program.dynamic():
        # GeneratedSecret, GeneratedSSHKey, a certificate authority and its certificates
        key = next((k for i, k in (("bytes", "value"), ("comment", "private_key"), ("common_name", "key_pem"))
                    if i in r.inputs), None)
        value = r.state.get(key) if key else None
        value = value["value"] if is_secret(value) else value
        if isinstance(value, str) and value:
            made.add(value.strip())
    return made


def _dev_with_tls(tmp_path: Path) -> dict[str, Any]:
    config = _dev_config(tmp_path)
    node_set = config["dataplane"]["nodeSets"]["edpm-compute"]
    node_set["tlsEnabled"] = True
    node_set["nodes"]["edpm-compute-0"]["customServiceConfig"] = {
        "nova": f"[neutron]\npassword = {SNIPPET_SECRET}\n",
        "neutron-metadata": f"[DEFAULT]\nmetadata_proxy_shared_secret = {SNIPPET_SECRET}\n"}
    return config


def _given_key(tmp_path: Path) -> dict[str, Any]:
    config = _dev_with_tls(tmp_path)
    config["dataplane"]["migrationSSHKey"] = {"privateKey": NEW_KEY[0], "publicKey": NEW_KEY[1]}
    return config


def _metadata_per_cell(tmp_path: Path) -> dict[str, Any]:
    config = _dev_config(tmp_path)
    config["nova"]["metadataServiceTemplate"] = {"enabled": False}
    for cell in ("cell1", "cell2"):
        config["nova"]["cellTemplates"][cell]["metadataServiceTemplate"] = {"enabled": True, **LOAD_BALANCER}
    return config


@pytest.mark.parametrize("make_config", [_dev_with_tls, _given_key, _metadata_per_cell],
                         ids=["dev-with-tls", "given-migration-key", "metadata-per-cell"])
def test_no_secret_shows_in_clear_text_in_any_inputs_or_state(tmp_path: Path, make_config: Any) -> None:
    config = make_config(tmp_path)
    program = _run(config)
    given = set(_secrets_of(config))
    known = {*given, *_made_secrets(program), SNIPPET_SECRET, "rotated-migration-key-body"}
    assert len(known) >= 8  # the stack's passwords, the generated ones, the keys
    # as they stand in a URL (database and bus URLs quote them) too
    known |= {quote(s, safe="") for s in known}
    # each secret of the stack reaches something (else the check below proves nothing)
    everything = json.dumps([[r.inputs, r.state] for r in program.registered.values()])
    assert [s for s in given if s not in everything and quote(s, safe="") not in everything] == []

    def shown(r: Registration) -> list[str]:
        text = json.dumps([in_clear(r.inputs), in_clear(r.state)])
        return sorted(s for s in known if s in text)

    found = {f"{r.type} {name_of(r)}": shown(r) for r in program.registered.values() if shown(r)}
    assert found == {}


# What each kind of dynamic resource keeps, by an input only it has.
SECRET_OUTPUTS = {"bytes": {"value"},  # GeneratedSecret
                  "comment": {"private_key"},  # GeneratedSSHKey
                  "ca_cert_pem": {"key_pem", "ca_key_pem"},  # IssuedCertificate
                  "common_name": {"key_pem"},  # CertificateAuthority
                  "playbook": {"ssh_private_key", "files"}}  # PlaybookRun


def test_what_makes_or_holds_a_secret_asks_the_engine_to_keep_it_secret(tmp_path: Path) -> None:
    program = _run(_dev_with_tls(tmp_path))
    seen: dict[str, list[str]] = {kind: [] for kind in SECRET_OUTPUTS}
    for r in program.dynamic():
        kind = next(k for k in SECRET_OUTPUTS if k in r.inputs)
        seen[kind].append(r.name)
        assert SECRET_OUTPUTS[kind] <= r.secret_outputs, r.name
    assert {k: len(v) for k, v in seen.items()} == {"bytes": 2, "comment": 1, "ca_cert_pem": 2, "common_name": 1,
                                                    "playbook": 10}


@pytest.fixture()
def mocks() -> Iterator[RecordingMocks]:
    recorder = RecordingMocks()
    pulumi.runtime.set_mocks(recorder, project="openstack-nova", stack="unit", preview=False)
    yield recorder


@pulumi.runtime.test
def test_a_run_keeps_its_key_and_files_secret_however_they_are_given(mocks: RecordingMocks) -> pulumi.Output[Any]:
    run = PlaybookRun("n0-nova", playbook="nova.yml", host={"name": "n0", "address": "192.0.2.10"},
                      ssh_private_key="plain-key", known_hosts="", files={"01-nova.conf": "plain"},
                      public_files={"02-nova-host-specific.conf": "shown"})

    def check(_: Any) -> None:
        inputs = mocks.resources["n0-nova"].inputs
        assert inputs["ssh_private_key"] == secret("plain-key")
        assert inputs["files"] == secret({"01-nova.conf": "plain"})
        assert inputs["public_files"] == {"02-nova-host-specific.conf": "shown"}

    return run.urn.apply(check)


@pytest.mark.parametrize("roles", ["recorded-by-other-roles", "these"])
def test_a_refresh_writes_the_key_and_the_secret_files_back_as_secrets(
        roles: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether it checks the node or not (deployed with other roles): state keeps them secret."""
    monkeypatch.setattr(playbook, "run_playbook", lambda *_, **__: {"changed": 0})
    props = {**PROPS, "roles": roles_fingerprint("nova.yml") if roles == "these" else roles}
    result = _PlaybookProvider().read("id", props)
    for state in (result.outs, result.inputs):
        assert state is not None
        assert state["ssh_private_key"] == secret(PROPS["ssh_private_key"])
        assert state["files"] == secret(PROPS["files"])
        assert state["public_files"] == PROPS["public_files"]


def _is_secret(output: pulumi.Output[Any]) -> pulumi.Output[bool]:
    return pulumi.Output.from_input(output.is_secret())


@pulumi.runtime.test
def test_renderers_get_the_credentials_as_a_secret(mocks: RecordingMocks) -> pulumi.Output[Any]:
    from components.credentials import NovaCredentials

    s = settings()
    credentials = NovaCredentials("nova-credentials", s.nova, s.namespace)
    outputs = [credentials.for_cell(cell) for cell in (None, "cell0", "cell1")]
    return pulumi.Output.all(*[_is_secret(o) for o in outputs]).apply(lambda v: assert_all(v))


@pulumi.runtime.test
def test_a_secret_the_stack_gives_stays_secret(mocks: RecordingMocks) -> pulumi.Output[Any]:
    from components.generated import secret_or_generated

    owner = pulumi.ComponentResource("test:index:Owner", "owner")
    return _is_secret(secret_or_generated("from-the-stack", "given", owner)).apply(lambda s: assert_all([s]))


def assert_all(values: list[bool]) -> None:
    assert all(values), values


@pytest.mark.parametrize("metadata", ["top-level", "per-cell"])
@pulumi.runtime.test
def test_what_the_control_plane_hands_to_the_data_plane_is_secret(mocks: RecordingMocks,
                                                                 metadata: str) -> pulumi.Output[Any]:
    """The computes' nova.conf, the metadata agents' shared secret (ControlPlaneFiles: all secret)."""
    from components.controlplane import NovaControlPlane, control_plane_spec

    if metadata == "top-level":
        plane = NovaControlPlane("nova", control_plane_spec(settings()))
        handed = [plane.metadata_neutron_config]
    else:
        cells = {"cell0": {}, **{c: {"metadataServiceTemplate": {"enabled": True}} for c in ("cell1", "cell2")}}
        plane = NovaControlPlane("nova", control_plane_spec(
            settings(metadataServiceTemplate={"enabled": False}, cellTemplates=cells)))
        handed = [plane.cells[c].metadata_neutron_config for c in ("cell1", "cell2")]
    handed += [plane.cells[c].compute_config for c in ("cell1", "cell2")]
    assert None not in handed
    return pulumi.Output.all(*[_is_secret(o) for o in handed if o is not None]).apply(assert_all)


@pulumi.runtime.test
def test_a_migration_key_the_stack_gives_stays_secret(mocks: RecordingMocks, tmp_path: Path) -> pulumi.Output[Any]:
    from components.k8s import Target
    from components.migrationkey import NovaMigrationSSHKey
    from components.stackconfig import load

    raw = {"dataplane": {"migrationSSHKey": {"privateKey": NEW_KEY[0], "publicKey": NEW_KEY[1]}}}
    given = load(raw, secret_keys=["dataplane"], catalog=None).dataplane.migration_ssh_key
    key = NovaMigrationSSHKey("nova-migration-ssh-key", Target("openstack"), given)
    return _is_secret(key.private_key).apply(lambda s: assert_all([s]))
