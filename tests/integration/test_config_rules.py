"""Every rule of the stack config, through a real `pulumi up` on a bad config:
it fails with the config path and what to do, shows no traceback, and
changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.stacks import Stack, throwaway_stack

CELLS: dict[str, Any] = {"cell0": {}, "cell1": {}}


@pytest.fixture(scope="module")
def rules_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from throwaway_stack(tmp_path_factory.mktemp("rules"), "itest-rules", good_config)


def good_config(namespace: str) -> dict[str, Any]:
    return {"namespace": namespace, "kubernetes": {"skipAwait": True}, "nova": {"cellTemplates": dict(CELLS)}}


def node_set(cell: str) -> dict[str, Any]:
    return {"nodeSets": {"edpm": {"cell": cell, "nodeTemplate": {"ansibleSSHPrivateKeyFile": "/etc/hostname"},
                                  "nodes": {"n0": {"ansibleHost": "192.168.122.100"}}}}}


RULES: dict[str, tuple[dict[str, Any], str, str]] = {
    # name: (config changes, config path, what the message says)
    "cell0 is required": (
        {"nova": {"cellTemplates": {"cell1": {}}}},
        "openstack-nova:nova.cellTemplates:", "cell0 is required"),
    "cell0 has no metadata": (
        {"nova": {"metadataServiceTemplate": {"enabled": False},
                  "cellTemplates": {**CELLS, "cell0": {"metadataServiceTemplate": {"enabled": True}}}}},
        "nova.cellTemplates.cell0.metadataServiceTemplate.enabled", "cell0 cannot run a metadata service"),
    "cell0 has no noVNC proxy": (
        {"nova": {"cellTemplates": {**CELLS, "cell0": {"noVNCProxyServiceTemplate": {"enabled": True}}}}},
        "nova.cellTemplates.cell0.noVNCProxyServiceTemplate.enabled", "no noVNC proxy"),
    "cell0 has no computes": (
        {"nova": {"cellTemplates": CELLS}, "dataplane": node_set("cell0")},
        "openstack-nova:dataplane.nodeSets.edpm.cell", "cell0 has no computes"),
    "shared host keys need a known_hosts file": (
        {"nova": {"cellTemplates": CELLS}, "dataplane": node_set("cell1")},
        "openstack-nova:dataplane.nodeSets.edpm.nodeTemplate.knownHostsFile",
        "is required: a known_hosts file with each node's host key"),
    "neutron-metadata needs the OVN southbound database": (
        {"nova": {"cellTemplates": CELLS}, "dataplane": node_set("cell1")},
        "openstack-nova:dataplane.ovn.sbConnection", "is required by the neutron-metadata service"),
    "the OVN southbound database is reached over tcp": (
        {"nova": {"cellTemplates": CELLS}, "dataplane": {**node_set("cell1"), "ovn": {"sbConnection": "ssl:x:6642"}}},
        "openstack-nova:dataplane.ovn.sbConnection", "needs TLS to the OVN databases"),
    "metadata at the top level or in cells": (
        {"nova": {"metadataServiceTemplate": {"enabled": True},
                  "cellTemplates": {**CELLS, "cell1": {"metadataServiceTemplate": {"enabled": True}}}}},
        "openstack-nova:nova.metadataServiceTemplate.enabled", "not both"),
    "cells never share a bus": (
        {"nova": {"cellTemplates": {**CELLS, "cell1": {"messagingBus": {"cluster": "rabbitmq-x"}},
                                    "cell2": {"messagingBus": {"cluster": "rabbitmq-x"}}}}},
        "nova.cellTemplates.cell2.messagingBus.cluster", "shares the message bus of cell cell1"),
    "cell names are RFC 1123": (
        {"nova": {"cellTemplates": {**CELLS, "Cell_1": {}}}},
        "nova.cellTemplates.Cell_1", "lower-case letters, digits and '-'"),
    "cell names are at most 35 characters": (
        {"nova": {"cellTemplates": {**CELLS, "c" + "x" * 35: {}}}},
        "nova.cellTemplates.c" + "x" * 35, "at most 35 allowed"),
    "replicas are 0..32": (
        {"nova": {"cellTemplates": CELLS, "apiServiceTemplate": {"replicas": 33}}},
        "openstack-nova:nova.apiServiceTemplate.replicas", "expected 0..32"),
    "secret options only in secret snippets": (
        {"nova": {"cellTemplates": CELLS, "apiServiceTemplate": {"customServiceConfig": "[neutron]\npassword = pw\n"}}},
        "openstack-nova:nova.apiServiceTemplate.customServiceConfig",
        "sets [neutron] password in plain text; keep the snippet a secret"),
    "customServiceConfig options are nova's": (
        {"nova": {"cellTemplates": CELLS,
                  "apiServiceTemplate": {"customServiceConfig": "[libvirt]\ncpu_modle = Nehalem\n"}}},
        # the default images' nova
        "openstack-nova:nova.apiServiceTemplate.customServiceConfig", "cpu_modle is not a nova 27.5.1 option"),
    "customServiceConfig options are those of the stack's nova release": (
        {"images": {"novaRelease": "27.5.1"},
         "nova": {"cellTemplates": CELLS,
                  "apiServiceTemplate": {"customServiceConfig": "[libvirt]\nmigration_inbound_addr = x\n"}}},
        "openstack-nova:nova.apiServiceTemplate.customServiceConfig",
        "migration_inbound_addr is not a nova 27.5.1 option"),
    "the nova release is one the program deploys": (
        {"images": {"novaRelease": "33.0.2"}, "nova": {"cellTemplates": CELLS}},
        "openstack-nova:images.novaRelease", "the program does not deploy nova 33.0.2: it renders nova's config "
        "for 27.5.1 (2023.1 antelope), 34.0.0 (2026.2) only"),
    "the nodes' agents reach their metadata Service through a LoadBalancer": (
        {"nova": {"cellTemplates": CELLS},
         "dataplane": {**node_set("cell1"), "ovn": {"sbConnection": "tcp:10.0.0.5:6642"}}},
        "openstack-nova:nova.metadataServiceTemplate.override.service.spec.type",
        "from the data plane, which cannot reach a ClusterIP; set LoadBalancer"),
    "a fixed load-balancer address is one of its pool": (
        {"kubernetes": {"skipAwait": True, "loadBalancerPools": {"internalapi": ["172.17.0.80-172.17.0.99"]}},
         "nova": {"cellTemplates": CELLS, "metadataServiceTemplate": {"override": {"service": {
             "metadata": {"annotations": {"metallb.universe.tf/address-pool": "internalapi",
                                          "metallb.universe.tf/loadBalancerIPs": "172.17.0.50"}},
             "spec": {"type": "LoadBalancer"}}}}}},
        'openstack-nova:nova.metadataServiceTemplate.override.service.metadata.annotations'
        '["metallb.universe.tf/loadBalancerIPs"]', "172.17.0.50 is not in pool internalapi"),
    "Services share an address only as MetalLB does": (
        {"kubernetes": {"skipAwait": True, "loadBalancerPools": {"internalapi": ["172.17.0.80-172.17.0.99"]}},
         "nova": {"cellTemplates": CELLS, "apiServiceTemplate": {"override": {"service": {
             "internal": {"metadata": {"annotations": {"metallb.universe.tf/loadBalancerIPs": "172.17.0.80"}},
                          "spec": {"type": "LoadBalancer"}},
             "public": {"metadata": {"annotations": {"metallb.universe.tf/loadBalancerIPs": "172.17.0.80"}},
                        "spec": {"type": "LoadBalancer"}}}}}}},
        'openstack-nova:nova.apiServiceTemplate.override.service.public.metadata.annotations'
        '["metallb.universe.tf/loadBalancerIPs"]',
        "172.17.0.80 is also the address of nova.apiServiceTemplate.override.service.internal"),
    "nova images of the stack's own name their release": (
        {"images": {"api": "registry.example/nova-api:mine"}, "nova": {"cellTemplates": CELLS}},
        "openstack-nova:images.novaRelease", "is required when the stack names nova images of its own (images.api)"),
}


@pytest.mark.parametrize("rule", list(RULES))
def test_bad_config_fails_with_its_path_and_changes_nothing(rules_stack: Stack, rule: str) -> None:
    changes, path, message = RULES[rule]
    before = rules_stack.resources()
    rules_stack.write({"namespace": rules_stack.namespace, "kubernetes": {"skipAwait": True}, **changes})
    try:
        preview = rules_stack.cli("preview", check=False)
        up = rules_stack.cli("up", "--yes", "--skip-preview", check=False)
    finally:
        rules_stack.write(good_config(rules_stack.namespace))
    for run in (preview, up):
        output = run.stdout + run.stderr
        assert run.returncode != 0
        assert path in output and message in output, output
        assert "Traceback" not in output
    assert rules_stack.resources() == before


def late_rules_config(namespace: str, known_hosts: str) -> dict[str, Any]:
    """Three problems: a replica count, a node whose cell has no metadata service for its agent, and
    a mounted file named as one nova makes itself (the EDPM services' own rules)."""
    return {
        "namespace": namespace, "kubernetes": {"skipAwait": True},
        "nova": {"cellTemplates": CELLS, "metadataServiceTemplate": {"enabled": False},
                 "apiServiceTemplate": {"replicas": 33}},
        "dataplane": {"ovn": {"sbConnection": "tcp:10.0.0.5:6642"}, "nodeSets": {"edpm": {
            "cell": "cell1", "nodes": {"n0": {"ansibleHost": "192.168.122.100"}},
            "nodeTemplate": {"ansibleSSHPrivateKeyFile": "/etc/hostname", "knownHostsFile": known_hosts}}}},
        "extraMounts": [{"propagation": ["Compute"],
                         "volumes": [{"name": "mine", "configMap": {"name": "mine", "items": [
                             {"key": "conf", "path": "01-nova.conf"}]}}],
                         "mounts": [{"name": "mine", "mountPath": "/var/lib/openstack/configs/nova"}]}],
    }


def test_the_services_own_rules_come_with_every_other_problem_of_one_preview(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    from tests.integration.stacks import copy_project
    from tests.unit import KNOWN_HOSTS

    stack = Stack(copy_project(tmp_path_factory.mktemp("late-rules") / "project"), "itest-late-rules")
    stack.write(late_rules_config(stack.namespace, KNOWN_HOSTS))
    stack.init()
    try:
        preview = stack.cli("preview", check=False)
    finally:
        stack.cli("stack", "rm", "--yes", "--force", check=False)
    output = preview.stdout + preview.stderr
    assert preview.returncode != 0 and "Traceback" not in output, output
    assert "the stack config has 3 problems" in output, output
    for path, message in (
            ("openstack-nova:nova.apiServiceTemplate.replicas", "33 is out of range; expected 0..32"),
            ("openstack-nova:dataplane.nodeSets.edpm.services",
             "neutron-metadata needs a metadata service for n0; enable nova.metadataServiceTemplate or "
             "nova.cellTemplates.cell1.metadataServiceTemplate"),
            ("openstack-nova:extraMounts[0].mounts[0]",
             "extraMounts give nova 01-nova.conf, which the program makes itself")):
        assert f"{path}: {message}" in output, output
