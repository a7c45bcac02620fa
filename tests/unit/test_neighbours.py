"""devenv/neighbours: what a stack's settings ask of the neighbours, and the manifests that provide it."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import stat
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from components.stackconfig import load
from devenv.neighbours import envsecrets, kube, manifests, plan, render, stackconfig
from devenv.neighbours.deploy import image_tag, wait_for
from tests.unit.fresh import HASH_SEEDS, printed_by_new_interpreters

CELLS = ("cell1", "cell2")


def nova_config(**overrides: Any) -> dict[str, Any]:
    """Every password the neighbours need, each one distinct and easy to find in a text."""
    cells: dict[str, Any] = {"cell0": {"hasAPIAccess": True, "cellDatabase": {"password": "pw-db-cell0-x1"}}}
    for cell in CELLS:
        cells[cell] = {
            "hasAPIAccess": True,
            "cellDatabase": {"password": f"pw-db-{cell}-x1"},
            "messagingBus": {"password": f"pw-bus-{cell}-x1"},
        }
    nova: dict[str, Any] = {
        "keystone": {"password": "pw-keystone-nova-x1"},
        "apiDatabase": {"password": "pw-db-api-x1"},
        "messagingBus": {"password": "pw-bus-api-x1"},
        "cellTemplates": cells,
    }
    nova.update(overrides)
    return nova


def settings_of(nova: dict[str, Any], namespace: str = "openstack") -> Any:
    return load({"namespace": namespace, "nova": nova}, secret_keys={"nova"}, catalog=None)


def env_for(settings: Any) -> envsecrets.EnvSecrets:
    return envsecrets.from_data(envsecrets.complete({}, plan.database_instances(settings)))


def neighbours_of(nova: dict[str, Any]) -> tuple[plan.Neighbours, envsecrets.EnvSecrets]:
    settings = settings_of(nova)
    env = env_for(settings)
    return plan.plan(settings, env.passwords, "dev"), env


def problems_of(nova: dict[str, Any]) -> tuple[str, ...]:
    settings = settings_of(nova)
    with pytest.raises(plan.PlanError) as raised:
        plan.plan(settings, env_for(settings).passwords, "dev")
    return raised.value.problems


# ---- what the settings ask for ---------------------------------------------------------


def test_default_cells_give_one_database_instance_per_cell_and_the_api_instance_holds_the_rest():
    n, _ = neighbours_of(nova_config())
    by_name = {i.name: i for i in n.databases}
    assert sorted(by_name) == ["openstack", "openstack-cell1", "openstack-cell2"]
    assert by_name["openstack"].databases == ("glance", "keystone", "neutron", "nova_api", "nova_cell0", "placement")
    assert [(a.name, a.databases) for a in by_name["openstack"].accounts] == [
        ("glance", ("glance",)), ("keystone", ("keystone",)), ("neutron", ("neutron",)), ("nova-api", ("nova_api",)),
        ("nova-cell0", ("nova_cell0",)), ("placement", ("placement",)),
    ]
    assert [(a.name, a.password) for a in by_name["openstack-cell1"].accounts] == [("nova-cell1", "pw-db-cell1-x1")]
    assert by_name["openstack-cell2"].databases == ("nova_cell2",)


def test_cell0_uses_the_api_bus_and_every_other_cell_gets_its_own_cluster():
    n, _ = neighbours_of(nova_config())
    assert [(c.name, c.port, c.vhosts, [(u.name, u.password) for u in c.users]) for c in n.buses] == [
        ("rabbitmq", 5672, ("/",), [("nova-api", "pw-bus-api-x1")]),
        ("rabbitmq-cell1", 5672, ("/",), [("nova-cell1", "pw-bus-cell1-x1")]),
        ("rabbitmq-cell2", 5672, ("/",), [("nova-cell2", "pw-bus-cell2-x1")]),
    ]


def test_buses_sharing_a_cluster_become_vhosts_and_users_of_one_broker():
    nova = nova_config()
    nova["cellTemplates"]["cell1"]["messagingBus"].update(cluster="rabbitmq", vhost="cell1")
    nova["notificationsBus"] = {"password": "pw-bus-notify-x1", "vhost": "notifications"}
    n, _ = neighbours_of(nova)
    shared = next(c for c in n.buses if c.name == "rabbitmq")
    assert shared.vhosts == ("/", "cell1", "notifications")
    assert [(u.name, u.vhosts) for u in shared.users] == [
        ("nova-api", ("/",)), ("nova-cell1", ("cell1",)), ("nova-notifications", ("notifications",)),
    ]
    assert [c.name for c in n.buses] == ["rabbitmq", "rabbitmq-cell2"]


def test_one_account_for_two_databases_of_an_instance_gets_both():
    nova = nova_config()
    nova["cellTemplates"]["cell0"]["cellDatabase"].update(account="nova-api", password="pw-db-api-x1")
    n, _ = neighbours_of(nova)
    api = next(i for i in n.databases if i.name == "openstack")
    assert ("nova-api", ("nova_api", "nova_cell0")) in [(a.name, a.databases) for a in api.accounts]


def test_keystone_and_placement_are_served_where_the_settings_point():
    n, _ = neighbours_of(nova_config())
    assert {i: (e.service, e.port) for i, e in n.keystone.endpoints.items()} == {
        "internal": ("keystone-internal", 5000), "public": ("keystone-public", 5000)}
    assert n.placement.endpoints["public"].url == "http://placement-public.openstack.svc:8778"
    assert [(u.name, u.roles) for u in n.keystone.service_users] == [
        ("nova", ("admin", "service")), ("placement", ("admin", "service")), ("glance", ("admin", "service")),
        ("neutron", ("admin", "service"))]


def test_glance_is_served_under_glance_operators_names_with_its_own_user_and_database():
    n, env = neighbours_of(nova_config())
    assert (n.glance.kind.type, n.glance.kind.port) == ("image", 9292)
    assert {i: e.url for i, e in n.glance.endpoints.items()} == {
        "internal": "http://glance-default-internal.openstack.svc:9292",
        "public": "http://glance-default-public.openstack.svc:9292",
    }
    assert n.glance.password == env.passwords.api_users["glance"] != env.passwords.api_users["placement"]
    assert (n.glance.db.name, n.glance.db.databases) == ("glance", ("glance",))


def test_neutron_is_served_under_neutron_operators_names_with_its_own_user_and_database():
    n, env = neighbours_of(nova_config())
    assert (n.neutron.kind.name, n.neutron.kind.type, n.neutron.kind.port) == ("neutron", "network", 9696)
    assert {i: e.url for i, e in n.neutron.endpoints.items()} == {
        "internal": "http://neutron-internal.openstack.svc:9696",
        "public": "http://neutron-public.openstack.svc:9696",
    }
    others = {env.passwords.api_users["glance"], env.passwords.api_users["placement"]}
    assert n.neutron.password == env.passwords.api_users["neutron"] and n.neutron.password not in others
    assert (n.neutron.db.name, n.neutron.db.databases) == ("neutron", ("neutron",))
    (api_instance,) = [i for i in n.databases if i.name == n.api_instance]
    assert "neutron" in api_instance.databases and n.neutron.db in api_instance.accounts


def test_ovn_databases_are_served_under_ovn_operators_names():
    n, _ = neighbours_of(nova_config())
    assert [(d.service, d.port, d.database) for d in n.ovn] == [
        ("ovsdbserver-nb", 6641, "OVN_Northbound"), ("ovsdbserver-sb", 6642, "OVN_Southbound")]
    # the control plane's pods: the ClusterIPs, by the whole name (libunbound, no search list)
    assert [plan.ovn_connection(d, "openstack") for d in n.ovn] == [
        "tcp:ovsdbserver-nb.openstack.svc.cluster.local:6641", "tcp:ovsdbserver-sb.openstack.svc.cluster.local:6642"]
    # the EDPM nodes: the southbound LoadBalancer, by the name the data plane's DNS answers as it is
    assert plan.ovn_sb_connection("openstack") == "tcp:ovsdbserver-sb.openstack.svc:6642"


def with_sb_connection(connection: str) -> Any:
    raw = {"namespace": "openstack", "nova": nova_config(), "dataplane": {"ovn": {"sbConnection": connection}}}
    return load(raw, secret_keys={"nova"}, catalog=None)


@pytest.mark.parametrize("connection", [
    "tcp:ovsdbserver-sb.openstack.svc:6642",
    # a real OVN outside the cluster: the environment has nothing to say about it
    "tcp:10.0.0.5:6642,tcp:ovn.example.com:6642",
    "unix:/run/ovn/ovnsb_db.sock",
])
def test_a_southbound_database_the_environment_serves_or_one_outside_it_is_accepted(connection):
    settings = with_sb_connection(connection)
    assert plan.plan(settings, env_for(settings).passwords, "dev").ovn


@pytest.mark.parametrize("connection", [
    # the cluster's domain: the nodes' resolver (the data plane's DNS) does not know it
    "tcp:ovsdbserver-sb.openstack.svc.cluster.local:6642",
    "tcp:ovsdbserver-nb.openstack.svc:6642",
    "tcp:ovsdbserver-sb.openstack.svc:6641",
    "tcp:10.0.0.5:6642,tcp:ovn-sb.openstack.svc:6642",
])
def test_a_southbound_database_in_the_namespace_other_than_the_served_one_is_reported(connection):
    settings = with_sb_connection(connection)
    with pytest.raises(plan.PlanError) as raised:
        plan.plan(settings, env_for(settings).passwords, "dev")
    assert raised.value.problems == (
        f"dataplane.ovn.sbConnection is {connection}: the local environment serves OVN's southbound database "
        "to the EDPM nodes at tcp:ovsdbserver-sb.openstack.svc:6642 (the name the data plane's DNS gives its "
        "LoadBalancer address; the nodes cannot resolve the cluster's domain)",)


def test_the_example_stacks_name_the_southbound_database_the_environment_serves():
    root = Path(__file__).resolve().parents[2]
    for stack, namespace in (("dev", "openstack"), ("ci-live-migration", "openstack-lm")):
        config = yaml.safe_load((root / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]
        assert config["openstack-nova:namespace"] == namespace
        assert config["openstack-nova:dataplane"]["ovn"]["sbConnection"] == plan.ovn_sb_connection(namespace)


# ---- what the settings cannot ask for ----------------------------------------------------


@pytest.mark.parametrize("path", [
    "nova.keystone.password",
    "nova.apiDatabase.password",
    "nova.cellTemplates.cell0.cellDatabase.password",
    "nova.cellTemplates.cell2.cellDatabase.password",
    "nova.messagingBus.password",
    "nova.cellTemplates.cell1.messagingBus.password",
])
def test_an_unset_password_is_reported_with_the_command_that_sets_it(path):
    nova = nova_config()
    *parents, leaf = path.split(".")[1:]
    obj = nova
    for key in parents:
        obj = obj[key]
    del obj[leaf]
    (problem,) = problems_of(nova)
    assert problem.startswith(f"{path} is not set")
    assert f"pulumi config set --secret --path '{path}' -s dev" in problem


def test_every_unset_password_is_reported_at_once():
    nova = nova_config(keystone={}, apiDatabase={}, messagingBus={})
    assert len(problems_of(nova)) == 3


def test_one_account_with_two_passwords_is_reported():
    nova = nova_config()
    nova["cellTemplates"]["cell0"]["cellDatabase"].update(account="nova-api")
    (problem,) = problems_of(nova)
    assert "nova.apiDatabase.password and nova.cellTemplates.cell0.cellDatabase.password" in problem


@pytest.mark.parametrize("account", ["keystone", "placement", "glance", "neutron"])
def test_nova_cannot_take_the_database_account_of_a_neighbour(account):
    nova = nova_config()
    nova["apiDatabase"]["account"] = account
    (problem,) = problems_of(nova)
    assert problem.startswith(f"nova.apiDatabase.account: {account} on openstack is {account}'s own account")


@pytest.mark.parametrize("user", ["admin", "placement", "glance", "neutron"])
def test_nova_cannot_take_the_keystone_user_of_a_neighbour(user):
    nova = nova_config()
    nova["keystone"]["serviceUser"] = user
    (problem,) = problems_of(nova)
    assert problem == f"nova.keystone.serviceUser cannot be {user}: the environment's own user"


def test_a_keystone_url_outside_the_namespace_is_reported():
    nova = nova_config()
    nova["keystone"]["internalURL"] = "https://keystone.example.com:5000"
    (problem,) = problems_of(nova)
    assert problem.startswith("nova.keystone.internalURL is https://keystone.example.com:5000")


def test_keystones_internal_url_must_be_the_name_the_data_plane_resolves():
    """nova-compute's auth_url on the nodes: the data plane's DNS answers <service>.<namespace>.svc only."""
    nova = nova_config()
    nova["keystone"]["internalURL"] = "http://keystone-internal.openstack.svc.cluster.local:5000"
    (problem,) = problems_of(nova)
    assert problem == (
        "nova.keystone.internalURL is http://keystone-internal.openstack.svc.cluster.local:5000: the EDPM nodes use "
        "it and resolve only keystone-internal.openstack.svc (the data plane's DNS), not the cluster's domain")
    # the public one: only the control plane's pods use it
    nova = nova_config()
    nova["keystone"]["publicURL"] = "http://keystone-public.openstack.svc.cluster.local:5000"
    n, _ = neighbours_of(nova)
    assert n.keystone.endpoints["public"].service == "keystone-public"


def test_a_cluster_on_two_ports_is_reported():
    nova = nova_config()
    nova["cellTemplates"]["cell1"]["messagingBus"].update(cluster="rabbitmq", vhost="cell1", port=5673)
    assert any("cannot listen on 5672 and 5673" in p for p in problems_of(nova))


# ---- rendered manifests ------------------------------------------------------------------


@pytest.fixture(scope="module")
def rendered() -> tuple[list[manifests.Stage], plan.Neighbours, envsecrets.EnvSecrets]:
    nova = nova_config()
    nova["apiDatabase"]["password"] = "pw-db-api-x1'$\"\\"  # quotes, $ and a backslash
    n, env = neighbours_of(nova)
    ctx = render.Context(namespace="openstack", image_tag="2026.2-1", data_dir="/env/neighbours/openstack")
    return manifests.stages(n, env, ctx), n, env


def all_objects(stages: list[manifests.Stage]) -> list[dict[str, Any]]:
    return [o for s in stages for o in s.objects]


def test_every_manifest_survives_a_yaml_round_trip_and_is_labelled_in_the_namespace(rendered):
    stages, _, _ = rendered
    objects = all_objects(stages)
    assert list(yaml.safe_load_all(yaml.safe_dump_all(objects))) == objects
    for obj in objects:
        assert obj["metadata"]["namespace"] == "openstack"
        assert obj["metadata"]["labels"][render.MANAGED_BY_LABEL] == render.MANAGED_BY
    names = [f"{o['kind']}/{o['metadata']['name']}" for o in objects]
    assert len(names) == len(set(names))


def test_no_password_or_key_appears_outside_the_string_data_of_secrets(rendered):
    stages, n, env = rendered
    values = manifests.secret_values(n, env)
    assert len(values) > 15
    for obj in all_objects(stages):
        visible = {k: v for k, v in obj.items() if not (obj["kind"] == "Secret" and k == "stringData")}
        text = json.dumps(visible)
        for value in values:
            assert value not in text, f"{obj['kind']}/{obj['metadata']['name']} shows a secret"


def test_every_workload_uses_the_local_images_without_pulling(rendered):
    stages, _, _ = rendered
    for obj in all_objects(stages):
        if obj["kind"] in ("Deployment", "StatefulSet", "Job"):
            (container,) = obj["spec"]["template"]["spec"]["containers"]
            assert container["image"].startswith("localhost/openstack-nova/")
            assert container["image"].endswith(":2026.2-1")
            assert container["imagePullPolicy"] == "IfNotPresent"
            assert container["resources"]["requests"]["cpu"] == "10m"


def test_the_stages_come_in_dependency_order(rendered):
    stages, _, _ = rendered
    kinds = [sorted({f"{o['kind']}/{o['metadata']['name'].split('-')[0]}" for o in s.objects}) for s in stages]
    assert {k.split("/")[0] for k in kinds[0]} == {"Secret"}
    assert "StatefulSet/openstack" in kinds[1] and "StatefulSet/rabbitmq" in kinds[1]
    assert "StatefulSet/ovsdbserver" in kinds[1] and "Deployment/ovn" in kinds[1]
    assert kinds[2] == ["Job/openstack"]
    assert kinds[3] == ["Job/glance", "Job/keystone", "Job/neutron", "Job/placement"]
    assert "Deployment/keystone" in kinds[4]
    assert kinds[5] == ["Job/keystone"]
    assert {"Deployment/placement", "Deployment/glance", "Deployment/neutron", "Deployment/openstackclient"} \
        <= set(kinds[6])
    assert kinds[7] == ["Job/glance"]
    assert len(stages) == 8


def secret_named(stages: list[manifests.Stage], name: str) -> dict[str, str]:
    data: dict[str, str] = next(o for o in stages[0].objects if o["metadata"]["name"] == name)["stringData"]
    return data


def test_account_sql_quotes_passwords_and_names(rendered):
    stages, _, _ = rendered
    sql = secret_named(stages, "openstack-db-accounts")["accounts.sql"]
    assert "ALTER USER 'nova-api'@'%' IDENTIFIED BY 'pw-db-api-x1''$\"\\\\';" in sql
    assert "GRANT ALL PRIVILEGES ON `nova_cell0`.* TO 'nova-cell0'@'%';" in sql
    assert "CREATE DATABASE IF NOT EXISTS `placement`" in sql


def test_config_files_reach_their_services(rendered):
    stages, n, _ = rendered
    placement = secret_named(stages, "placement-config-data")
    assert f"password = {n.placement.password}" in placement["placement.conf"]
    assert "auth_url = http://keystone-internal.openstack.svc:5000" in placement["placement.conf"]
    assert "from placement.wsgi.api import application" in placement["placement-api"]
    keystone = secret_named(stages, "keystone-config-data")
    assert "@openstack.openstack.svc/keystone?charset=utf8" in keystone["keystone.conf"]
    assert json.loads(keystone["config.json"])["command"] == "/usr/sbin/httpd -DFOREGROUND"
    definitions = json.loads(secret_named(stages, "rabbitmq-cell1-config-data")["definitions.json"])
    assert [u["name"] for u in definitions["users"]] == ["nova-cell1"]
    clouds = yaml.safe_load(secret_named(stages, "openstackclient-config")["clouds.yaml"])
    assert clouds["clouds"]["default"]["auth"]["password"] == n.keystone.admin_password
    setup = json.loads(secret_named(stages, "keystone-setup")["keystone-setup.json"])
    assert "service" in setup["roles"] and [s["type"] for s in setup["services"]] == ["placement", "image", "network"]
    assert setup["services"][2] == {"name": "neutron", "type": "network", "description": "Neutron Networking Service",
                                    "endpoints": {"internal": "http://neutron-internal.openstack.svc:9696",
                                                  "public": "http://neutron-public.openstack.svc:9696"}}
    assert {"name": "neutron", "password": n.neutron.password, "roles": ["admin", "service"]} in setup["users"]


def workload(stages: list[manifests.Stage], kind: str, name: str) -> dict[str, Any]:
    obj: dict[str, Any] = next(o for s in stages for o in s.objects
                               if o["kind"] == kind and o["metadata"]["name"] == name)
    return obj


def host_paths(obj: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """mount path -> (host path, type) of a workload's hostPath volumes."""
    spec = obj["spec"]["template"]["spec"]
    volumes = {v["name"]: v["hostPath"] for v in spec["volumes"] if "hostPath" in v}
    (container,) = spec["containers"]
    return {m["mountPath"]: (volumes[m["name"]]["path"], volumes[m["name"]]["type"])
            for m in container["volumeMounts"] if m["name"] in volumes}


