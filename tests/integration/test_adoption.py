"""Migrating from the operators: a stack adopts the Namespace and Secret that
"nova-operator" left (created here with kubectl under that field manager), its
first `pulumi up` changes them in place, `pulumi refresh --run-program` runs
the program, and `pulumi import` of another Secret prints Python without the
Secret's value. All through the real CLI and the project's language host."""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.integration.local_env import ENV, run
from tests.integration.stacks import Stack, copy_project

CELLS: dict[str, Any] = {"cell0": {}, "cell1": {}}
OPERATOR = "nova-operator"
API_SECRET = "nova-api-config-data"
OPERATOR_CONF = "[DEFAULT]\n# written by nova-operator\n"


def _config(namespace: str, **changes: Any) -> dict[str, Any]:
    nova: dict[str, Any] = {"cellTemplates": dict(CELLS), **changes}
    return {"namespace": namespace, "kubernetes": {"skipAwait": True}, "nova": nova}


def _taking_over(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    """pulumi as the README says to run it after adoption: the operator's field
    manager owns what it wrote, and the stack takes those fields over."""
    env = {**ENV, "PULUMI_K8S_ENABLE_PATCH_FORCE": "true"}
    proc = subprocess.run(["pulumi", "--non-interactive", *args, "-s", stack.name], cwd=stack.project, env=env,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def _secret(namespace: str, name: str) -> dict[str, Any]:
    return json.loads(run("kubectl", "get", "secret", name, "-n", namespace, "-o", "json").stdout)


@dataclass
class Adopted:
    stack: Stack
    uid: str  # of the operator's Secret before adoption
    printed: str  # what tools/adopt.py printed


@pytest.fixture(scope="module")
def adopted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Adopted]:
    """A new stack of the project, and in its namespace what an operator made: the
    Namespace and the API's config Secret (with a key the program does not write)."""
    stack = Stack(copy_project(tmp_path_factory.mktemp("adopt") / "project"), "itest-adopt")
    stack.namespace = f"itest-adopt-{secrets.token_hex(3)}"
    stack.write(_config(stack.namespace))
    stack.init()
    run("kubectl", "create", "namespace", stack.namespace, f"--field-manager={OPERATOR}")
    run("kubectl", "create", "secret", "generic", API_SECRET, "-n", stack.namespace,
        f"--from-literal=01-nova.conf={OPERATOR_CONF}", "--from-literal=operator-only=1",
        f"--field-manager={OPERATOR}")
    uid = _secret(stack.namespace, API_SECRET)["metadata"]["uid"]
    proc = run(str(stack.project / ".venv" / "bin" / "python"), "tools/adopt.py", "-s", stack.name, "--yes",
               cwd=stack.project)
    yield Adopted(stack, uid, proc.stdout)
    stack.write(_config(stack.namespace))
    stack.destroy()
    run("kubectl", "delete", "namespace", stack.namespace, "--wait=false", "--ignore-not-found", check=False)


def test_adopt_imports_what_exists_and_leaves_the_rest_to_up(adopted: Adopted) -> None:
    stack = adopted.stack
    lines = adopted.printed.splitlines()
    assert "adopt   Namespace " + stack.namespace in lines
    assert f"adopt   Secret {stack.namespace}/{API_SECRET}" in lines
    assert f"create  Secret {stack.namespace}/nova-scheduler-config-data" in lines
    ids = {r["type"]: r.get("id") for r in stack.resources() if r["type"].startswith("kubernetes:core/v1:")}
    assert ids == {"kubernetes:core/v1:Namespace": stack.namespace,
                   "kubernetes:core/v1:Secret": f"{stack.namespace}/{API_SECRET}"}
    # the import file it wrote holds the provider's inputs: the user's only
    written = stack.project / f"adopt-{stack.name}.json"
    assert written.stat().st_mode & 0o777 == 0o600


def test_up_changes_the_adopted_secret_in_place(adopted: Adopted) -> None:
    stack = adopted.stack
    preview = json.loads(_taking_over(stack, "preview", "--json").stdout)
    ops = {step["op"] for step in preview["steps"] if step["urn"].endswith(f"::{API_SECRET}")}
    assert ops == {"update"}  # not a create, nor a replacement
    _taking_over(stack, "up", "--yes", "--skip-preview")
    live = _secret(stack.namespace, API_SECRET)
    assert live["metadata"]["uid"] == adopted.uid  # the same object, not a new one
    conf = base64.b64decode(live["data"]["01-nova.conf"]).decode()
    assert conf != OPERATOR_CONF and "[api_database]" in conf
    assert "config.json" in live["data"]


def test_refresh_with_run_program_runs_the_program(adopted: Adopted) -> None:
    stack = adopted.stack
    stack.cli("refresh", "--run-program", "--yes", "--skip-preview")  # fails the test with its output if it fails
    # With a config the program refuses, only a refresh that runs it fails.
    stack.write(_config(stack.namespace, apiServiceTemplate={"replicas": 33}))
    try:
        refused = stack.cli("refresh", "--run-program", "--yes", "--skip-preview", check=False)
        assert refused.returncode != 0
        assert "openstack-nova:nova.apiServiceTemplate.replicas" in refused.stdout + refused.stderr
        assert "Traceback" not in refused.stdout + refused.stderr
        plain = stack.cli("refresh", "--yes", "--skip-preview", check=False)
        assert plain.returncode == 0, plain.stdout[-3000:] + plain.stderr[-3000:]
    finally:
        stack.write(_config(stack.namespace))


def test_import_prints_python_without_the_secrets_value(adopted: Adopted) -> None:
    stack = adopted.stack
    value = "imported-" + secrets.token_hex(8)
    run("kubectl", "create", "secret", "generic", "operator-extra", "-n", stack.namespace,
        f"--from-literal=token={value}", f"--field-manager={OPERATOR}")
    proc = stack.cli("import", "kubernetes:core/v1:Secret", "operator-extra", f"{stack.namespace}/operator-extra",
                     "--yes", "--protect=false")
    printed = proc.stdout + proc.stderr
    assert 'operator_extra = kubernetes.core.v1.Secret("operator-extra",' in printed
    assert 'data=config.require_secret_object("operator_extra_data"),' in printed
    assert value not in printed and base64.b64encode(value.encode()).decode() not in printed
    # what it prints after its instructions is Python
    compile(proc.stdout[proc.stdout.index("import pulumi\n"):], "generated.py", "exec")
