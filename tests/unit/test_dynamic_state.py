"""The dynamic resources are named for what they are, and stacks made before they were keep
working: the engine takes each for the one recorded under the SDK's one type (their alias),
nothing is replaced or run again, and the providers pickled into such a stack (by module path,
before the Ansible runner had a package of its own) still load.

data/dynamic_state/ holds a stack recorded with the code of that time (its docstring says how);
the last test runs today's code against it with the real Pulumi CLI, in a backend of its own.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import dill
import pytest
from pulumi.dynamic import ResourceProvider

from components.ansible_runner import playbook
from components.ansible_runner.failures import UnreachableNodeError, forget_on_delete
from components.ansible_runner.playbook import PlaybookRun, _PlaybookProvider, roles_fingerprint
from components.certificates import CertificateAuthority, IssuedCertificate, _CAProvider, _CertificateProvider
from components.dynamictypes import LEGACY_TYPE, type_token
from components.generated import (
    GeneratedSecret,
    GeneratedSSHKey,
    _GeneratedSecretProvider,
    _GeneratedSSHKeyProvider,
)
from tests.unit.test_playbook import PROPS
from tests.unit.test_secret_marking import _dev_with_tls, _run

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data" / "dynamic_state"
SECRET_SIG = "4dabf18193072939515e22adb298388d"
TYPES = {PlaybookRun: "pulumi-python:dynamic/ansible:PlaybookRun",
         GeneratedSecret: "pulumi-python:dynamic/generated:GeneratedSecret",
         GeneratedSSHKey: "pulumi-python:dynamic/generated:GeneratedSSHKey",
         CertificateAuthority: "pulumi-python:dynamic/certificates:CertificateAuthority",
         IssuedCertificate: "pulumi-python:dynamic/certificates:IssuedCertificate"}
# The provider each resource of the recorded stack was made by, and the module path it was pickled under.
RECORDED = {"edpm-compute-0-nova": (_PlaybookProvider, "components.playbook"),
            "nova-password": (_GeneratedSecretProvider, "components.generated"),
            "nova-migration-ssh-key": (_GeneratedSSHKeyProvider, "components.generated"),
            "rootca-libvirt": (_CAProvider, "components.certificates"),
            "edpm-compute-0-libvirt": (_CertificateProvider, "components.certificates")}


def recorded_state() -> dict[str, Any]:
    return dict(json.loads((DATA / "state.json").read_text()))


def _revealed(value: Any) -> Any:
    return json.loads(value["plaintext"]) if isinstance(value, dict) and SECRET_SIG in value else value


def test_each_dynamic_resource_is_named_for_what_it_is() -> None:
    assert {cls: type_token(cls) for cls in TYPES} == TYPES
    assert TYPES[PlaybookRun] == playbook.TYPE


def test_each_dynamic_resource_answers_to_the_type_every_one_had_before(tmp_path: Path) -> None:
    program = _run(_dev_with_tls(tmp_path))
    dynamic = program.dynamic()
    assert {r.type for r in dynamic} == set(TYPES.values())
    assert all(r.aliases == (LEGACY_TYPE,) for r in dynamic), [(r.name, r.aliases) for r in dynamic]


def test_the_providers_recorded_before_the_runner_moved_load_as_todays() -> None:
    for resource in recorded_state()["deployment"]["resources"]:
        name = resource["urn"].rsplit("::", 1)[1]
        if name not in RECORDED:
            continue
        assert resource["type"] == LEGACY_TYPE
        cls, module = RECORDED[name]
        pickled = base64.b64decode(_revealed(resource["outputs"]["__provider"]))
        assert module.encode() in pickled and cls.__name__.encode() in pickled  # as recorded, by reference
        provider = dill.loads(pickled)
        assert type(provider) is cls and isinstance(provider, ResourceProvider)


URN = "urn:pulumi:dev::openstack-nova::openstack-nova:dataplane:EdpmNodeSet${}::edpm-compute-1-nova"


def test_a_run_recorded_under_the_old_type_records_nothing_new() -> None:
    """Its URN, kept for its delete's message, is the one the engine gives it by its alias."""
    olds = {**PROPS, "state_urn": URN.format(LEGACY_TYPE)}
    assert _PlaybookProvider().diff("id", olds, {**PROPS, "state_urn": URN.format(TYPES[PlaybookRun])}).changes is False
    moved = URN.format(TYPES[PlaybookRun]).replace("edpm-compute-1-nova", "edpm-compute-9-nova")
    assert _PlaybookProvider().diff("id", olds, {**PROPS, "state_urn": moved}).changes is True


