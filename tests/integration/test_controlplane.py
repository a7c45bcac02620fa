"""The Nova control plane on a real API server: objects read back, what a
config change rolls, what a new cell rolls."""

from __future__ import annotations

import base64
import configparser
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.local_env import kubectl_json
from tests.integration.stacks import Stack, name_of, throwaway_stack, type_of

NS = "openstack"


def secret_files(name: str, namespace: str = NS) -> dict[str, str]:
    data = kubectl_json("get", "secret", "-n", namespace, name)["data"]
    return {k: base64.b64decode(v).decode() for k, v in data.items()}


def ini(text: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.read_string(text)
    return parser


def test_each_cells_compute_config_carries_its_own_bus(dev_stack: str) -> None:
    cell1 = ini(secret_files("nova-cell1-compute-config")["01-nova.conf"])
    cell2 = ini(secret_files("nova-cell2-compute-config")["01-nova.conf"])
    assert "@rabbitmq-cell1.openstack.svc:5672/" in cell1["DEFAULT"]["transport_url"]
    assert "@rabbitmq-cell2.openstack.svc:5672/" in cell2["DEFAULT"]["transport_url"]
    assert "nova-novncproxy-cell1-public" in cell1["vnc"]["novncproxy_base_url"]
    assert set(secret_files("nova-cell1-compute-config")) >= {"01-nova.conf", "nova-blank.conf"}
    secrets = {s["metadata"]["name"] for s in kubectl_json("get", "secrets", "-n", NS)["items"]}
    assert "nova-cell0-compute-config" not in secrets


def test_metadata_secret_for_the_neutron_agent(dev_stack: str) -> None:
    files = secret_files("nova-metadata-neutron-config")
    assert list(files) == ["05-nova-metadata.conf"]
    conf = ini(files["05-nova-metadata.conf"])["DEFAULT"]
    assert conf["nova_metadata_port"] == "8775"
    assert conf["nova_metadata_host"] == "nova-metadata-internal.openstack.svc"
    assert conf["nova_metadata_protocol"] == "http"
    assert len(conf["metadata_proxy_shared_secret"]) >= 32


def test_override_file_only_where_custom_config_is_set(dev_stack: str) -> None:
    # dev sets no customServiceConfig on the control plane
    for name in ("nova-api-config-data", "nova-scheduler-config-data", "nova-cell1-conductor-config-data"):
        assert "02-nova-override.conf" not in secret_files(name)
        assert {"01-nova.conf", "nova-blank.conf", "config.json"} <= set(secret_files(name))


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A control plane of its own, without data plane."""
    yield from throwaway_stack(tmp_path_factory.mktemp("cp"), "itest-cp", base_config)


def base_config(namespace: str, **nova: Any) -> dict[str, Any]:
    """No neighbours serve this namespace and its images are not on the node: objects
    only, nothing awaited (pods wait for an image that never comes, using no CPU)."""
    cells = {"cell0": {}, "cell1": {}, "cell2": {}}
    return {"namespace": namespace, "kubernetes": {"skipAwait": True},
            "nova": {"cellTemplates": cells, **nova}}


def test_custom_service_config_rolls_only_the_api(plane: Stack) -> None:
    plane.write(base_config(plane.namespace, apiServiceTemplate={"customServiceConfig": "[DEFAULT]\ndebug = true\n"}))
    steps = plane.preview_steps()
    changed = sorted((s["op"], type_of(s), name_of(s)) for s in steps)
    assert changed == [
        ("update", "kubernetes:apps/v1:StatefulSet", "nova-api"),
        ("update", "kubernetes:core/v1:Secret", "nova-api-config-data"),
    ]
    statefulset = next(s for s in steps if type_of(s) == "kubernetes:apps/v1:StatefulSet")
    assert all(k.startswith("spec.template.metadata.annotations") for k in statefulset.get("detailedDiff", {}))
    plane.cli("up", "--yes", "--skip-preview")
    assert "02-nova-override.conf" in secret_files("nova-api-config-data", plane.namespace)
    assert "02-nova-override.conf" not in secret_files("nova-scheduler-config-data", plane.namespace)
    assert plane.cli("preview", "--expect-no-changes", check=False).returncode == 0


def test_new_cell_adds_its_objects_and_rolls_top_level_services(plane: Stack) -> None:
    config = base_config(plane.namespace, apiServiceTemplate={"customServiceConfig": "[DEFAULT]\ndebug = true\n"})
    config["nova"]["cellTemplates"]["cell3"] = {}
    plane.write(config)
    steps = plane.preview_steps()
    created = {name_of(s) for s in steps if s["op"] == "create"}
    updated = sorted((type_of(s), name_of(s)) for s in steps if s["op"] == "update")
    assert {"nova-cell3-conductor", "nova-cell3-compute-config", "nova-cell3-db-sync",
            "nova-cell3-cell-mapping", "nova-cell3-novncproxy"} <= created
    assert all("cell3" in n for n in created)
    rolled = [("kubernetes:apps/v1:StatefulSet", n) for n in ("nova-api", "nova-metadata", "nova-scheduler")]
    assert updated == sorted([*rolled, ("kubernetes:core/v1:Secret", "nova-service-cleanup-config")])
    # the stale-record cleanup runs again with the new cell's conductor in its plan; nothing else is replaced
    assert {name_of(s) for s in steps if s["op"] not in ("create", "update")} <= {"nova-service-cleanup-job"}
