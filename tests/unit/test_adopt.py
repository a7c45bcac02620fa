"""tools/adopt.py: which of the objects a stack would create it adopts, and the
import file it gives `pulumi import` (built from what `pulumi preview --json
--import-file` writes; the shapes here are the CLI's)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tools import adopt

STACK, PROJECT = "prod", "openstack-nova"
PREFIX = f"urn:pulumi:{STACK}::{PROJECT}::"
CONTROL_PLANE = "openstack-nova:index:NovaControlPlane"
WORKLOAD = "openstack-nova:index:NovaServiceWorkload"
SECRET = "kubernetes:core/v1:Secret"


def _step(urn: str, type_: str, op: str = "create", **metadata: str) -> dict[str, Any]:
    state: dict[str, Any] = {"urn": urn, "type": type_}
    if metadata:
        state["inputs"] = {"metadata": metadata, "stringData": "[secret]"}
    return {"op": op, "urn": urn, "newState": state}


PREVIEW_STEPS = [
    _step(f"{PREFIX}pulumi:pulumi:Stack::openstack-nova-prod", "pulumi:pulumi:Stack"),
    _step(f"{PREFIX}pulumi:providers:kubernetes::kubernetes", "pulumi:providers:kubernetes"),
    _step(f"{PREFIX}{CONTROL_PLANE}::nova", CONTROL_PLANE),
    _step(f"{PREFIX}{CONTROL_PLANE}$kubernetes:core/v1:Namespace::openstack", "kubernetes:core/v1:Namespace",
          name="openstack"),
    _step(f"{PREFIX}{CONTROL_PLANE}${WORKLOAD}::nova-api", WORKLOAD),
    _step(f"{PREFIX}{CONTROL_PLANE}${WORKLOAD}${SECRET}::nova-api-config-data", SECRET,
          name="nova-api-config-data", namespace="openstack"),
    _step(f"{PREFIX}{CONTROL_PLANE}${WORKLOAD}$kubernetes:apps/v1:StatefulSet::nova-api",
          "kubernetes:apps/v1:StatefulSet", name="nova-api", namespace="openstack"),
    _step(f"{PREFIX}{CONTROL_PLANE}${SECRET}::nova-metadata-neutron-config", SECRET,
          name="nova-metadata-neutron-config", namespace="openstack"),
    _step(f"{PREFIX}{SECRET}::kept", SECRET, op="same", name="kept", namespace="openstack"),
]

# What the CLI writes for those creates: unique names (the StatefulSet, named like
# its component, got the type as a suffix), parents and providers by name.
IMPORT_FILE: dict[str, Any] = {
    "resources": [
        {"type": "pulumi:providers:kubernetes", "name": "kubernetes",
         "inputs": {"kubeconfig": "/etc/kube/config", "version": "4.25.0"}},
        {"type": CONTROL_PLANE, "name": "nova", "component": True},
        {"type": "kubernetes:core/v1:Namespace", "name": "openstack", "id": "<PLACEHOLDER>", "parent": "nova",
         "provider": "kubernetes", "version": "4.25.0"},
        {"type": WORKLOAD, "name": "nova-api", "component": True, "parent": "nova"},
        {"type": SECRET, "name": "nova-api-config-data", "id": "<PLACEHOLDER>", "parent": "nova-api",
         "provider": "kubernetes", "version": "4.25.0"},
        {"type": "kubernetes:apps/v1:StatefulSet", "name": "nova-apiStatefulSet", "logicalName": "nova-api",
         "id": "<PLACEHOLDER>", "parent": "nova-api", "provider": "kubernetes", "version": "4.25.0"},
        {"type": SECRET, "name": "nova-metadata-neutron-config", "id": "<PLACEHOLDER>", "parent": "nova",
         "provider": "kubernetes", "version": "4.25.0"},
    ],
}


def test_candidates_are_the_creates_of_the_kinds_to_adopt() -> None:
    found = adopt.candidates(PREVIEW_STEPS, {"Namespace", "Secret"})
    assert [(c.kind, c.import_id) for c in found] == [
        ("Namespace", "openstack"),  # cluster-scoped: its ID is its name
        ("Secret", "openstack/nova-api-config-data"),
        ("Secret", "openstack/nova-metadata-neutron-config"),
    ]


def test_an_object_without_a_known_name_cannot_be_adopted() -> None:
    steps = [_step(f"{PREFIX}{SECRET}::x", SECRET, namespace="openstack")]
    with pytest.raises(adopt.AdoptError, match=r"has no known metadata\.name"):
        adopt.candidates(steps, {"Secret"})


def test_each_entry_of_the_import_file_stands_for_its_urn() -> None:
    urns = adopt.entry_urns(IMPORT_FILE, STACK, PROJECT)
    assert urns["nova-api-config-data"] == f"{PREFIX}{CONTROL_PLANE}${WORKLOAD}${SECRET}::nova-api-config-data"
    # a renamed entry keeps its URN's name
    assert urns["nova-apiStatefulSet"] == f"{PREFIX}{CONTROL_PLANE}${WORKLOAD}$kubernetes:apps/v1:StatefulSet::nova-api"
    assert urns["kubernetes"] == f"{PREFIX}pulumi:providers:kubernetes::kubernetes"
    assert set(urns.values()) <= {s["urn"] for s in PREVIEW_STEPS}


def test_the_import_file_holds_what_exists_and_what_it_hangs_from() -> None:
    found = adopt.candidates(PREVIEW_STEPS, {"Namespace", "Secret"})
    # the cell's metadata Secret does not exist on the cluster: the program will create it
    existing = {c.urn: c for c in found if c.name != "nova-metadata-neutron-config"}
    selected = adopt.select(IMPORT_FILE, existing, STACK, PROJECT)
    assert selected == {"resources": [
        IMPORT_FILE["resources"][0],  # the provider, with its inputs
        IMPORT_FILE["resources"][1],
        {**IMPORT_FILE["resources"][2], "id": "openstack"},
        IMPORT_FILE["resources"][3],
        {**IMPORT_FILE["resources"][4], "id": "openstack/nova-api-config-data"},
    ]}


def test_parents_already_in_the_stack_stay_in_the_name_table() -> None:
    secret_urn = f"{PREFIX}{CONTROL_PLANE}${SECRET}::nova-metadata-neutron-config"
    import_file = {
        "nameTable": {"nova": f"{PREFIX}{CONTROL_PLANE}::nova",
                      "kubernetes": f"{PREFIX}pulumi:providers:kubernetes::kubernetes"},
        "resources": [{"type": SECRET, "name": "nova-metadata-neutron-config", "id": "<PLACEHOLDER>",
                       "parent": "nova", "provider": "kubernetes"}],
    }
    [candidate] = [c for c in adopt.candidates(PREVIEW_STEPS, {"Secret"}) if c.urn == secret_urn]
    selected = adopt.select(import_file, {secret_urn: candidate}, STACK, PROJECT)
    assert selected["nameTable"] == import_file["nameTable"]
    assert selected["resources"] == [{**import_file["resources"][0], "id": "openstack/nova-metadata-neutron-config"}]


def test_an_adopted_object_under_a_resource_that_is_not_adopted_is_refused() -> None:
    import_file = {"resources": [
        {"type": "kubernetes:apps/v1:StatefulSet", "name": "web", "id": "<PLACEHOLDER>"},
        {"type": SECRET, "name": "child", "id": "<PLACEHOLDER>", "parent": "web"},
    ]}
    urn = f"{PREFIX}kubernetes:apps/v1:StatefulSet${SECRET}::child"
    child = adopt.Candidate(urn, "Secret", "openstack", "child")
    with pytest.raises(adopt.AdoptError, match="holds an object to adopt but is not adopted itself"):
        adopt.select(import_file, {urn: child}, STACK, PROJECT)


def test_the_import_file_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "adopt.json"
    path.write_text("{}")
    path.chmod(0o644)
    adopt._write_private(path, json.dumps({"resources": []}))
    assert path.stat().st_mode & 0o777 == 0o600
    assert json.loads(path.read_text()) == {"resources": []}


def test_adopted_objects_keep_only_the_inputs_the_program_sets() -> None:
    secret = "urn:pulumi:s::p::kubernetes:core/v1:Secret::api"
    recorded = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "api"}, "data": "x", "type": "Opaque"}
    other = {"urn": "urn:pulumi:s::p::kubernetes:core/v1:Secret::other", "inputs": dict(recorded)}
    deployment = {"resources": [
        {"urn": secret, "inputs": dict(recorded), "outputs": {"__inputs": dict(recorded), "type": "Opaque"}}, other]}
    adopted = [adopt.Candidate(secret, "Secret", "ns", "api",
                               frozenset({"apiVersion", "kind", "metadata", "stringData"}))]
    assert adopt.trim_inputs(deployment, adopted) is True
    kept = {"apiVersion", "kind", "metadata"}
    assert set(deployment["resources"][0]["inputs"]) == kept
    assert set(deployment["resources"][0]["outputs"]["__inputs"]) == kept
    assert deployment["resources"][0]["outputs"]["type"] == "Opaque"  # what the cluster holds stays
    assert other["inputs"] == recorded  # not adopted: untouched
    assert adopt.trim_inputs(deployment, adopted) is False
