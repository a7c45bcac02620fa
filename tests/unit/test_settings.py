"""Settings: defaults, every validation rule, problem paths, secrets."""

from __future__ import annotations

import base64
import copy
import hmac
from typing import Any

import pytest

from components.settings import (
    TOP_LEVEL_KEYS,
    KubernetesMode,
    QueueType,
    SecretStr,
    SettingsError,
    control_plane_tags,
    edpm_tags,
    propagates,
)
from components.stackconfig import load
from tests.unit import KNOWN_HOSTS, LOAD_BALANCER

P = "openstack-nova:"
ALL_SECRET = TOP_LEVEL_KEYS


def good_config() -> dict[str, Any]:
    """Two compute cells, per-cell metadata (LoadBalancers the nodes' agents reach), two node sets, an extra
    mount."""
    return {
        "namespace": "openstack",
        "nova": {
            "keystone": {"password": "ks-pass"},
            "apiDatabase": {"password": "api-db"},
            "messagingBus": {"password": "api-mq"},
            "metadataSharedSecret": "meta",
            "metadataServiceTemplate": {"enabled": False},
            "apiServiceTemplate": {"replicas": 2, "customServiceConfig": "[DEFAULT]\ndebug = false\n"},
            "cellTemplates": {
                "cell0": {"cellDatabase": {"password": "c0"}},
                "cell1": {"metadataServiceTemplate": {"enabled": True, **LOAD_BALANCER}},
                "cell2": {"hasAPIAccess": False, "conductorServiceTemplate": {"replicas": 0},
                          "metadataServiceTemplate": {"enabled": True, **LOAD_BALANCER}},
            },
        },
        "dataplane": {
            "ovn": {"sbConnection": "tcp:172.17.0.30:6642"},
            "nodeSets": {
                "edpm-a": {
                    "nodeTemplate": {
                        "ansibleSSHPrivateKey": "KEY", "ansibleVars": {"x": 1}, "knownHostsFile": KNOWN_HOSTS,
                    },
                    "nodes": {
                        "compute-0": {"ansibleHost": "192.168.122.100"},
                        "compute-1": {"ansibleHost": "192.168.122.101", "cell": "cell2"},
                    },
                    "customServiceConfig": {"nova": "[libvirt]\ncpu_mode = custom\n"},
                },
                "edpm-b": {
                    "cell": "cell2",
                    "nodeTemplate": {"ansibleSSHPrivateKey": "KEY", "knownHostsFile": KNOWN_HOSTS},
                    "nodes": {"compute-2": {"ansibleHost": "192.168.122.102", "hostName": "c2.example"}},
                    "services": ["ceph-client", "nova", "motd"],
                },
            },
            "customServices": {"motd": {"playbook": "custom-files.yml", "files": {"motd": "x"}}},
        },
        "extraMounts": [
            {
                "propagation": ["NovaConductor", "Compute"],
                "volumes": [{"name": "ceph", "secret": {"secretName": "ceph-conf"}}],
                "mounts": [{"name": "ceph", "mountPath": "/etc/ceph", "readOnly": True}],
            }
        ],
    }


def problems_of(raw: dict[str, Any], secret_keys: Any = ALL_SECRET) -> dict[str, str]:
    with pytest.raises(SettingsError) as caught:
        load(raw, secret_keys=secret_keys, catalog=None)
    return {p.path: p.message for p in caught.value.problems}


def with_change(path: str, value: Any, raw: dict[str, Any] | None = None) -> dict[str, Any]:
    """A copy of `raw` (default: good_config) with a dotted path set (None deletes)."""
    data = copy.deepcopy(raw if raw is not None else good_config())
    *parents, last = path.split(".")
    node = data
    for part in parents:
        node = node.setdefault(part, {})
    if value is None:
        node.pop(last, None)
    else:
        node[last] = value
    return data


def test_empty_config_gives_defaults() -> None:
    settings = load({}, catalog=None)
    assert settings.namespace == "openstack"
    assert settings.kubernetes.mode is KubernetesMode.CLUSTER
    assert settings.images.api == "quay.io/podified-antelope-centos9/openstack-nova-api:current-podified"
    assert settings.images.neutron_metadata_agent.endswith(
        "openstack-neutron-metadata-agent-ovn:current-podified"
    )
    assert settings.images.compute == "quay.io/podified-antelope-centos9/openstack-nova-compute:current-podified"
    nova = settings.nova
    assert nova.keystone.internal_url == "http://keystone-internal.openstack.svc:5000"
    assert nova.keystone.region == "regionOne" and nova.keystone.service_user == "nova"
    assert nova.keystone.password is None
    assert (nova.api_database.instance, nova.api_database.account) == ("openstack", "nova-api")
    assert (nova.messaging_bus.cluster, nova.messaging_bus.user) == ("rabbitmq", "nova-api")
    assert nova.notifications_bus is None
    assert nova.api_timeout == 60 and nova.metadata.enabled
    assert nova.memcached_instance == "memcached"
    assert [c.name for c in nova.cells] == ["cell0", "cell1"]
    cell0, cell1 = nova.cells
    assert cell0.messaging_bus == nova.messaging_bus
    assert (cell0.database.instance, cell0.database.account) == ("openstack", "nova-cell0")
    assert not cell0.novncproxy.enabled and not cell0.metadata.enabled
    assert (cell1.database.instance, cell1.database.account) == ("openstack-cell1", "nova-cell1")
    assert (cell1.messaging_bus.cluster, cell1.messaging_bus.user) == ("rabbitmq-cell1", "nova-cell1")
    assert cell1.novncproxy.enabled and cell1.has_api_access
    assert (cell1.db_purge.schedule, cell1.db_purge.archive_age, cell1.db_purge.purge_age) == ("0 0 * * *", 30, 90)
    assert settings.dataplane.node_sets == () and settings.extra_mounts == ()


def test_db_purge_schedule_must_be_a_cron_schedule() -> None:
    raw = {"nova": {"cellTemplates": {"cell0": {"dbPurge": {"schedule": "@daily"}},
                                      "cell1": {"dbPurge": {"schedule": "every night", "archiveAge": 0}}}}}
    problems = problems_of(raw)
    assert problems[P + "nova.cellTemplates.cell1.dbPurge.schedule"] == (
        "'every night' is not a cron schedule: five fields (minute hour day month weekday), e.g. '0 0 * * *', or @daily"
    )
    assert P + "nova.cellTemplates.cell1.dbPurge.archiveAge" in problems
    assert len(problems) == 2


def test_buses_serve_quorum_queues_unless_their_cluster_says_otherwise() -> None:
    """The queue type is the cluster's (infra-operator's RabbitMq spec.queueType), Quorum by default."""
    nova = load({}, catalog=None).nova
    assert nova.messaging_bus.queue_type is QueueType.QUORUM and nova.messaging_bus.quorum_queues
    raw = {"nova": {"messagingBus": {"queueType": "Mirrored"}, "cellTemplates": {
        "cell0": {}, "cell1": {"messagingBus": {"queueType": "None"}}, "cell2": {}}}}
    nova = load(raw, catalog=None).nova
    assert [(c.name, c.messaging_bus.queue_type, c.messaging_bus.quorum_queues) for c in nova.cells] == [
        ("cell0", QueueType.MIRRORED, False), ("cell1", QueueType.NONE, False), ("cell2", QueueType.QUORUM, True)]


