"""The bench's stack configs: N made-up nodes across three cells, and the
local environment's dev stack with its nodes replaced by K real test nodes.

Pure functions: a config document in, a config document out.
"""

from __future__ import annotations

import base64
import copy
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PROJECT = "openstack-nova"
CELLS = ("cell1", "cell2", "cell3")
SB_CONNECTION = "tcp:192.0.2.30:6642"
# Node-level snippets cycle through these few CPU models: what a real estate
# looks like (a handful of hardware generations), and what "validate each
# distinct snippet once" is about.
CPU_MODELS = ("Nehalem", "SandyBridge", "Haswell-noTSX", "Skylake-Server")
FAKE_DRIVER = "[DEFAULT]\ncompute_driver = fake.FakeDriverWithoutFakeNodes\n"
# Passwords of the made-up stack; set as Pulumi secrets, as the program demands.
BENCH_PASSWORD = "bench-not-a-secret"


@dataclass(frozen=True)
class BenchNode:
    node_set: str
    name: str
    address: str
    cell: str


def bench_nodes(count: int, cells: tuple[str, ...] = CELLS) -> list[BenchNode]:
    """`count` nodes dealt round-robin to one node set per cell, each with an address of its own."""
    nodes = []
    for index in range(count):
        cell = cells[index % len(cells)]
        nodes.append(BenchNode(node_set=f"edpm-{cell}", name=f"edpm-{cell}-{index // len(cells)}",
                               address=_address(index), cell=cell))
    return nodes


def _address(index: int) -> str:
    """A distinct 10/8 address per index (never .0 or .255)."""
    return f"10.{index // (254 * 256)}.{index // 254 % 256}.{index % 254 + 1}"


def fake_host_key(name: str) -> str:
    """A well-formed ed25519 public key line body, derived from `name` (no private key exists)."""
    blob = b"\x00\x00\x00\x0bssh-ed25519\x00\x00\x00\x20" + hashlib.sha256(name.encode()).digest()
    return f"ssh-ed25519 {base64.b64encode(blob).decode()}"


def known_hosts(nodes: list[BenchNode]) -> str:
    """The known_hosts file of the made-up nodes: one key per address."""
    return "".join(f"{n.address} {fake_host_key(n.name)}\n" for n in nodes)


def node_snippet(index: int) -> str:
    return f"[libvirt]\ncpu_mode = custom\ncpu_models = {CPU_MODELS[index % len(CPU_MODELS)]}\n"


def bench_config(count: int, *, render_dir: str, key_file: str, known_hosts_file: str) -> dict[str, Any]:
    """The stack config (top-level keys without the project prefix) of `count` made-up
    nodes in render mode; the passwords come from `secret_settings()`."""
    cells: dict[str, Any] = {"cell0": {"hasAPIAccess": True}}
    cells.update({c: {"hasAPIAccess": True} for c in CELLS})
    node_sets: dict[str, Any] = {}
    for index, node in enumerate(bench_nodes(count)):
        node_set = node_sets.setdefault(node.node_set, {
            "cell": node.cell,
            "nodeTemplate": {
                "ansibleUser": "root",
                "ansibleSSHPrivateKeyFile": key_file,
                "knownHostsFile": known_hosts_file,
                "ansibleVars": {"ansible_python_interpreter": "/usr/bin/python3"},
            },
            "customServiceConfig": {"nova": FAKE_DRIVER},
            "nodes": {},
        })
        node_set["nodes"][node.name] = {
            "ansibleHost": node.address,
            "customServiceConfig": {"nova": node_snippet(index)},
        }
    return {
        "namespace": "bench",
        "kubernetes": {"mode": "render", "renderDir": render_dir},
        # the nodes' metadata agents reach the metadata service through a LoadBalancer, as on a real site
        "nova": {"metadataServiceTemplate": {"enabled": True, "override": {"service": {"spec": {
            "type": "LoadBalancer"}}}}, "cellTemplates": cells},
        "dataplane": {"ovn": {"sbConnection": SB_CONNECTION}, "nodeSets": node_sets},
    }


def secret_settings(cells: tuple[str, ...] = CELLS) -> dict[str, str]:
    """`pulumi config set-all --path --secret` pairs: every password the bench stack needs."""
    paths = ["nova.keystone.password", "nova.apiDatabase.password", "nova.messagingBus.password",
             "nova.cellTemplates.cell0.cellDatabase.password"]
    for cell in cells:
        paths += [f"nova.cellTemplates.{cell}.{key}.password" for key in ("cellDatabase", "messagingBus")]
    return {f"{PROJECT}:{p}": BENCH_PASSWORD for p in paths}


def stack_document(config: Mapping[str, Any], salt: str | None = None) -> dict[str, Any]:
    """A Pulumi.<stack>.yaml document for `config`, keeping the stack's encryption salt."""
    document: dict[str, Any] = {"config": {f"{PROJECT}:{k}": v for k, v in config.items()}}
    if salt:
        document["encryptionsalt"] = salt
    return document


# --- the local environment's dev stack, with K real test nodes --------------

def test_node(index: int) -> tuple[str, str]:
    """Name and address of test node `index`, as devenv/nodes.sh starts them."""
    return f"edpm-compute-{index}", f"192.168.122.{100 + index}"


def with_test_nodes(dev_document: Mapping[str, Any], count: int, *, changed: str | None = None,
                    node_set: str = "edpm-compute") -> dict[str, Any]:
    """The dev stack's document with its node set holding test nodes 0..count-1, alternately in
    cell1 and cell2; `changed` gives node 0 a snippet of its own (a one-node config change)."""
    document = copy.deepcopy(dict(dev_document))
    dataplane = document["config"][f"{PROJECT}:dataplane"]
    target = dataplane["nodeSets"][node_set]
    nodes: dict[str, Any] = {}
    for index in range(count):
        name, address = test_node(index)
        nodes[name] = {"ansibleHost": address}
        if index % 2:
            nodes[name]["cell"] = "cell2"
    if changed is not None and count:
        nodes[test_node(0)[0]]["customServiceConfig"] = {"nova": changed}
    target["nodes"] = nodes
    target["cell"] = "cell1"
    return document