def services(stages: list[manifests.Stage]) -> dict[str, tuple[int, dict[str, str]]]:
    return {o["metadata"]["name"]: (o["spec"]["ports"][0]["port"], o["spec"]["selector"])
            for s in stages for o in s.objects if o["kind"] == "Service"}


# ---- what the EDPM nodes reach: LoadBalancer Services on MetalLB's internalapi pool ------------


def all_services(stages: list[manifests.Stage]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for s in stages for o in s.objects if o["kind"] == "Service"}


INTERNAL_APIS = {"keystone-internal": 5000, "placement-internal": 8778, "glance-default-internal": 9292,
                 "neutron-internal": 9696}
OWN_ADDRESS = {"rabbitmq": 5672, "rabbitmq-cell1": 5672, "rabbitmq-cell2": 5672, "ovsdbserver-sb": 6642}


def test_exactly_the_services_the_nodes_use_are_load_balancers(rendered):
    stages, n, _ = rendered
    found = all_services(stages)
    balanced = {name for name, svc in found.items() if svc["spec"]["type"] == "LoadBalancer"}
    assert balanced == set(INTERNAL_APIS) | set(OWN_ADDRESS) == set(n.exposed)
    # public endpoints, memcached, MariaDB and OVN's northbound database stay inside the cluster
    assert {name for name, svc in found.items() if svc["spec"]["type"] == "ClusterIP"} == {
        "keystone-public", "placement-public", "glance-default-public", "neutron-public", "memcached",
        "openstack", "openstack-cell1", "openstack-cell2", "ovsdbserver-nb"}
    for name, svc in found.items():
        if name not in balanced:
            assert "annotations" not in svc["metadata"] and "externalTrafficPolicy" not in svc["spec"], name