def test_buses_on_one_cluster_agree_on_its_queue_type() -> None:
    raw = {"nova": {
        "notificationsBus": {"queueType": "None"},  # cluster rabbitmq, as the API bus
        "cellTemplates": {"cell0": {}, "cell1": {"messagingBus": {"cluster": "rabbitmq", "vhost": "cell1"}},
                          "cell2": {"messagingBus": {"cluster": "rabbitmq-cell1", "queueType": "Mirrored"}}}}}
    problems = problems_of(raw)
    assert problems == {
        P + "nova.notificationsBus.queueType": (
            "None differs from Quorum, the queue type of cluster rabbitmq at nova.messagingBus.queueType; "
            "a cluster has one queue type: set the same on both"),
    }


def test_good_config_loads() -> None:
    settings = load(good_config(), secret_keys=ALL_SECRET, catalog=None)
    nova = settings.nova
    assert [c.name for c in nova.cells] == ["cell0", "cell1", "cell2"]
    assert nova.api.replicas == 2 and nova.cell("cell2").conductor.replicas == 0
    assert not nova.cell("cell2").has_api_access
    assert [c.name for c in nova.cells_with_metadata] == ["cell1", "cell2"]
    node_sets = {s.name: s for s in settings.dataplane.node_sets}
    # upstream's default order, with ceph-client in its place as the node set gets Ceph files
    assert node_sets["edpm-a"].services == ("ssh-known-hosts", "ceph-client", "neutron-metadata", "libvirt", "nova")
    assert node_sets["edpm-b"].services == ("ceph-client", "nova", "motd")  # order kept
    cells = {n.name: n.cell for n in settings.dataplane.nodes}
    assert cells == {"compute-0": "cell1", "compute-1": "cell2", "compute-2": "cell2"}
    assert {n.name: n.host_name for n in settings.dataplane.nodes}["compute-2"] == "c2.example"
    assert node_sets["edpm-a"].custom_service_config.nova.startswith("[libvirt]")
    assert settings.dataplane.ovn is not None and settings.dataplane.ovn.sb_connection == "tcp:172.17.0.30:6642"
    (mount,) = settings.extra_mounts
    assert mount.propagation == ("NovaConductor", "Compute") and mount.mounts[0].read_only


def test_cells_are_ordered_cell0_first() -> None:
    raw = {"nova": {"cellTemplates": {"zeta": {}, "alpha": {}, "cell0": {}}}}
    assert [c.name for c in load(raw, catalog=None).nova.cells] == ["cell0", "alpha", "zeta"]


def test_settings_are_immutable() -> None:
    settings = load({}, catalog=None)
    with pytest.raises(AttributeError):
        settings.namespace = "other"  # type: ignore[misc]
    assert isinstance(settings.nova.cells, tuple)


# --- secrets ------------------------------------------------------------------


def test_secrets_are_masked() -> None:
    settings = load(good_config(), secret_keys=ALL_SECRET, catalog=None)
    password = settings.nova.keystone.password
    assert isinstance(password, SecretStr) and password.reveal() == "ks-pass"
    assert str(password) == repr(password) == "[secret]"
    for text in (repr(settings), str(settings)):
        for plain in ("ks-pass", "api-db", "api-mq", "meta", "c0", "KEY"):
            assert f"'{plain}'" not in text


def test_plain_text_password_is_rejected() -> None:
    problems = problems_of(good_config(), secret_keys=[k for k in ALL_SECRET if k != "nova"])
    message = problems[P + "nova.keystone.password"]
    assert "pulumi config set --secret --path 'nova.keystone.password'" in message
    assert P + "nova.metadataSharedSecret" in problems
    assert P + "nova.cellTemplates.cell0.cellDatabase.password" in problems
    assert not any(path.startswith(P + "dataplane") for path in problems)


def test_plain_text_ssh_key_is_rejected() -> None:
    problems = problems_of(good_config(), secret_keys=["nova"])
    assert P + "dataplane.nodeSets.edpm-a.nodeTemplate.ansibleSSHPrivateKey" in problems


def test_missing_passwords_are_allowed() -> None:
    settings = load({"nova": {"keystone": {}}}, catalog=None)
    assert settings.nova.keystone.password is None
    assert settings.nova.metadata_shared_secret is None


# --- every rule reports its exact path -----------------------------------------------

