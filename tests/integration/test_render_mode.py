"""`kubernetes.mode: render`: a copy of the dev stack written as manifests, with no
cluster access, that the real API server accepts (`kubectl apply --dry-run=server`).

The copy is a stack of its own (its own state; the dev stack's is never touched),
in a namespace of its own that the test creates for the dry run: dry-run objects
are checked against an existing namespace, and no dev object has their names
there. The copy has no data plane: rendering writes Kubernetes objects only, and
its node runs would configure the dev stack's test nodes."""

from __future__ import annotations

import re
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.local_env import run
from tests.integration.stacks import Stack, copy_project

STACK = "itest-render"
CELLS = ("cell0", "cell1", "cell2")  # the dev stack's
# kubectl's line for each object of a server-side dry run, e.g.
# "statefulset.apps/nova-api created (server dry run)"
DRY_RUN_LINE = re.compile(r"^(?P<kind>[a-z.]+)/(?P<name>\S+) (?:created|configured|unchanged) \(server dry run\)$")


@dataclass
class Rendered:
    stack: Stack
    namespace: str
    directory: Path
    namespace_on_cluster: bool  # right after `pulumi up`: whether the cluster had the stack's namespace


def _namespace_exists(name: str) -> bool:
    return f"namespace/{name}" in run("kubectl", "get", "namespaces", "-o", "name").stdout.split()


def render_config(dev: Path, namespace: str, directory: Path) -> str:
    """The dev stack's config file (its encrypted secrets and salt kept, so they decrypt with
    the same passphrase), rendering into `directory`, in `namespace`, without its data plane."""
    document = yaml.safe_load(dev.read_text())
    config = document["config"]
    config["openstack-nova:namespace"] = namespace
    # the cluster's load-balancer pools stay: the metadata Service's override names one
    pools = config["openstack-nova:kubernetes"]["loadBalancerPools"]
    config["openstack-nova:kubernetes"] = {"mode": "render", "renderDir": str(directory), "loadBalancerPools": pools}
    del config["openstack-nova:dataplane"]
    return yaml.safe_dump(document)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rendered]:
    parent = tmp_path_factory.mktemp("render")
    project = copy_project(parent / "project", keep_stacks=("dev",))
    stack = Stack(project, STACK)
    stack.namespace = f"{STACK}-{secrets.token_hex(3)}"
    directory = parent / "manifests"  # holds the Secrets' values in plain text: removed afterwards
    stack.file.write_text(render_config(project / "stacks" / "Pulumi.dev.yaml", stack.namespace, directory))
    stack.init()
    try:
        stack.cli("preview")
        stack.cli("up", "--yes", "--skip-preview")
        yield Rendered(stack, stack.namespace, directory, _namespace_exists(stack.namespace))
    finally:
        stack.destroy()
        shutil.rmtree(directory, ignore_errors=True)


def _objects(directory: Path) -> list[dict[str, Any]]:
    """Every object of the manifests under `directory` (the provider writes one per file)."""
    return [doc for path in sorted(directory.rglob("*.yaml")) for doc in yaml.safe_load_all(path.read_text()) if doc]


def test_render_mode_writes_the_manifests_without_a_cluster(rendered: Rendered) -> None:
    objects = _objects(rendered.directory)
    kinds = {(o["kind"], o["metadata"]["name"]) for o in objects}
    assert ("Namespace", rendered.namespace) in kinds
    assert {("StatefulSet", "nova-api"), ("Secret", "nova-api-config-data")} <= kinds
    # every namespaced object is in the stack's namespace, which `pulumi up` did not create on the cluster
    assert {o["metadata"].get("namespace") for o in objects if o["kind"] != "Namespace"} == {rendered.namespace}
    assert not rendered.namespace_on_cluster


@pytest.fixture()
def namespace(rendered: Rendered) -> Iterator[str]:
    """The rendered stack's namespace on the cluster, for the dry run only."""
    run("kubectl", "create", "namespace", rendered.namespace, "--save-config")
    try:
        yield rendered.namespace
    finally:
        run("kubectl", "delete", "namespace", rendered.namespace, "--wait=false", "--ignore-not-found", check=False)


def test_the_api_server_accepts_every_rendered_manifest(rendered: Rendered, namespace: str) -> None:
    proc = run("kubectl", "apply", "--dry-run=server", "-f", str(rendered.directory), "--recursive", check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    applied: dict[str, set[str]] = {}
    for line in proc.stdout.splitlines():
        match = DRY_RUN_LINE.match(line)
        assert match, line
        applied.setdefault(match["kind"], set()).add(match["name"])
    # one line per rendered object: none was skipped
    assert sum(len(names) for names in applied.values()) == len(_objects(rendered.directory))
    assert applied["namespace"] == {namespace}
    assert {"nova-api-config-data", "nova-scheduler-config-data", "nova-cell1-compute-config",
            "nova-cell2-compute-config", "nova-metadata-neutron-config", "nova-migration-ssh-key",
            "libvirt-secret", *(f"nova-{c}-conductor-config-data" for c in CELLS)} <= applied["secret"]
    assert applied["statefulset.apps"] == {
        "nova-api", "nova-scheduler", "nova-metadata", *(f"nova-{c}-conductor" for c in CELLS),
        "nova-cell1-novncproxy", "nova-cell2-novncproxy"}
    assert applied["job.batch"] == {
        *(f"nova-{c}-conductor-db-sync" for c in CELLS), *(f"nova-{c}-cell-mapping" for c in CELLS),
        "nova-keystone-registration", "nova-service-cleanup"}
    assert applied["cronjob.batch"] == {f"nova-{c}-db-purge" for c in CELLS}