def test_internal_apis_share_one_address_per_namespace_with_cluster_traffic_policy(rendered):
    stages, _, _ = rendered
    found = all_services(stages)
    for name, port in INTERNAL_APIS.items():
        svc = found[name]
        assert svc["metadata"]["annotations"] == {
            "metallb.universe.tf/address-pool": "internalapi",
            "metallb.universe.tf/allow-shared-ip": "internalapi-openstack",
            "dnsmasq.network.openstack.org/hostname": f"{name}.openstack.svc",
        }, name
        # MetalLB shares an address only among Services that are all Cluster (their selectors differ)
        assert svc["spec"]["externalTrafficPolicy"] == "Cluster"
        assert svc["spec"]["ports"] == [{"name": "http", "port": port, "targetPort": port, "protocol": "TCP"}]
        assert "loadBalancerIP" not in svc["spec"]  # MetalLB picks it: two stacks' namespaces run at once
    # one shared address needs distinct ports
    assert len(set(INTERNAL_APIS.values())) == len(INTERNAL_APIS)


def test_each_bus_and_the_southbound_database_get_an_address_of_their_own_that_keeps_the_peers(rendered):
    stages, _, _ = rendered
    found = all_services(stages)
    for name, port in OWN_ADDRESS.items():
        svc = found[name]
        assert svc["metadata"]["annotations"] == {
            "metallb.universe.tf/address-pool": "internalapi",
            "dnsmasq.network.openstack.org/hostname": f"{name}.openstack.svc",
        }, name
        # Local: RabbitMQ's peer_host and the southbound database's connections show the node's address
        assert svc["spec"]["externalTrafficPolicy"] == "Local"
        assert svc["spec"]["ports"][0]["port"] == port


