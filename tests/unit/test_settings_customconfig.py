"""customServiceConfig checks: oslo.config syntax, option names, values; the catalog generator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.settings import OptionCatalog, SettingsError
from components.settings.customconfig import check, secret_options
from components.stackconfig import load
from tests.unit import KNOWN_HOSTS, LOAD_BALANCER

ROOT = Path(__file__).resolve().parents[2]

CATALOG = OptionCatalog.from_json(
    {
        "DEFAULT": {"debug": {"type": "Boolean"}, "my_ip": {"type": "HostAddress"}},
        "libvirt": {
            "cpu_mode": {"type": "String", "choices": ["host-model", "host-passthrough", "custom", "none"]},
            "cpu_models": {"type": "List", "deprecated_names": [["libvirt", "cpu_model"]]},
            "num_pcie_ports": {"type": "Integer", "min": 0, "max": 28},
        },
        "keystone_authtoken": {"auth_url": {"type": "String"}},
        "neutron": {"password": {"type": "String", "secret": True}, "auth_type": {"type": "String"}},
        "key_manager": {"fixed_key": {"type": "String", "secret": True}},
    }
)


def test_valid_snippet_passes() -> None:
    text = (
        "[libvirt]\ncpu_mode = custom\ncpu_models = Nehalem\nnum_pcie_ports = 16\n[DEFAULT]\ndebug = True\n"
    )
    assert check(text, CATALOG) == []


def test_empty_snippet_passes() -> None:
    assert check("", CATALOG) == []


def test_deprecated_name_is_accepted() -> None:
    assert check("[libvirt]\ncpu_model = Nehalem\n", CATALOG) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[libvirt]\ncpu_modle = x\n", "[libvirt] cpu_modle is not a nova option; did you mean cpu_mode?"),
        ("[libvrt]\ncpu_mode = custom\n", "[libvrt] is not a nova config section; did you mean libvirt?"),
        (
            "[DEFAULT]\ndebug = maybe\n",
            "[DEFAULT] debug = 'maybe' is not valid: Unexpected boolean value 'maybe'",
        ),
        ("[libvirt]\nnum_pcie_ports = 40\n", "[libvirt] num_pcie_ports = '40' is not valid"),
        ("[libvirt]\ncpu_mode = host\n", "[libvirt] cpu_mode = 'host' is not valid: Valid values are"),
    ],
)
def test_bad_option_is_named(text: str, expected: str) -> None:
    (message,) = check(text, CATALOG)
    assert message.startswith(expected)


@pytest.mark.parametrize(
    ("text", "line"),
    [("debug = true\n", 1), ("[DEFAULT\ndebug = true\n", 1), ("[DEFAULT]\ndebug\n", 2), ("  x\n", 1)],
)
def test_syntax_errors_are_reported_with_a_line(text: str, line: int) -> None:
    (message,) = check(text, None)
    assert message.startswith(f"is not valid oslo.config INI at line {line}")


def test_substitutions_and_dynamic_groups_are_not_checked() -> None:
    text = "[libvirt]\nnum_pcie_ports = $ports\n[keystone_authtoken]\nusername = nova\n"
    assert check(text, CATALOG) == []


def test_syntax_only_without_catalog() -> None:
    assert check("[libvirt]\ncpu_modle = x\n", None) == []


def test_load_reports_snippet_problems_at_their_path() -> None:
    raw = {
        "nova": {
            "cellTemplates": {
                "cell0": {},
                "cell1": {"conductorServiceTemplate": {"customServiceConfig": "[libvirt]\ncpu_modle = x\n"}},
            }
        }
    }
    with pytest.raises(SettingsError) as caught:
        load(raw, catalog=CATALOG)
    (problem,) = caught.value.problems
    assert (
        problem.path == "openstack-nova:nova.cellTemplates.cell1.conductorServiceTemplate.customServiceConfig"
    )
    assert "cpu_modle is not a nova option; did you mean cpu_mode?" in problem.message


def test_dataplane_snippets_are_checked() -> None:
    raw: dict[str, Any] = {
        "nova": {"metadataServiceTemplate": LOAD_BALANCER},
        "dataplane": {
            "ovn": {"sbConnection": "tcp:172.17.0.30:6642"},
            "nodeSets": {
                "edpm": {
                    "nodeTemplate": {"ansibleSSHPrivateKey": "k", "knownHostsFile": KNOWN_HOSTS},
                    "nodes": {
                        "c0": {"ansibleHost": "10.0.0.1", "customServiceConfig": {"nova": "[libvrt]\n"}}
                    },
                    # neutron options are not nova's: syntax only
                    "customServiceConfig": {"neutron-metadata": "[DEFAULT]\nmetadata_workers = 2\n"},
                }
            }
        }
    }
    with pytest.raises(SettingsError) as caught:
        load(raw, secret_keys=["dataplane"], catalog=CATALOG)
    paths = [p.path for p in caught.value.problems]
    assert paths == ["openstack-nova:dataplane.nodeSets.edpm.nodes.c0.customServiceConfig.nova"]


def test_shipped_catalog_knows_nova(nova_catalog: OptionCatalog) -> None:
    assert nova_catalog.lookup("libvirt", "cpu_mode") is not None
    assert nova_catalog.lookup("libvirt", "cpu_model") is not None  # deprecated name of cpu_models
    assert nova_catalog.lookup("oslo_messaging_rabbit", "amqp_durable_queues") is not None
    assert nova_catalog.lookup("cache", "backend") is not None
    seed = "[libvirt]\ncpu_mode = custom\ncpu_models = Nehalem\n"
    assert check(seed, nova_catalog) == []
    assert check("[libvirt]\ncpu_modle = Nehalem\n", nova_catalog) == [
        "[libvirt] cpu_modle is not a nova 34.0.0 option; did you mean cpu_mode?"
    ]


# From an NFV node set: physnets with their NUMA affinity, repeated options.
NFV_SNIPPET = """\
[neutron]
physnets = dpdk1, dpdk2
[neutron_physnet_dpdk1]
numa_nodes = 0
[neutron_physnet_dpdk2]
numa_nodes = 0,1
[neutron_tunnel]
numa_nodes = 1
[pci]
device_spec = {"vendor_id": "8086", "product_id": "154d", "physical_network": "dpdk1"}
device_spec = {"vendor_id": "8086", "product_id": "10fb", "physical_network": "dpdk2"}
[DEFAULT]
reserved_huge_pages = node:0,size:1GB,count:1
reserved_huge_pages = node:1,size:1GB,count:1
"""


def test_groups_nova_registers_at_run_time_are_checked(nova_catalog: OptionCatalog) -> None:
    assert check(NFV_SNIPPET, nova_catalog) == []
    assert check("[neutron_physnet_dpdk1]\nnuma_node = 0\n", nova_catalog) == [
        "[neutron_physnet_dpdk1] numa_node is not a nova 34.0.0 option; did you mean numa_nodes?"
    ]
    assert check("[neutron_tunnel]\nnuma_nodes = 0,x\n", nova_catalog) == [
        "[neutron_tunnel] numa_nodes = '0,x' is not valid: invalid literal for int() with base 10: 'x'"
    ]
    # the wildcard stands for a physnet's name only
    assert check("[neutron_physnets]\nnuma_nodes = 0\n", nova_catalog)[0].startswith(
        "[neutron_physnets] is not a nova 34.0.0 config section"
    )


def test_secret_options_are_the_catalogs_or_named_so() -> None:
    text = "[neutron]\nauth_type = password\npassword = x\n[key_manager]\nfixed_key = k\n[libvirt]\ncpu_mode = none\n"
    assert secret_options(text, CATALOG) == ["[neutron] password", "[key_manager] fixed_key"]
    # without a catalog (other services' snippets): by name
    neutron = "[DEFAULT]\nmetadata_proxy_shared_secret = s\ndebug = true\n[ovs]\novsdb_connection = tcp:1\n"
    assert secret_options(neutron, None) == ["[DEFAULT] metadata_proxy_shared_secret"]
    assert secret_options("[broken\n", CATALOG) == []


def _node_snippets(nova: str, neutron: str = "") -> dict[str, Any]:
    node = {"ansibleHost": "10.0.0.1", "customServiceConfig": {"nova": nova, "neutron-metadata": neutron}}
    return {"nova": {"metadataServiceTemplate": LOAD_BALANCER},
            "dataplane": {"ovn": {"sbConnection": "tcp:10.0.0.5:6642"}, "nodeSets": {"edpm": {
                "nodeTemplate": {"ansibleSSHPrivateKeyFile": KNOWN_HOSTS, "knownHostsFile": KNOWN_HOSTS},  # any file
                "nodes": {"c0": node}}}}}


def test_a_snippet_with_a_secret_must_be_a_pulumi_secret() -> None:
    raw = _node_snippets("[neutron]\npassword = x\n", "[DEFAULT]\nmetadata_proxy_shared_secret = s\n")
    with pytest.raises(SettingsError) as caught:
        load(raw, secret_keys=[], catalog=CATALOG)
    messages = {p.path: p.message for p in caught.value.problems}
    path = "openstack-nova:dataplane.nodeSets.edpm.nodes.c0.customServiceConfig.nova"
    assert messages[path] == (
        "sets [neutron] password in plain text; keep the snippet a secret: pulumi config set --secret --path "
        "'dataplane.nodeSets.edpm.nodes.c0.customServiceConfig.nova' \"$(cat <snippet file>)\"")
    assert "metadata_proxy_shared_secret in plain text" in messages[path.replace(".nova", ".neutron-metadata")]
    node = load(raw, secret_keys=["dataplane"], catalog=CATALOG).dataplane.nodes[0]
    assert node.custom_service_config.nova_secret and node.custom_service_config.neutron_metadata_secret
    plain = load(_node_snippets("[libvirt]\ncpu_mode = none\n"), secret_keys=[], catalog=CATALOG)
    assert not plain.dataplane.nodes[0].custom_service_config.nova_secret


def test_control_plane_snippets_with_secrets_must_be_pulumi_secrets() -> None:
    raw = {"nova": {"apiServiceTemplate": {"customServiceConfig": "[neutron]\npassword = x\n"}}}
    with pytest.raises(SettingsError) as caught:
        load(raw, secret_keys=[], catalog=CATALOG)
    assert [p.path for p in caught.value.problems] == ["openstack-nova:nova.apiServiceTemplate.customServiceConfig"]


def test_a_snippet_many_nodes_share_is_checked_once_and_reported_for_each(monkeypatch: pytest.MonkeyPatch) -> None:
    from components.settings import customconfig

    calls: list[str] = []
    real = customconfig.check

    def counting(text: str, catalog: Any, *, nova_options: bool = True) -> list[str]:
        calls.append(text)
        return real(text, catalog, nova_options=nova_options)

    monkeypatch.setattr(customconfig, "check", counting)
    shared = "[libvirt]\ncpu_modle = Nehalem\n"
    nodes = {f"c{i}": {"ansibleHost": f"10.0.0.{i + 1}", "customServiceConfig": {"nova": shared}}
             for i in range(3)}
    raw = {"dataplane": {"ovn": {"sbConnection": "tcp:10.0.0.5:6642"}, "nodeSets": {"edpm": {
        "nodeTemplate": {"ansibleSSHPrivateKeyFile": KNOWN_HOSTS, "knownHostsFile": KNOWN_HOSTS},
        "services": ["nova"], "nodes": nodes}}}}
    with pytest.raises(SettingsError) as caught:
        load(raw, secret_keys=["dataplane"], catalog=CATALOG)
    assert calls.count(shared) == 1
    assert [p.path for p in caught.value.problems if "customServiceConfig" in p.path] == [
        f"openstack-nova:dataplane.nodeSets.edpm.nodes.c{i}.customServiceConfig.nova" for i in range(3)]
    # a new load checks again (the catalog, or the option definitions, may have changed)
    with pytest.raises(SettingsError):
        load(raw, secret_keys=["dataplane"], catalog=CATALOG)
    assert calls.count(shared) == 2