def test_a_delete_of_a_run_recorded_under_the_old_type_offers_both_urns(monkeypatch: pytest.MonkeyPatch) -> None:
    def unreachable(*_: Any, **__: Any) -> None:
        raise UnreachableNodeError("edpm-compute-1 is unreachable")

    monkeypatch.setattr(playbook, "run_playbook", unreachable)
    monkeypatch.delenv("OPENSTACK_NOVA_FORGET_NODES", raising=False)
    props = {**PROPS, "stop_playbook": "nova-stop.yml", "state_urn": URN.format(LEGACY_TYPE)}
    with pytest.raises(playbook.PlaybookError) as err:
        _PlaybookProvider().delete("id", props)
    assert str(err.value).endswith(
        f"\n    pulumi state delete '{URN.format(TYPES[PlaybookRun])}'"
        f"\n    (or, if `pulumi stack --show-urns` lists it so: pulumi state delete '{URN.format(LEGACY_TYPE)}')")
    assert forget_on_delete(props, UnreachableNodeError("x"), [URN.format(TYPES[PlaybookRun])]).endswith(
        f"\n    pulumi state delete '{URN.format(TYPES[PlaybookRun])}'")


# --- with the real CLI, against the recorded stack ---------------------------------------------

def _cli_dir() -> Path | None:
    """The toolchain's Pulumi CLI, with its language host and dynamic-provider plugin beside it."""
    versions = dict(line.split("=", 1) for line in (ROOT / "devenv" / "versions.env").read_text().splitlines()
                    if "=" in line and not line.startswith("#"))
    cache = Path(os.environ.get("OPENSTACK_NOVA_CACHE") or Path.home() / ".cache" / "openstack-nova")
    built = cache / "toolchain" / f"pulumi-{versions['PULUMI_VERSION'].strip()}"
    if (built / "pulumi").is_file() and (built / "pulumi-resource-pulumi-python").is_file():
        return built
    found = shutil.which("pulumi")
    return Path(found).parent if found and shutil.which("pulumi-language-python") else None


CLI = _cli_dir()


@pytest.mark.skipif(CLI is None, reason="needs the toolchain's Pulumi CLI (devenv/toolchain.sh pulumi)")
def test_a_stack_made_before_the_type_names_neither_replaces_nor_runs_anything(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(DATA / "__main__.py", project / "__main__.py")
    for tree in ("components", "ansible"):
        (project / tree).symlink_to(ROOT / tree)
    (project / "Pulumi.yaml").write_text(
        f"name: dynamic-state\nruntime:\n  name: python\n  options:\n    virtualenv: {ROOT / '.venv'}\n")
    (tmp_path / "state").mkdir()
    env = {**os.environ, "PATH": f"{CLI}{os.pathsep}{os.environ['PATH']}", "PULUMI_HOME": str(tmp_path / "home"),
           "PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}", "PULUMI_CONFIG_PASSPHRASE": "test",
           "PULUMI_SKIP_UPDATE_CHECK": "true", "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true"}
    for name in ("PULUMI_CONFIG_PASSPHRASE_FILE", "PULUMI_CONFIG", "PULUMI_STACK"):
        env.pop(name, None)

    def pulumi(*args: str) -> str:
        proc = subprocess.run(["pulumi", "--non-interactive", *args], cwd=project, env=env, capture_output=True,
                              text=True, timeout=300, check=False)
        assert proc.returncode == 0, f"pulumi {' '.join(args)}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        return proc.stdout

    pulumi("stack", "init", "record")
    state = recorded_state()
    # the stack's own secrets provider; the roles the checkout has today (what runs on a node is
    # not what this test is about: test_playbook.py has it)
    state["deployment"]["secrets_providers"] = json.loads(pulumi("stack", "export"))["deployment"]["secrets_providers"]
    for resource in state["deployment"]["resources"]:
        for part in ("inputs", "outputs"):
            if "roles" in resource.get(part, {}):
                resource[part]["roles"] = roles_fingerprint("nova.yml")
    (tmp_path / "import.json").write_text(json.dumps(state))
    pulumi("stack", "import", "--file", str(tmp_path / "import.json"))

    preview = json.loads(pulumi("preview", "--json", "--expect-no-changes"))
    assert preview["changeSummary"] == {"same": 7}, preview["changeSummary"]
    pulumi("up", "--yes", "--skip-preview", "--expect-no-changes")
    after = {r["urn"].rsplit("::", 1)[1]: r for r in json.loads(pulumi("stack", "export"))["deployment"]["resources"]}
    # each now under its own type; its outputs still hold the provider pickled before the move
    assert {name: after[name]["type"] for name in RECORDED} == {
        "edpm-compute-0-nova": TYPES[PlaybookRun], "nova-password": TYPES[GeneratedSecret],
        "nova-migration-ssh-key": TYPES[GeneratedSSHKey], "rootca-libvirt": TYPES[CertificateAuthority],
        "edpm-compute-0-libvirt": TYPES[IssuedCertificate]}
    assert b"components.playbook" in base64.b64decode(after["edpm-compute-0-nova"]["outputs"]["__provider"])
    assert json.loads(pulumi("preview", "--json", "--expect-no-changes"))["changeSummary"] == {"same": 7}
    # a delete loads the provider from the state, as recorded
    pulumi("destroy", "--yes", "--skip-preview")