def test_the_sharing_key_is_the_namespaces():
    assert manifests.load_balancer("keystone-internal", "openstack-lm", plan.Exposure.SHARED) == {
        "annotations": {"metallb.universe.tf/address-pool": "internalapi",
                        "metallb.universe.tf/allow-shared-ip": "internalapi-openstack-lm",
                        "dnsmasq.network.openstack.org/hostname": "keystone-internal.openstack-lm.svc"},
        "traffic_policy": "Cluster"}
    assert manifests.load_balancer("memcached", "openstack", None) is None


def test_a_keystone_service_serving_both_interfaces_is_exposed():
    nova = nova_config()
    nova["keystone"]["publicURL"] = "http://keystone-internal.openstack.svc:5000"
    n, _ = neighbours_of(nova)
    assert n.exposed["keystone-internal"] is plan.Exposure.SHARED and "keystone-public" not in n.exposed


def test_the_catalog_hands_the_nodes_names_of_exposed_services(rendered):
    """nova-compute finds placement, glance and neutron through the catalog, interface internal."""
    stages, n, _ = rendered
    setup = json.loads(secret_named(stages, "keystone-setup")["keystone-setup.json"])
    for service in setup["services"]:
        url = service["endpoints"]["internal"]
        host = url.split("//")[1].split(":")[0]
        assert host.endswith(".openstack.svc") and n.exposed[host.removesuffix(".openstack.svc")] \
            is plan.Exposure.SHARED, url
    assert n.keystone.internal_url == "http://keystone-internal.openstack.svc:5000"