CASES: list[tuple[str, Any, str]] = [
    ("namespace", "Open_Stack", "namespace"),
    ("nova.apiTimeout", 5, "nova.apiTimeout"),
    ("nova.apiServiceTemplate.replicas", 33, "nova.apiServiceTemplate.replicas"),
    ("nova.apiServiceTemplate.replicas", -1, "nova.apiServiceTemplate.replicas"),
    ("nova.apiServiceTemplate.replicas", True, "nova.apiServiceTemplate.replicas"),
    ("nova.apiServiceTemplate.replicas", "2", "nova.apiServiceTemplate.replicas"),
    ("nova.apiServiceTemplate.enabled", False, "nova.apiServiceTemplate.enabled"),
    (
        "nova.schedulerServiceTemplate.nodeSelector",
        {"zone": 1},
        "nova.schedulerServiceTemplate.nodeSelector.zone",
    ),
    ("nova.keystone.internalURL", "keystone:5000", "nova.keystone.internalURL"),
    ("nova.messagingBus.port", 0, "nova.messagingBus.port"),
    ("nova.messagingBus.queueType", "quorum", "nova.messagingBus.queueType"),
    (
        "nova.cellTemplates.cell0.metadataServiceTemplate",
        {"enabled": True},
        "nova.cellTemplates.cell0.metadataServiceTemplate.enabled",
    ),
    (
        "nova.cellTemplates.cell0.noVNCProxyServiceTemplate",
        {"enabled": True},
        "nova.cellTemplates.cell0.noVNCProxyServiceTemplate.enabled",
    ),
    (
        "nova.cellTemplates.cell0.messagingBus",
        {"cluster": "rabbitmq"},
        "nova.cellTemplates.cell0.messagingBus",
    ),
    ("nova.metadataServiceTemplate.enabled", True, "nova.metadataServiceTemplate.enabled"),
    (
        "nova.cellTemplates.cell2.messagingBus",
        {"cluster": "rabbitmq-cell1"},
        "nova.cellTemplates.cell2.messagingBus.cluster",
    ),
    ("nova.cellTemplates.Cell_3", {}, "nova.cellTemplates.Cell_3"),
    ("nova.cellTemplates." + "c" * 36, {}, "nova.cellTemplates." + "c" * 36),
    ("nova.cellTemplates.cell1.hasAPIAccess", "yes", "nova.cellTemplates.cell1.hasAPIAccess"),
    (
        "nova.cellTemplates.cell1.conductorServiceTemplate.replica",
        2,
        "nova.cellTemplates.cell1.conductorServiceTemplate.replica",
    ),
    (
        "nova.cellTemplates.cell1.conductorServiceTemplate.customServiceConfig",
        "debug = true",
        "nova.cellTemplates.cell1.conductorServiceTemplate.customServiceConfig",
    ),
    ("kubernetes.mode", "render", "kubernetes.renderDir"),
    ("kubernetes.mode", "dry", "kubernetes.mode"),
    ("kubernetes.skipAwait", "true", "kubernetes.skipAwait"),
    ("images.api", "", "images.api"),
    ("dataplane.nodeSets.edpm-a.cell", "cell0", "dataplane.nodeSets.edpm-a.cell"),
    ("dataplane.nodeSets.edpm-a.cell", "cell9", "dataplane.nodeSets.edpm-a.cell"),
    (
        "dataplane.nodeSets.edpm-a.nodes.compute-1.cell",
        "cell0",
        "dataplane.nodeSets.edpm-a.nodes.compute-1.cell",
    ),
    (
        "dataplane.nodeSets.edpm-a.nodes.compute-1.ansibleHost",
        None,
        "dataplane.nodeSets.edpm-a.nodes.compute-1.ansibleHost",
    ),
    (
        "dataplane.nodeSets.edpm-a.nodes.compute-1.ansibleHost",
        "192.168.122.100",
        "dataplane.nodeSets.edpm-a.nodes.compute-1.ansibleHost",
    ),
    (
        "dataplane.nodeSets.edpm-a.nodes.compute-1.ansibleHost",
        "not a host",
        "dataplane.nodeSets.edpm-a.nodes.compute-1.ansibleHost",
    ),
    (
        "dataplane.nodeSets.edpm-b.nodes.compute-2.hostName",
        "compute-0",
        "dataplane.nodeSets.edpm-b.nodes.compute-2.hostName",
    ),
    (
        "dataplane.nodeSets.edpm-b.nodes.compute-0",
        {"ansibleHost": "10.0.0.9"},
        "dataplane.nodeSets.edpm-b.nodes.compute-0",
    ),
    ("dataplane.nodeSets.edpm-b.services", ["nova", "nova"], "dataplane.nodeSets.edpm-b.services[1]"),
    ("dataplane.nodeSets.edpm-b.services", ["nova", "telemetry"], "dataplane.nodeSets.edpm-b.services[1]"),
    ("dataplane.nodeSets.edpm-b.nodeTemplate", {}, "dataplane.nodeSets.edpm-b.nodeTemplate"),
    (
        "dataplane.nodeSets.edpm-b.nodeTemplate.ansibleSSHPrivateKeyFile",
        "/nonexistent/key",
        "dataplane.nodeSets.edpm-b.nodeTemplate.ansibleSSHPrivateKeyFile",
    ),
    (
        "dataplane.nodeSets.edpm-b.nodeTemplate.ansiblePort",
        70000,
        "dataplane.nodeSets.edpm-b.nodeTemplate.ansiblePort",
    ),
    (
        "dataplane.nodeSets.edpm-b.customServiceConfig",
        {"neutron-metadata": "[DEFAULT\n"},
        "dataplane.nodeSets.edpm-b.customServiceConfig.neutron-metadata",
    ),
    (
        "dataplane.nodeSets.edpm-b.customServiceConfig",
        {"ceph": "x"},
        "dataplane.nodeSets.edpm-b.customServiceConfig.ceph",
    ),
    (
        "dataplane.customServices.motd.playbook",
        "../x.yml",
        "dataplane.customServices.motd.playbook",
    ),
    ("dataplane.customServices.nova", {"playbook": "n.yml"}, "dataplane.customServices.nova"),
    ("dataplane.migrationSSHKey", {"publicKey": "ssh-ed25519 AAAA"}, "dataplane.migrationSSHKey"),
    (
        "extraMounts",
        [{"volumes": [{"name": "a"}], "mounts": [{"name": "b", "mountPath": "/b"}]}],
        "extraMounts[0].mounts[0].name",
    ),
    ("extraMounts", [{"volumes": [{"hostPath": {}}]}], "extraMounts[0].volumes[0].name"),
    ("extraMounts", [{"propagation": ["NovaApi"]}], "extraMounts[0].propagation[0]"),
    ("extraMounts", {"name": "x"}, "extraMounts"),
    # an entry has no name: lib-common's VolMounts has none, and nothing would use it
    ("extraMounts", [{"name": "ceph", "volumes": []}], "extraMounts[0].name"),
    ("nodesets", {}, "nodesets"),
    ("nova.memcachedInstance", "Memcached_1", "nova.memcachedInstance"),
    ("dataplane.nodeSets.edpm-b.nodeTemplate.timeouts", {"task": 100, "run": 50},
     "dataplane.nodeSets.edpm-b.nodeTemplate.timeouts.task"),
    ("dataplane.nodeSets.edpm-b.nodeTemplate.timeouts", {"connect": 0},
     "dataplane.nodeSets.edpm-b.nodeTemplate.timeouts.connect"),
    ("dataplane.nodeSets.edpm-b.nodeTemplate.timeouts", {"hang": 5},
     "dataplane.nodeSets.edpm-b.nodeTemplate.timeouts.hang"),
    ("dataplane.nodeSets.edpm-b.nodeTemplate.timeouts", {"lock": -1},
     "dataplane.nodeSets.edpm-b.nodeTemplate.timeouts.lock"),
    ("nova.cellTemplates.cell1.dbPurge", {"purgeAge": "ninety"}, "nova.cellTemplates.cell1.dbPurge.purgeAge"),
]


@pytest.mark.parametrize(("change", "value", "path"), CASES, ids=[f"{c[0]}={c[1]!r}"[:60] for c in CASES])
def test_rule_reports_exact_path(change: str, value: Any, path: str) -> None:
    problems = problems_of(with_change(change, value))
    assert P + path in problems, problems


def test_cell0_is_required() -> None:
    raw = {"nova": {"cellTemplates": {"cell1": {}}}}
    assert P + "nova.cellTemplates" in problems_of(raw)


def test_unknown_key_suggests_the_right_one() -> None:
    problems = problems_of(with_change("nova.keystone.regoin", "x"))
    assert problems[P + "nova.keystone.regoin"] == "unknown key 'regoin'; did you mean region?"


def test_hint_ignores_case() -> None:
    problems = problems_of(with_change("extraMounts", [{"propagation": ["NovaApi"]}]))
    assert problems[P + "extraMounts[0].propagation[0]"].endswith("did you mean NovaAPI?")


def test_wrong_type_names_the_expected_type() -> None:
    problems = problems_of(with_change("nova.apiServiceTemplate.replicas", True))
    assert problems[P + "nova.apiServiceTemplate.replicas"] == "expected an integer, got a boolean"


def test_every_problem_is_reported_at_once() -> None:
    raw = with_change("nova.apiTimeout", 1)
    raw = with_change("namespace", "BAD", raw)
    raw = with_change("dataplane.nodeSets.edpm-a.cell", "cell0", raw)
    raw = with_change("nova.cellTemplates.cell0.noVNCProxyServiceTemplate", {"enabled": True}, raw)
    with pytest.raises(SettingsError) as caught:
        load(raw, secret_keys=ALL_SECRET, catalog=None)
    paths = [p.path for p in caught.value.problems]
    assert set(paths) >= {
        P + "nova.apiTimeout",
        P + "namespace",
        P + "dataplane.nodeSets.edpm-a.cell",
        P + "nova.cellTemplates.cell0.noVNCProxyServiceTemplate.enabled",
    }
    lines = str(caught.value).splitlines()
    assert lines[0].startswith(f"the stack config has {len(paths)} problems")
    assert f"  {P}nova.apiTimeout: 1 is out of range; expected 10..inf" in lines


def test_ssh_key_file_is_expanded(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    key = tmp_path / "id_ed25519"
    key.write_text("KEY")
    monkeypatch.setenv("KEYDIR", str(tmp_path))
    raw = with_change(
        "dataplane.nodeSets.edpm-b.nodeTemplate",
        {"ansibleSSHPrivateKeyFile": "$KEYDIR/id_ed25519", "knownHostsFile": KNOWN_HOSTS},
    )
    settings = load(raw, secret_keys=ALL_SECRET, catalog=None)
    template = {s.name: s for s in settings.dataplane.node_sets}["edpm-b"].node_template
    assert template.ssh_private_key_file == str(key) and template.ssh_private_key is None


def test_unset_variable_in_key_file_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_SUCH_DIR", raising=False)
    raw = with_change(
        "dataplane.nodeSets.edpm-b.nodeTemplate", {"ansibleSSHPrivateKeyFile": "${NO_SUCH_DIR}/k"}
    )
    problems = problems_of(raw)
    message = problems[P + "dataplane.nodeSets.edpm-b.nodeTemplate.ansibleSSHPrivateKeyFile"]
    assert message == "'${NO_SUCH_DIR}/k' uses an environment variable that is not set"
    assert P + "dataplane.nodeSets.edpm-b.nodeTemplate" not in problems  # one problem, not two


def test_both_ssh_key_and_file_is_a_problem(tmp_path: Any) -> None:
    key = tmp_path / "k"
    key.write_text("KEY")
    raw = with_change(
        "dataplane.nodeSets.edpm-b.nodeTemplate",
        {"ansibleSSHPrivateKey": "KEY", "ansibleSSHPrivateKeyFile": str(key)},
    )
    assert P + "dataplane.nodeSets.edpm-b.nodeTemplate.ansibleSSHPrivateKeyFile" in problems_of(raw)


# --- extraMounts propagation (lib-common semantics) ---------------------------------


@pytest.mark.parametrize(
    ("propagation", "tags", "expected"),
    [
        (None, ["NovaAPI"], True),
        ((), ["Compute"], True),
        (("All",), ["Compute"], True),
        (("Compute",), ["Compute", "edpm-a"], True),
        (("Compute",), control_plane_tags("NovaConductor", "cell1"), False),
        (("cell1",), control_plane_tags("NovaConductor", "cell1"), True),
        (("cell1",), control_plane_tags("NovaConductor", "cell2"), False),
        (("Nova",), control_plane_tags("NovaAPI"), True),
        (("NovaAPI",), control_plane_tags("NovaScheduler"), False),
        (("novaapi",), control_plane_tags("NovaAPI"), False),  # exact match only
        (("edpm-a",), edpm_tags("edpm-a"), True),
    ],
)
def test_propagates(propagation: Any, tags: Any, expected: bool) -> None:
    assert propagates(propagation, tags) is expected


# --- host keys --------------------------------------------------------------------------


def _known_hosts_config(tmp_path: Any, text: str, port: int = 22) -> dict[str, Any]:
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(text)
    raw = good_config()
    raw["dataplane"]["nodeSets"]["edpm-a"]["nodeTemplate"].update(knownHostsFile=str(known_hosts), ansiblePort=port)
    return raw


def test_host_keys_come_from_the_node_sets_known_hosts(tmp_path: Any) -> None:
    salt = base64.b64encode(b"0123456789abcdef0123").decode()
    digest = base64.b64encode(hmac.new(b"0123456789abcdef0123", b"[192.168.122.101]:2222", "sha1").digest()).decode()
    raw = _known_hosts_config(tmp_path, "\n".join([
        "# a comment",
        "[192.168.122.100]:2222,compute-0 ssh-ed25519 AAAAkey0",
        "[192.168.122.100]:2222 ecdsa-sha2-nistp256 AAAAkey0b",
        "192.168.122.100 ssh-ed25519 AAAAport22",  # another port: another host
        f"|1|{salt}|{digest} ssh-ed25519 AAAAkey1",  # hashed, as HashKnownHosts writes
        "@revoked [192.168.122.101]:2222 ssh-rsa AAAArevoked",
        "*.example ssh-rsa AAAAwildcard",
    ]), port=2222)
    nodes = {n.name: n for n in load(raw, secret_keys=ALL_SECRET, catalog=None).dataplane.nodes}
    assert nodes["compute-0"].host_keys == ("ssh-ed25519 AAAAkey0", "ecdsa-sha2-nistp256 AAAAkey0b")
    assert nodes["compute-1"].host_keys == ("ssh-ed25519 AAAAkey1",)


@pytest.mark.parametrize("services", [None, ["ceph-client", "nova"]], ids=["keys shared", "keys not shared"])
def test_a_node_without_a_host_key_is_a_problem(tmp_path: Any, services: list[str] | None) -> None:
    """Ansible accepts no key it was not given: a node without one fails at preview, not at its run."""
    raw = _known_hosts_config(tmp_path, "192.168.122.100 ssh-ed25519 AAAAkey0\n")
    if services:
        raw["dataplane"]["nodeSets"]["edpm-a"]["services"] = services
    problems = problems_of(raw)
    assert problems == {P + "dataplane.nodeSets.edpm-a.nodes.compute-1": (
        f"{tmp_path}/known_hosts (nodeTemplate.knownHostsFile) has no host key for 192.168.122.101: add the "
        "node's key (from `ssh-keyscan -p 22 192.168.122.101`, checked against the node itself; docs/operations.md, "
        "\"Trusting a node\")")}


@pytest.mark.parametrize("services", [None, ["ceph-client", "nova"]], ids=["keys shared", "keys not shared"])
def test_a_node_set_with_nodes_needs_a_known_hosts_file(services: list[str] | None) -> None:
    raw = good_config()
    del raw["dataplane"]["nodeSets"]["edpm-a"]["nodeTemplate"]["knownHostsFile"]
    if services:
        raw["dataplane"]["nodeSets"]["edpm-a"]["services"] = services
    problems = problems_of(raw)
    assert list(problems) == [P + "dataplane.nodeSets.edpm-a.nodeTemplate.knownHostsFile"]
    shared = " and the ssh-known-hosts service gives every node" if services is None else ""
    assert problems[P + "dataplane.nodeSets.edpm-a.nodeTemplate.knownHostsFile"] == (
        "is required: a known_hosts file with each node's host key, which Ansible checks the nodes against"
        + shared)


def test_a_node_set_without_nodes_needs_no_known_hosts_file() -> None:
    raw = good_config()
    node_set = raw["dataplane"]["nodeSets"]["edpm-a"]
    del node_set["nodeTemplate"]["knownHostsFile"]
    node_set["nodes"] = {}
    load(raw, secret_keys=ALL_SECRET, catalog=None)


SSH_VAR_CASES = [
    ("ansible_host_key_checking", False, "host keys are always checked; add the node's key to "
     "nodeTemplate.knownHostsFile instead (docs/operations.md, \"Trusting a node\")"),
    ("ansible_ssh_host_key_checking", "no", "host keys are always checked; add the node's key to "
     "nodeTemplate.knownHostsFile instead (docs/operations.md, \"Trusting a node\")"),
    ("ansible_ssh_common_args", "-o ProxyJump=bastion -o StrictHostKeyChecking=no",
     "StrictHostKeyChecking would change which host key SSH accepts; add the node's key to "
     "nodeTemplate.knownHostsFile instead (docs/operations.md, \"Trusting a node\")"),
    ("ansible_ssh_extra_args", "-o userknownhostsfile=/dev/null", "userknownhostsfile would change which host key "
     "SSH accepts; add the node's key to nodeTemplate.knownHostsFile instead (docs/operations.md, "
     "\"Trusting a node\")"),
    ("ansible_ssh_args", "-F /home/me/.ssh/config", "-F would change which host key SSH accepts; add the node's "
     "key to nodeTemplate.knownHostsFile instead (docs/operations.md, \"Trusting a node\")"),
    ("ansible_connection", "paramiko", "'paramiko': nodes are reached over OpenSSH, with their host keys checked; "
     "remove this variable"),
    ("ansible_port", 2222, "the node's host key is looked up under its ansibleHost and the node set's "
     "ansiblePort; set nodeTemplate.ansiblePort instead"),
    ("ansible_host", "10.1.1.1", "the node's host key is looked up under its ansibleHost and the node set's "
     "ansiblePort; set the node's ansibleHost instead"),
]


@pytest.mark.parametrize(("name", "value", "message"), SSH_VAR_CASES, ids=[c[0] for c in SSH_VAR_CASES])
def test_ansible_vars_cannot_weaken_host_key_checking(name: str, value: Any, message: str) -> None:
    for where in ("nodeTemplate.ansibleVars", "nodes.compute-1.ansibleVars"):
        raw = with_change(f"dataplane.nodeSets.edpm-a.{where}", {name: value})
        assert problems_of(raw) == {P + f"dataplane.nodeSets.edpm-a.{where}.{name}": message}


def test_ansible_vars_may_add_other_ssh_options() -> None:
    raw = with_change("dataplane.nodeSets.edpm-a.nodeTemplate.ansibleVars",
                      {"ansible_ssh_common_args": "-o ProxyJump=bastion", "ansible_connection": "ssh"})
    load(raw, secret_keys=ALL_SECRET, catalog=None)


def test_an_unreadable_known_hosts_file_is_a_problem(tmp_path: Any) -> None:
    raw = good_config()
    raw["dataplane"]["nodeSets"]["edpm-a"]["nodeTemplate"]["knownHostsFile"] = str(tmp_path / "missing")
    problems = problems_of(raw)
    assert problems[P + "dataplane.nodeSets.edpm-a.nodeTemplate.knownHostsFile"] == (
        f"cannot read {tmp_path}/missing: No such file or directory")


# --- the neutron metadata agent -----------------------------------------------


OVN = P + "dataplane.ovn.sbConnection"


def test_the_ovn_southbound_database_is_required_by_neutron_metadata() -> None:
    problems = problems_of(with_change("dataplane.ovn", None))
    # edpm-b runs no neutron-metadata
    assert problems == {OVN: (
        "is required by the neutron-metadata service (node sets: edpm-a): the OVN southbound database its "
        "agents connect to, e.g. tcp:<address of ovsdbserver-sb>:6642 (upstream: ovn_sb_connection of the "
        "neutron-ovn-metadata-agent-neutron-config Secret)")}
    raw = with_change("dataplane.nodeSets.edpm-a.services", ["ceph-client", "nova"], with_change("dataplane.ovn", None))
    assert load(raw, secret_keys=ALL_SECRET, catalog=None).dataplane.ovn is None


@pytest.mark.parametrize(("given", "kept"), [
    ("tcp:10.0.0.5:6642", "tcp:10.0.0.5:6642"),
    ("tcp:ovsdbserver-sb.openstack.svc:6642", "tcp:ovsdbserver-sb.openstack.svc:6642"),
    ("tcp:[fd00:bbbb::5]:6642", "tcp:[fd00:bbbb::5]:6642"),
    ("tcp:10.0.0.5:6642, tcp:10.0.0.6:6642", "tcp:10.0.0.5:6642,tcp:10.0.0.6:6642"),  # a cluster
    ("unix:/run/ovn/ovnsb_db.sock", "unix:/run/ovn/ovnsb_db.sock"),
])
def test_ovsdb_connections_the_agent_takes(given: str, kept: str) -> None:
    settings = load(with_change("dataplane.ovn.sbConnection", given), secret_keys=ALL_SECRET, catalog=None)
    assert settings.dataplane.ovn is not None and settings.dataplane.ovn.sb_connection == kept


@pytest.mark.parametrize(("given", "message"), [
    ("ssl:10.0.0.5:6642", "'ssl:10.0.0.5:6642' needs TLS to the OVN databases, which the program does not set "
                          "up yet (no certificates reach the nodes); use tcp:HOST:PORT"),
    ("10.0.0.5:6642", "'10.0.0.5:6642' is not an ovsdb connection: tcp:HOST:PORT (e.g. tcp:10.0.0.5:6642) "
                      "or unix:PATH"),
    ("tcp:10.0.0.5", "'tcp:10.0.0.5' is not an ovsdb connection: tcp:HOST:PORT (e.g. tcp:10.0.0.5:6642) "
                     "or unix:PATH"),
    ("ptcp:6642", "'ptcp:6642' is not an ovsdb connection: tcp:HOST:PORT (e.g. tcp:10.0.0.5:6642) or unix:PATH"),
    ("tcp:10.0.0.5:6642,", "'' is not an ovsdb connection: tcp:HOST:PORT (e.g. tcp:10.0.0.5:6642) or unix:PATH"),
    ("tcp:[fd00::1::2]:6642", "'tcp:[fd00::1::2]:6642' names no usable host and port (tcp:HOST:PORT, an IPv6 "
                              "address in [])"),
    ("tcp:bad_host:6642", "'tcp:bad_host:6642' names no usable host and port (tcp:HOST:PORT, an IPv6 address "
                          "in [])"),
    ("tcp:10.0.0.5:70000", "'tcp:10.0.0.5:70000' names no usable host and port (tcp:HOST:PORT, an IPv6 address "
                           "in [])"),
])
def test_ovsdb_connections_the_agent_cannot_take(given: str, message: str) -> None:
    assert problems_of(with_change("dataplane.ovn.sbConnection", given)) == {OVN: message}


def test_unknown_ovn_keys_are_reported() -> None:
    problems = problems_of(with_change("dataplane.ovn.nbConnection", "tcp:10.0.0.5:6641"))
    assert problems == {P + "dataplane.ovn.nbConnection": "unknown key 'nbConnection'; did you mean sbConnection?"}


OPTION_VAR = (
    "the program renders the agent's options, so this variable would do nothing: set the option in "
    "customServiceConfig.neutron-metadata of the node set or node instead, e.g. \"[DEFAULT]\\nmetadata_workers = 4\"")
PLAIN_VAR = ("the program writes this value into the agent's haproxy wrapper: give a plain, non-empty string "
             "(no Jinja)")


@pytest.mark.parametrize(("name", "value", "message"), [
    ("edpm_neutron_metadata_agent_DEFAULT_metadata_workers", "4", OPTION_VAR),
    ("edpm_neutron_metadata_agent_ovn_ovsdb_probe_interval", "30000", OPTION_VAR),
    ("edpm_neutron_metadata_agent_ovs_ovsdb_connection", "tcp:127.0.0.1:6640", OPTION_VAR),
    ("edpm_neutron_metadata_agent_agent_root_helper", "sudo x", OPTION_VAR),
    ("edpm_neutron_metadata_agent_oslo_concurrency_lock_patch", "$state_path/lock", OPTION_VAR),
    ("edpm_neutron_metadata_agent_rootwrap_DEFAULT_rlimit_nofile", "2048",
     "rootwrap's config is upstream's, rendered by the program (01-rootwrap.conf); remove this variable"),
    ("edpm_neutron_metadata_agent_image", "{{ registry }}/agent:tag", PLAIN_VAR),
    ("edpm_neutron_metadata_agent_sidecar_haproxy_image_name", "", PLAIN_VAR),
    ("edpm_neutron_metadata_agent_lib_dir", 5, PLAIN_VAR),
    ("edpm_neutron_metadata_agent_config_dir", "var/lib/x", "'var/lib/x' is not an absolute path"),
    ("edpm_neutron_metadata_agent_sidecar_debug", "yes",
     "expected a boolean (true/false): the program writes it into the haproxy wrapper"),
])
def test_upstream_agent_variables_that_would_mislead(name: str, value: Any, message: str) -> None:
    for where in ("nodeSets.edpm-a.nodeTemplate", "nodeSets.edpm-a.nodes.compute-0"):
        problems = problems_of(with_change(f"dataplane.{where}.ansibleVars", {name: value}))
        assert problems == {f"{P}dataplane.{where}.ansibleVars.{name}": message}


def test_upstream_agent_variables_that_place_the_agent_are_kept() -> None:
    given = {"edpm_neutron_metadata_agent_image": "registry.example/agent:1",
             "edpm_neutron_metadata_agent_lib_dir": "/srv/neutron",
             "edpm_neutron_metadata_agent_sidecar_debug": True,
             "edpm_neutron_metadata_start_mode": "validate"}
    raw = with_change("dataplane.nodeSets.edpm-a.nodes.compute-0.ansibleVars", given)
    (node,) = [n for n in load(raw, secret_keys=ALL_SECRET, catalog=None).dataplane.nodes if n.name == "compute-0"]
    assert dict(node.ansible_vars) == given


# --- libvirt: the migration user's password, TLS ----------------------------------------


def test_libvirts_password_is_a_secret_and_tls_is_off_by_default() -> None:
    settings = load(with_change("dataplane.libvirt", {"password": "sasl-pw"}), secret_keys=ALL_SECRET, catalog=None)
    password = settings.dataplane.libvirt.password
    assert password is not None and password.reveal() == "sasl-pw" and "sasl-pw" not in repr(settings)
    assert not any(s.tls_enabled for s in settings.dataplane.node_sets) and settings.dataplane.tls_nodes == ()
    # unset: the program generates one
    assert load(good_config(), secret_keys=ALL_SECRET, catalog=None).dataplane.libvirt.password is None
    problems = problems_of(with_change("dataplane.libvirt", {"password": "sasl-pw"}), secret_keys=["nova"])
    assert problems[P + "dataplane.libvirt.password"] == (
        "is in plain text; set it with `pulumi config set --secret --path 'dataplane.libvirt.password' <value>`")


@pytest.mark.parametrize("password", ["two\nlines", " padded", "padded ", ""])
def test_libvirts_password_is_one_line(password: str) -> None:
    assert problems_of(with_change("dataplane.libvirt", {"password": password})) == {
        P + "dataplane.libvirt.password": "must be one line, not empty, without leading or trailing spaces (it goes "
                                         "into /etc/libvirt/auth.conf and libvirt's SASL database)"}


def test_tls_is_a_node_sets_and_covers_its_libvirt_nodes() -> None:
    settings = load(with_change("dataplane.nodeSets.edpm-a.tlsEnabled", True), secret_keys=ALL_SECRET, catalog=None)
    assert [(s.name, n.name) for s, n in settings.dataplane.tls_nodes] == [("edpm-a", "compute-0"),
                                                                          ("edpm-a", "compute-1")]
    assert problems_of(with_change("dataplane.nodeSets.edpm-a.tlsEnabled", "yes")) == {
        P + "dataplane.nodeSets.edpm-a.tlsEnabled": "expected a boolean (true/false), got a string"}


def test_libvirt_log_filters_are_checked_with_their_path() -> None:
    settings = load(good_config(), secret_keys=ALL_SECRET, catalog=None)
    assert {s.libvirt_log_filters for s in settings.dataplane.node_sets} == {
        "3:qemu 3:libvirt 4:object 4:json 4:event 3:util"}
    debug = "1:qemu  1:+libvirt 4:object 4:json 4:event 1:util.json "
    given = load(with_change("dataplane.nodeSets.edpm-a.libvirtLogFilters", debug), secret_keys=ALL_SECRET,
                 catalog=None)
    assert {s.name: s.libvirt_log_filters for s in given.dataplane.node_sets}["edpm-a"] == (
        "1:qemu 1:+libvirt 4:object 4:json 4:event 1:util.json")
    for wrong, said in (("debug", "debug is not a libvirt log filter"), ("5:qemu", "5:qemu is not a libvirt"),
                        ('1:qemu" log_outputs="x', '1:qemu" log_outputs="x is not a libvirt log filter: give '),
                        (" ", "must not be empty")):
        problems = problems_of(with_change("dataplane.nodeSets.edpm-a.libvirtLogFilters", wrong))
        assert list(problems) == [P + "dataplane.nodeSets.edpm-a.libvirtLogFilters"], problems
        assert problems[P + "dataplane.nodeSets.edpm-a.libvirtLogFilters"].startswith(said), problems


def test_a_node_sets_qemu_process_limit_is_upstreams_unless_given() -> None:
    settings = load(good_config(), secret_keys=ALL_SECRET, catalog=None)
    assert {(s.qemu_max_processes, s.qemu_max_files) for s in settings.dataplane.node_sets} == {(131072, 32768)}
    given = load(with_change("dataplane.nodeSets.edpm-a.qemuMaxProcesses", 0), secret_keys=ALL_SECRET, catalog=None)
    assert {s.name: s.qemu_max_processes for s in given.dataplane.node_sets}["edpm-a"] == 0
    given = load(with_change("dataplane.nodeSets.edpm-a.qemuMaxFiles", 0), secret_keys=ALL_SECRET, catalog=None)
    assert {s.name: s.qemu_max_files for s in given.dataplane.node_sets}["edpm-a"] == 0
    assert list(problems_of(with_change("dataplane.nodeSets.edpm-a.qemuMaxFiles", -1))) == [
        P + "dataplane.nodeSets.edpm-a.qemuMaxFiles"]
    problems = problems_of(with_change("dataplane.nodeSets.edpm-a.qemuMaxProcesses", -1))
    assert list(problems) == [P + "dataplane.nodeSets.edpm-a.qemuMaxProcesses"], problems


def test_tls_with_nova_needs_the_libvirt_service() -> None:
    # edpm-b runs nova without libvirt: nova would migrate to a TLS listener nobody set up
    assert problems_of(with_change("dataplane.nodeSets.edpm-b.tlsEnabled", True)) == {
        P + "dataplane.nodeSets.edpm-b.tlsEnabled":
            "nova then migrates over libvirt's TLS listener, which the libvirt service sets up: add libvirt to "
            "services (before nova, as in upstream's default order)"}


def test_a_given_migration_key_ends_with_a_newline_as_ssh_keygen_writes_it() -> None:
    """`pulumi config set --secret ... < key-file` drops the newline, without which OpenSSH cannot load the key."""
    key = {"privateKey": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbg==\n-----END OPENSSH PRIVATE KEY-----",
           "publicKey": "ssh-ed25519 AAAA nova-migration"}
    given = load(with_change("dataplane.migrationSSHKey", key), secret_keys=ALL_SECRET, catalog=None).dataplane
    assert given.migration_ssh_key is not None
    assert given.migration_ssh_key.private_key.reveal() == key["privateKey"] + "\n"
    assert given.migration_ssh_key.public_key == key["publicKey"] + "\n"
    # one written with its newline keeps it, once
    again = load(with_change("dataplane.migrationSSHKey", {k: v + "\n" for k, v in key.items()}),
                 secret_keys=ALL_SECRET, catalog=None).dataplane.migration_ssh_key
    assert again == given.migration_ssh_key


# --- the config's shape (schema.py): pydantic's findings in the project's words ------------------


@pytest.mark.parametrize(("change", "meant"), [
    ("namepsace", "namespace"),
    ("kubernetes.renderdir", "renderDir"),
    ("nova.cellTemplates.cell1.dbPurge.shedule", "schedule"),
    ("nova.cellTemplates.cell2.messagingBus.queuetype", "queueType"),
    ("dataplane.nodeSets.edpm-a.nodeTemplate.timeouts.conect", "connect"),
    ("dataplane.nodeSets.edpm-a.nodes.compute-0.ansibleHots", "ansibleHost"),
    ("dataplane.nodeSets.edpm-b.customServiceConfig.neutron_metadata", "neutron-metadata"),
    ("dataplane.customServices.motd.playbok", "playbook"),
])
def test_an_unknown_key_anywhere_is_named_with_the_key_it_may_mean(change: str, meant: str) -> None:
    key = change.rsplit(".", 1)[-1]
    assert problems_of(with_change(change, "x")) == {P + change: f"unknown key '{key}'; did you mean {meant}?"}


def test_an_unknown_key_in_a_list_item_is_named_at_its_index() -> None:
    raw = good_config()
    raw["extraMounts"][0]["mounts"][0]["readonly"] = True
    assert problems_of(raw) == {
        P + "extraMounts[0].mounts[0].readonly": "unknown key 'readonly'; did you mean readOnly?"}


@pytest.mark.parametrize(("change", "value", "path", "message"), [
    ("nova.apiTimeout", "60", "nova.apiTimeout", "expected an integer, got a string"),
    ("nova.apiTimeout", 60.0, "nova.apiTimeout", "expected an integer, got a number"),
    ("nova.keystone", "x", "nova.keystone", "expected an object, got a string"),
    ("nova.cellTemplates", ["cell0"], "nova.cellTemplates", "expected an object, got a list"),
    ("nova.cellTemplates.cell1", 1, "nova.cellTemplates.cell1", "expected an object, got an integer"),
    ("nova.messagingBus.queueType", 1, "nova.messagingBus.queueType", "expected a string, got an integer"),
    ("nova.messagingBus.port", 70000, "nova.messagingBus.port", "70000 is out of range; expected 1..65535"),
    ("kubernetes.skipAwait", 1, "kubernetes.skipAwait", "expected a boolean (true/false), got an integer"),
    ("kubernetes.mode", "dry", "kubernetes.mode", "'dry' is not one of: cluster, render"),
    ("images.compute", " ", "images.compute", "must not be empty; remove the key to use the default"),
    ("dataplane.nodeSets.edpm-b.services", "nova", "dataplane.nodeSets.edpm-b.services",
     "expected a list, got a string"),
    ("dataplane.nodeSets.edpm-a.nodeTemplate.ansibleUser", True, "dataplane.nodeSets.edpm-a.nodeTemplate.ansibleUser",
     "expected a string, got a boolean"),
    ("dataplane.customServices.motd.files", {"motd": ["x"]}, "dataplane.customServices.motd.files.motd",
     "expected a string, got a list"),
    ("dataplane.nodeSets.edpm-a.nodes.compute-0.ansibleHost", 1,
     "dataplane.nodeSets.edpm-a.nodes.compute-0.ansibleHost",
     "expected a string, got an integer"),  # one problem: not also "is required"
])
def test_a_value_of_the_wrong_shape_is_one_problem_in_the_projects_words(change: str, value: Any, path: str,
                                                                         message: str) -> None:
    problems = problems_of(with_change(change, value))
    # the value is left out, its default applies: other rules may then find more, elsewhere
    assert {p: m for p, m in problems.items() if p.startswith(P + path)} == {P + path: message}


def test_problems_of_shape_and_of_meaning_in_every_part_come_together() -> None:
    raw = with_change("images.novaRelease", 34)
    raw = with_change("kubernetes.mode", "dry", raw)
    raw = with_change("nova.keystone.regoin", "x", raw)
    raw = with_change("nova.cellTemplates.cell1.conductorServiceTemplate.replicas", "2", raw)
    raw = with_change("nova.cellTemplates.Cell_3", {}, raw)
    raw = with_change("dataplane.nodeSets.edpm-a.tlsEnabled", "yes", raw)
    raw = with_change("dataplane.nodeSets.edpm-b.cell", "cell9", raw)
    raw["extraMounts"][0]["mounts"].append({"name": "ceph", "readOnly": "no"})
    assert problems_of(raw) == {
        P + "images.novaRelease": "expected a string, got an integer",
        P + "kubernetes.mode": "'dry' is not one of: cluster, render",
        P + "nova.keystone.regoin": "unknown key 'regoin'; did you mean region?",
        P + "nova.cellTemplates.cell1.conductorServiceTemplate.replicas": "expected an integer, got a string",
        P + "nova.cellTemplates.Cell_3": "cell name 'Cell_3' must be lower-case letters, digits and '-', starting "
                                         "and ending alphanumeric",
        P + "dataplane.nodeSets.edpm-a.tlsEnabled": "expected a boolean (true/false), got a string",
        P + "dataplane.nodeSets.edpm-b.cell": "'cell9' is not in nova.cellTemplates; did you mean cell2?",
        P + "extraMounts[0].mounts[1].readOnly": "expected a boolean (true/false), got a string",
        P + "extraMounts[0].mounts[1].mountPath": "is required: an absolute path in the container",
    }


def test_an_item_of_the_wrong_shape_leaves_the_others_their_own_index() -> None:
    raw = with_change("dataplane.nodeSets.edpm-b.services", ["ceph-client", 5, "ceph-client", "nova"])
    raw["extraMounts"][0]["propagation"].append("NovaApi")
    raw["extraMounts"].insert(0, "ceph")
    assert problems_of(raw) == {
        P + "dataplane.nodeSets.edpm-b.services[1]": "expected a string, got an integer",
        P + "dataplane.nodeSets.edpm-b.services[2]": "service 'ceph-client' is listed twice",
        P + "extraMounts[0]": "expected an object, got a string",
        P + "extraMounts[1].propagation[2]": "'NovaApi' matches no pod or node set; did you mean NovaAPI?",
    }


def test_null_reads_as_absent() -> None:
    raw = {"namespace": None, "nova": {"keystone": None, "apiTimeout": None,
                                       "cellTemplates": {"cell0": None, "cell1": {"dbPurge": None}}}}
    assert load(raw, catalog=None) == load({}, catalog=None)


ODD_VALUES: list[Any] = [None, "", " ", "x", 0, -1, 10**12, 1.5, True, [], ["x"], [None], [{}], {}, {"x": 1},
                         {"secure": "v1:x"}]


@pytest.mark.parametrize("change", [
    "namespace", "images", "images.api", "kubernetes", "kubernetes.mode", "nova", "nova.keystone",
    "nova.keystone.password", "nova.cellTemplates", "nova.cellTemplates.cell1", "nova.cellTemplates.cell1.messagingBus",
    "nova.apiServiceTemplate.nodeSelector", "dataplane", "dataplane.nodeSets", "dataplane.nodeSets.edpm-a",
    "dataplane.nodeSets.edpm-a.nodes", "dataplane.nodeSets.edpm-a.nodes.compute-0",
    "dataplane.nodeSets.edpm-a.services", "dataplane.nodeSets.edpm-a.nodeTemplate.ansibleVars",
    "dataplane.migrationSSHKey", "extraMounts",
])
def test_any_value_anywhere_is_a_problem_or_fine_never_a_traceback(change: str) -> None:
    """What the user reads is the project's words: nothing of pydantic's, no Python error."""
    for value in ODD_VALUES:
        for raw in (with_change(change, value), with_change("extraMounts", [{"volumes": [value], "mounts": [value]}])):
            try:
                load(raw, secret_keys=ALL_SECRET, catalog=None)
            except SettingsError as error:
                text = str(error)
                for word in ("Traceback", "pydantic", "Input should", "validation error", "dictionary", "model"):
                    assert word not in text, (change, value, text)


def test_values_shared_between_keys_and_keys_that_are_no_strings_are_problems_too() -> None:
    """Not what Pulumi gives the program (JSON), but what a caller of load() might, from YAML."""
    shared = {"playbook": "x.yml", "fils": {}}
    raw = with_change("dataplane.customServices.motd", shared)
    raw = with_change("dataplane.customServices.other", shared, raw)
    raw["dataplane"]["nodeSets"]["edpm-a"]["nodes"][7] = {"ansibleHost": "10.0.0.7"}
    assert problems_of(raw) == {
        P + "dataplane.customServices.motd.fils": "unknown key 'fils'; did you mean files?",
        P + "dataplane.customServices.other.fils": "unknown key 'fils'; did you mean files?",
        P + "dataplane.nodeSets.edpm-a.nodes[7]": "expected a string key, got an integer",
    }


def test_the_metadata_agent_needs_a_metadata_service_for_each_nodes_cell() -> None:
    problems = problems_of(with_change("nova.cellTemplates.cell2.metadataServiceTemplate.enabled", False))
    # compute-1 (edpm-a) is in cell2; edpm-b (cell2) runs no neutron-metadata
    assert problems == {"openstack-nova:dataplane.nodeSets.edpm-a.services": (
        "neutron-metadata needs a metadata service for compute-1; enable nova.metadataServiceTemplate or "
        "nova.cellTemplates.cell2.metadataServiceTemplate")}
    top_level = with_change("nova.metadataServiceTemplate", {"enabled": True, **LOAD_BALANCER},
                            with_change("nova.cellTemplates.cell2.metadataServiceTemplate.enabled", False))
    top_level["nova"]["cellTemplates"]["cell1"]["metadataServiceTemplate"]["enabled"] = False
    assert load(top_level, secret_keys=ALL_SECRET, catalog=None).nova.metadata.enabled


def test_a_mounted_file_named_in_the_config_may_not_replace_one_of_novas_own() -> None:
    raw = good_config()
    raw["extraMounts"].append({
        "propagation": ["Compute"],
        "volumes": [{"name": "mine", "configMap": {"name": "mine", "items": [
            {"key": "a", "path": "01-nova.conf"}, {"key": "b", "path": "25-nova-extra.conf"},
            {"key": "c", "path": "03-ceph-nova.conf"}]}}],
        "mounts": [{"name": "mine", "mountPath": "/var/lib/openstack/configs/nova"}]})
    # edpm-a's customServiceConfig makes 25-nova-extra.conf; edpm-b's does not
    assert problems_of(raw) == {"openstack-nova:extraMounts[1].mounts[0]": (
        "extraMounts give nova 01-nova.conf, 25-nova-extra.conf, which the program makes itself; name the "
        "mounted files otherwise")}