class FakeKube:
    def __init__(self, statuses: list[dict[str, Any]]) -> None:
        self.statuses = statuses
        self.asked: list[tuple[str, ...]] = []

    def get_json(self, *args: str) -> dict[str, Any]:
        self.asked.append(args)
        return self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]


def test_a_load_balancer_is_ready_once_metallb_gave_it_an_address(monkeypatch):
    monkeypatch.setattr(kube.time, "sleep", lambda _: None)
    assigned = {"status": {"loadBalancer": {"ingress": [{"ip": "172.17.0.81"}]}}}
    fake = FakeKube([{"status": {"loadBalancer": {}}}, assigned])
    found = kube.Kubectl.wait_load_balancer(fake, "rabbitmq-cell1", 120)
    assert found == "172.17.0.81"
    assert fake.asked == [("service", "rabbitmq-cell1")] * 2


def test_a_load_balancer_without_an_address_fails_naming_the_service(monkeypatch):
    monkeypatch.setattr(kube.time, "sleep", lambda _: None)
    fake = FakeKube([{"spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {}}}])
    with pytest.raises(kube.WaitError) as raised:
        kube.Kubectl.wait_load_balancer(fake, "keystone-internal", 0)
    assert raised.value.line == ("MetalLB assigned no address to Service keystone-internal in 0 s: "
                                 "is MetalLB running (make status)?")


def test_the_deploy_waits_for_the_address_of_load_balancers_only(rendered):
    stages, _, _ = rendered
    found = all_services(stages)
    waited: list[str] = []
    fake = SimpleNamespace(wait_load_balancer=lambda name, timeout: waited.append(name) or "172.17.0.80")
    assert wait_for(fake, found["keystone-internal"]) == "172.17.0.80"
    assert wait_for(fake, found["keystone-public"]) is None
    assert waited == ["keystone-internal"]


def test_mariadb_glance_and_ovns_northbound_database_keep_their_data_in_the_namespaces_host_directory(rendered):
    stages, _, _ = rendered
    assert host_paths(workload(stages, "StatefulSet", "openstack-cell1")) == {
        "/var/lib/mysql": ("/env/neighbours/openstack/mariadb/openstack-cell1", "DirectoryOrCreate")}
    assert host_paths(workload(stages, "Deployment", "glance")) == {
        "/var/lib/glance": ("/env/neighbours/openstack/glance", "DirectoryOrCreate")}
    # what neutron wrote there stays with neutron's database, across new pods
    assert host_paths(workload(stages, "StatefulSet", "ovsdbserver-nb")) == {
        "/var/lib/ovn": ("/env/neighbours/openstack/ovn/ovsdbserver-nb", "DirectoryOrCreate")}
    assert host_paths(workload(stages, "StatefulSet", "ovsdbserver-sb")) == {}
    assert host_paths(workload(stages, "Deployment", "neutron")) == {}


def test_glance_serves_its_file_store_from_its_volume_as_its_own_user(rendered):
    stages, n, _ = rendered
    config = secret_named(stages, "glance-config-data")
    conf = config["glance-api.conf"]
    assert f"connection = mysql+pymysql://glance:{n.glance.db.password}@openstack.openstack.svc/glance?charset=utf8" \
        in conf
    assert "enabled_backends = default_backend:file" in conf
    assert "[default_backend]\nfilesystem_store_datadir = /var/lib/glance/images\n" in conf
    assert f"username = glance\npassword = {n.glance.password}\n" in conf
    assert "flavor = keystone" in conf
    kolla = json.loads(config["config.json"])
    assert kolla["command"] == "/usr/sbin/httpd -DFOREGROUND"
    assert {"source": "/var/lib/openstack/config/glance-api.conf", "dest": "/etc/glance/glance-api.conf",
            "owner": "glance", "perm": "0600"} in kolla["config_files"]
    assert kolla["permissions"] == [{"path": "/var/lib/glance", "owner": "glance:glance", "recurse": True}]
    assert "WSGIDaemonProcess glance processes=1 threads=4 user=glance group=glance" in config["httpd.conf"]
    assert {"KeepAlive On", "KeepAliveTimeout 15"} <= set(config["httpd.conf"].splitlines())
    assert "from glance.wsgi.api import application" in config["glance-api"]
    deployment = workload(stages, "Deployment", "glance")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "localhost/openstack-nova/glance-api:2026.2-1"
    assert container["readinessProbe"]["httpGet"] == {"path": "/healthcheck", "port": 9292}
    found = services(stages)
    for name in ("glance-default-internal", "glance-default-public"):
        assert found[name] == (9292, {"app.kubernetes.io/name": "glance", "app.kubernetes.io/instance": "glance"})


@pytest.mark.parametrize(("api", "image", "command"), [
    ("glance", "glance-api", ["glance-manage", "--config-file", "/var/lib/openstack/config/glance-api.conf",
                              "db_sync"]),
    # every branch's head, as neutron-operator's db sync
    ("neutron", "neutron-server", ["neutron-db-manage", "--config-file", "/var/lib/openstack/config/neutron.conf",
                                   "--config-file", "/var/lib/openstack/config/ml2_conf.ini", "upgrade", "heads"]),
])
def test_an_apis_schema_is_synced_with_the_pods_own_config(rendered, api, image, command):
    stages, _, _ = rendered
    (sync,) = [o for o in stages[3].objects if o["metadata"]["name"].startswith(f"{api}-db-sync-")]
    (container,) = sync["spec"]["template"]["spec"]["containers"]
    assert container["command"] == command
    assert container["image"] == f"localhost/openstack-nova/{image}:2026.2-1"
    mounts = {v["name"]: v["secret"]["secretName"] for v in sync["spec"]["template"]["spec"]["volumes"]}
    assert mounts == {"config-data": f"{api}-config-data"}


def test_neutron_runs_ml2_ovn_at_the_environments_ovn_databases_without_a_message_bus(rendered):
    stages, n, _ = rendered
    config = secret_named(stages, "neutron-config-data")
    conf, ml2 = config["neutron.conf"], config["ml2_conf.ini"]
    assert (f"connection = mysql+pymysql://neutron:{n.neutron.db.password}@openstack.openstack.svc/neutron"
            "?charset=utf8") in conf
    assert "core_plugin = ml2\nservice_plugins = ovn-router\nrpc_workers = 0\n" in conf
    assert "transport_url" not in conf
    assert conf.count(f"username = neutron\npassword = {n.neutron.password}\n") == 2  # authtoken and [nova]
    assert "[nova]\nauth_url = http://keystone-internal.openstack.svc:5000\n" in conf
    assert "endpoint_type = internal" in conf
    assert "mechanism_drivers = ovn\ntype_drivers = geneve,flat\nproject_network_types = geneve\n" in ml2
    assert "ovn_nb_connection = tcp:ovsdbserver-nb.openstack.svc.cluster.local:6641\n" in ml2
    assert "ovn_sb_connection = tcp:ovsdbserver-sb.openstack.svc.cluster.local:6642\n" in ml2
    kolla = json.loads(config["config.json"])
    assert kolla["command"] == "/usr/sbin/httpd -DFOREGROUND"
    copies = {c["dest"]: (c["source"], c["owner"], c["perm"]) for c in kolla["config_files"]}
    # the files neutron's WSGI application reads without --config-file
    assert copies["/etc/neutron/neutron.conf"] == ("/var/lib/openstack/config/neutron.conf", "neutron", "0600")
    assert copies["/etc/neutron/plugins/ml2/ml2_conf.ini"] == (
        "/var/lib/openstack/config/ml2_conf.ini", "neutron", "0600")
    assert "WSGIDaemonProcess neutron processes=1 threads=1 user=neutron group=neutron" in config["httpd.conf"]
    assert "Listen 9696" in config["httpd.conf"]
    assert "from neutron.wsgi.api import application" in config["neutron-api"]
    deployment = workload(stages, "Deployment", "neutron")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "localhost/openstack-nova/neutron-server:2026.2-1"
    assert container["readinessProbe"]["httpGet"] == {"path": "/", "port": 9696}
    found = services(stages)
    for name in ("neutron-internal", "neutron-public"):
        assert found[name] == (9696, {"app.kubernetes.io/name": "neutron", "app.kubernetes.io/instance": "neutron"})


def test_ovn_northd_joins_the_two_databases_by_their_whole_names_and_is_ready_when_active(rendered):
    stages, _, _ = rendered
    kolla = json.loads(secret_named(stages, "ovn-northd-config-data")["config.json"])
    assert kolla["command"].split() == [
        "ovn-northd", "--ovnnb-db=tcp:ovsdbserver-nb.openstack.svc.cluster.local:6641",
        "--ovnsb-db=tcp:ovsdbserver-sb.openstack.svc.cluster.local:6642", "--unixctl=/run/ovn/ovn-northd.ctl",
        "--no-chdir", "-vconsole:info", "-vfile:off"]
    pod = workload(stages, "Deployment", "ovn-northd")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == "localhost/openstack-nova/ovn-northd:2026.2-1"
    assert container["readinessProbe"]["exec"]["command"] == [
        "/bin/sh", "-c", "ovn-appctl -t /run/ovn/ovn-northd.ctl status | grep -qx 'Status: active'"]
    assert {"name": "run", "mountPath": "/run/ovn"} in container["volumeMounts"]
    assert "ovn-northd" not in services(stages)


def test_the_test_image_is_uploaded_as_the_admin_once_glance_is_ready(rendered):
    stages, _, _ = rendered
    spec = json.loads(secret_named(stages, "glance-test-image")["glance-test-image.json"])
    assert spec == {"name": "blank-raw-firmware-only", "size": 4 * 1024 * 1024, "disk_format": "raw",
                    "container_format": "bare", "visibility": "public"}
    (upload,) = stages[-1].objects
    pod = upload["spec"]["template"]["spec"]
    assert pod["containers"][0]["command"] == ["python3", "/var/lib/openstack/config/glance-test-image.py"]
    assert {v["name"]: v["secret"]["secretName"] for v in pod["volumes"]} == {
        "config-data": "glance-test-image", "clouds": "openstackclient-config"}
    assert "Deployment/glance" in {f"{o['kind']}/{o['metadata']['name']}" for o in stages[-2].objects}


def test_ovn_databases_are_ovsdb_servers_behind_ovn_operators_services(rendered):
    stages, _, _ = rendered
    found = services(stages)
    for db, port, schema in (("nb", 6641, "ovn-nb"), ("sb", 6642, "ovn-sb")):
        name = f"ovsdbserver-{db}"
        assert found[name] == (port, {"app.kubernetes.io/name": "ovsdbserver", "app.kubernetes.io/instance": name})
        kolla = json.loads(secret_named(stages, f"{name}-config-data")["config.json"])
        assert kolla["command"] == (f"/bin/bash /var/lib/openstack/config/ovsdb-server-start.sh ovn{db}_db.db "
                                    f"/usr/share/ovn/{schema}.ovsschema {port}")
        pod = workload(stages, "StatefulSet", name)["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        assert container["image"] == f"localhost/openstack-nova/ovn-{db}-db-server:2026.2-1"
        assert container["readinessProbe"]["exec"]["command"] == [
            "ovsdb-client", "--timeout=5", "list-dbs", f"unix:/run/ovn/ovn{db}_db.sock"]
        data = next(v for v in pod["volumes"] if v["name"] == "data")
        assert ("hostPath" if db == "nb" else "emptyDir") in data


def test_every_image_a_neighbour_runs_is_one_the_environment_imports(rendered):
    stages, _, _ = rendered
    text = (Path(__file__).resolve().parents[2] / "devenv" / "images.sh").read_text()
    match = re.search(r"^IMAGE_NAMES=\(([^)]*)\)", text, re.M)
    assert match
    imported = set(match.group(1).split())
    used = {o["spec"]["template"]["spec"]["containers"][0]["image"] for o in all_objects(stages)
            if o["kind"] in ("Deployment", "StatefulSet", "Job")}
    names = {u.removeprefix("localhost/openstack-nova/").partition(":")[0] for u in used}
    assert {"glance-api", "neutron-server", "ovn-nb-db-server", "ovn-sb-db-server", "ovn-northd"} <= names <= imported


def test_keystone_mounts_its_keys_as_a_key_repository(rendered):
    stages, _, env = rendered
    deployment = next(o for s in stages for o in s.objects if o["kind"] == "Deployment"
                      and o["metadata"]["name"] == "keystone")
    keys = next(v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == "keys")
    assert [i["path"] for i in keys["secret"]["items"]] == [
        "fernet-keys/0", "fernet-keys/1", "credential-keys/0", "credential-keys/1"]
    assert all(len(k) == 44 for k in env.fernet_keys)


def job_names(nova: dict[str, Any], secrets_file: Path) -> list[str]:
    """The names of the database Jobs for `nova`, with the environment's secrets kept in `secrets_file`."""
    settings = settings_of(nova)
    env = envsecrets.load_or_create(secrets_file, plan.database_instances(settings))
    ctx = render.Context(namespace="openstack", image_tag="t", data_dir="/d")
    stages = manifests.stages(plan.plan(settings, env.passwords, "dev"), env, ctx)
    return [o["metadata"]["name"] for o in stages[2].objects]


def test_a_job_keeps_its_name_for_the_same_inputs_and_changes_it_for_new_ones(tmp_path):
    secrets_file = tmp_path / "openstack.json"
    first = job_names(nova_config(), secrets_file)
    # the next `make up` (a new process, another hash seed) names them the same: they do not run again
    source = ("from pathlib import Path\nfrom tests.unit.test_neighbours import job_names, nova_config\n"
              f"print(job_names(nova_config(), Path({str(secrets_file)!r})))\n")
    assert printed_by_new_interpreters(source) == [f"{first}\n"] * len(HASH_SEEDS)
    nova = nova_config()
    nova["cellTemplates"]["cell1"]["cellDatabase"]["password"] = "pw-db-cell1-x2"
    changed = job_names(nova, secrets_file)
    assert changed[0] == first[0] and changed[1] != first[1]


# ---- generated secrets, stack config, image tag ------------------------------------------


def test_generated_secrets_are_kept_and_only_missing_ones_are_added(tmp_path):
    path = tmp_path / "neighbours" / "openstack.json"
    first = envsecrets.load_or_create(path, ["openstack"])
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    again = envsecrets.load_or_create(path, ["openstack"])
    assert again == first
    grown = envsecrets.load_or_create(path, ["openstack", "openstack-cell1"])
    assert grown.passwords.db_root["openstack"] == first.passwords.db_root["openstack"]
    assert grown.passwords.admin == first.passwords.admin
    assert set(grown.passwords.db_root) == {"openstack", "openstack-cell1"}
    assert first.passwords.admin not in repr(grown)


def test_an_environment_made_before_glance_and_neutron_keeps_its_passwords_and_gains_theirs(tmp_path):
    """The store of an environment that had placement only: placement's passwords (in keystone and
    MariaDB already) stay as they are; glance's and neutron's are added."""
    path = tmp_path / "openstack.json"
    old = {"admin": "pw-admin", "placement": "pw-placement", "keystone_db": "pw-keystone-db",
           "placement_db": "pw-placement-db", "db_root": {"openstack": "pw-root"},
           "fernet_keys": ["k0", "k1"], "credential_keys": ["c0", "c1"]}
    path.write_text(json.dumps(old))
    loaded = envsecrets.load_or_create(path, ["openstack"])
    assert (loaded.passwords.admin, loaded.passwords.keystone_db) == ("pw-admin", "pw-keystone-db")
    assert loaded.passwords.api_users["placement"] == "pw-placement"
    assert loaded.passwords.api_dbs["placement"] == "pw-placement-db"
    new = {loaded.passwords.api_users[api] for api in ("glance", "neutron")}
    new |= {loaded.passwords.api_dbs[api] for api in ("glance", "neutron")}
    assert len(new) == 4 and not new & {"pw-admin", "pw-placement", "pw-placement-db"}
    stored = json.loads(path.read_text())
    assert {k: stored[k] for k in old} == old
    assert stored["glance"] == loaded.passwords.api_users["glance"]
    assert stored["neutron_db"] == loaded.passwords.api_dbs["neutron"]


def test_the_environments_secret_holds_each_apis_passwords_as_upstreams_osp_secret_names_them(rendered):
    stages, n, _ = rendered
    data = secret_named(stages, manifests.ENV_SECRET)
    assert data["GlancePassword"] == n.glance.password
    assert data["GlanceDatabasePassword"] == n.glance.db.password
    assert data["PlacementPassword"] == n.placement.password
    assert data["PlacementDatabasePassword"] == n.placement.db.password
    assert data["NeutronPassword"] == n.neutron.password
    assert data["NeutronDatabasePassword"] == n.neutron.db.password


def test_pulumi_config_json_becomes_loads_raw_config():
    config = {
        "openstack-nova:namespace": {"value": "openstack", "secret": False},
        "openstack-nova:nova": {"value": "{}", "objectValue": {"keystone": {"password": "pw"}}, "secret": True},
        "openstack-nova:kubernetes": {"value": "{\"skipAwait\":true}", "secret": False},
        "kubernetes:context": {"value": "other", "secret": False},
    }
    raw, secret = stackconfig.raw_config(config)
    assert raw == {"namespace": "openstack", "nova": {"keystone": {"password": "pw"}},
                   "kubernetes": {"skipAwait": True}}
    assert secret == {"nova"}


def test_image_tag_comes_from_versions_env_or_the_default(tmp_path, monkeypatch):
    monkeypatch.delenv("IMAGE_TAG", raising=False)
    versions = tmp_path / "versions.env"
    versions.write_text("PULUMI_VERSION=1\n")
    assert image_tag(versions) == "2026.2-1"
    versions.write_text("PULUMI_VERSION=1\nIMAGE_TAG=2026.3-7\n")
    assert image_tag(versions) == "2026.3-7"


def test_quoting_filters_keep_values_whole():
    assert render.sql_string("a'b\\c") == "'a''b\\\\c'"
    assert render.sql_name("we`ird") == "`we``ird`"
    assert render.cnf_value('p"w\\') == '"p\\"w\\\\"'
    with pytest.raises(ValueError):
        render.cnf_value("two\nlines")


def pod(reason: str, restarts: int = 0, owner: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "p-1", "labels": {"app.kubernetes.io/instance": "keystone"},
                     "ownerReferences": [owner or {"kind": "ReplicaSet", "name": "keystone-5d7d"}]},
        "status": {"containerStatuses": [{"image": "localhost/openstack-nova/keystone:t", "restartCount": restarts,
                                          "state": {"waiting": {"reason": reason}}}]},
    }


def test_waiting_stops_at_a_missing_image_and_names_the_fix():
    problem = kube._pod_problem(pod("ErrImageNeverPull"))
    assert problem is not None and "localhost/openstack-nova/keystone:t" in problem and "images.sh import" in problem


def test_waiting_stops_at_a_crash_loop_only_after_restarts():
    assert kube._pod_problem(pod("CrashLoopBackOff", restarts=1)) is None
    assert kube._pod_problem(pod("CrashLoopBackOff", restarts=2)) == "CrashLoopBackOff (2 restarts)"
    assert kube._pod_problem(pod("ContainerCreating")) is None


def test_a_failing_pod_is_named_by_its_workload():
    assert kube._owner(pod("x")) == "deployment/keystone"
    assert kube._owner(pod("x", owner={"kind": "Job", "name": "keystone-setup-1234"})) == "job/keystone-setup-1234"


# ---- the test image Job's script ---------------------------------------------------------


class FakeImages:
    """glance as openstacksdk's image proxy shows it, for glance-test-image.py."""

    def __init__(self, images: list[SimpleNamespace]) -> None:
        self.images_now = images
        self.deleted: list[str] = []
        self.created: list[dict[str, Any]] = []

    def images(self, name: str) -> list[SimpleNamespace]:
        return [i for i in self.images_now if i.name == name]

    def delete_image(self, image: SimpleNamespace) -> None:
        self.deleted.append(image.id)

    def create_image(self, **kwargs: Any) -> SimpleNamespace:
        self.created.append(kwargs)
        return SimpleNamespace(id="new", name=kwargs["name"], size=len(kwargs["data"]), status="active")


def run_test_image_script(monkeypatch, tmp_path, images: list[SimpleNamespace]) -> FakeImages:
    want = {"name": "blank", "size": 4096, "disk_format": "raw", "container_format": "bare", "visibility": "public"}
    (tmp_path / "glance-test-image.json").write_text(json.dumps(want))
    monkeypatch.setenv("SETUP_CONFIG_DIR", str(tmp_path))
    fake = FakeImages(images)
    path = render.TEMPLATES / "glance-test-image.py"
    spec = importlib.util.spec_from_file_location("glance_test_image", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module.openstack, "connect", lambda cloud: SimpleNamespace(image=fake))
    assert module.main() == 0
    return fake


def image(id_: str, status: str = "active", size: int = 4096, name: str = "blank") -> SimpleNamespace:
    return SimpleNamespace(id=id_, name=name, status=status, size=size)


def test_the_test_image_is_uploaded_as_a_blank_raw_disk_when_missing(monkeypatch, tmp_path):
    fake = run_test_image_script(monkeypatch, tmp_path, [image("other", name="cirros")])
    (created,) = fake.created
    assert created["data"] == bytes(4096)
    assert {k: created[k] for k in ("name", "disk_format", "container_format", "visibility")} == {
        "name": "blank", "disk_format": "raw", "container_format": "bare", "visibility": "public"}
    assert created["wait"] is True and created["validate_checksum"] is True
    assert fake.deleted == []


def test_an_active_test_image_is_kept_and_broken_or_stale_ones_are_replaced(monkeypatch, tmp_path):
    fake = run_test_image_script(monkeypatch, tmp_path, [image("queued", status="queued"), image("good"),
                                                         image("twin")])
    assert fake.created == [] and fake.deleted == ["queued", "twin"]
    fake = run_test_image_script(monkeypatch, tmp_path, [image("small", size=1024)])
    assert fake.deleted == ["small"] and len(fake.created) == 1
