"""Component wiring under Pulumi mocks: which objects exist, their names,
keys and hashes. No CLI, no cluster."""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest

from components.settings import Settings
from components.stackconfig import load
from tests.unit import EXTRA_MOUNTS, KNOWN_HOSTS, LOAD_BALANCER


class RecordingMocks(pulumi.runtime.Mocks):
    """Records every resource; dynamic resources get stable fake outputs."""

    def __init__(self) -> None:
        self.resources: dict[str, pulumi.runtime.MockResourceArgs] = {}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.resources[args.name] = args
        state = dict(args.inputs)
        if args.typ.startswith("pulumi-python:dynamic"):
            state["value"] = f"generated-{args.name}"
            state["deployedHash"] = "0" * 64
            if "common_name" in state:  # a certificate authority or an issued certificate
                state["cert_pem"], state["key_pem"] = f"cert-of-{args.name}\n", f"key-of-{args.name}\n"
        return f"{args.name}-id", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        return {}, []

    def of_type(self, typ: str) -> dict[str, Any]:
        return {n: a.inputs for n, a in self.resources.items() if a.typ == typ}


SECRET_SIG = "4dabf18193072939515e22adb298388d"


def revealed(value: Any) -> Any:
    """Mocks see secret inputs wrapped in Pulumi's secret signature."""
    return value["value"] if isinstance(value, dict) and SECRET_SIG in value else value


SECRET = "kubernetes:core/v1:Secret"
# dataplane.migrationSSHKey of the tests' stack configs: what every compute gets as ssh-privatekey, ssh-publickey
MIGRATION_KEY = {"privateKey": "k", "publicKey": "k.pub"}
STATEFULSET = "kubernetes:apps/v1:StatefulSet"
JOB = "kubernetes:batch/v1:Job"


def settings(**nova: Any) -> Settings:
    raw = {"kubernetes": {"skipAwait": True},
           "nova": {"cellTemplates": {"cell0": {}, "cell1": {}, "cell2": {}}, **nova}}
    return load(raw, catalog=None)


@pytest.fixture()
def mocks() -> Iterator[RecordingMocks]:
    recorder = RecordingMocks()
    pulumi.runtime.set_mocks(recorder, project="openstack-nova", stack="unit", preview=False)
    yield recorder


def build(mocks: RecordingMocks, s: Settings) -> pulumi.Output[Any]:
    from components.controlplane import NovaControlPlane, control_plane_spec

    plane = NovaControlPlane("nova", control_plane_spec(s))
    # Checks run once every object of the control plane is registered.
    urns = [r.urn for r in plane.all_resources()]
    return pulumi.Output.all(plane.registered_cells_hash, *urns).apply(lambda v: v[0])


@pulumi.runtime.test
def test_objects_per_cell_and_top_level(mocks: RecordingMocks) -> pulumi.Output[Any]:
    def check(_: Any) -> None:
        secrets = {i["metadata"]["name"] for i in mocks.of_type(SECRET).values()}
        assert {"nova-cell1-compute-config", "nova-cell2-compute-config"} <= secrets
        assert "nova-cell0-compute-config" not in secrets
        assert "nova-metadata-neutron-config" in secrets
        deployments = {i["metadata"]["name"] for i in mocks.of_type(STATEFULSET).values()}
        assert {"nova-api", "nova-scheduler", "nova-metadata", "nova-cell0-conductor",
                "nova-cell1-conductor", "nova-cell1-novncproxy", "nova-cell2-novncproxy"} <= deployments
        assert "nova-cell0-novncproxy" not in deployments
        jobs = {i["metadata"]["name"] for i in mocks.of_type(JOB).values()}
        assert jobs == {f"nova-{c}-conductor-db-sync" for c in ("cell0", "cell1", "cell2")} | {
            f"nova-{c}-cell-mapping" for c in ("cell0", "cell1", "cell2")} | {
            "nova-keystone-registration", "nova-service-cleanup"}

    return build(mocks, settings()).apply(check)


@pulumi.runtime.test
def test_secret_keys_are_upstreams_where_docs_say_same(mocks: RecordingMocks) -> pulumi.Output[Any]:
    """docs/upstream-parity.md "Names and keys": the keys of each Secret, upstream's except the
    kolla file (`config.json`) and the WSGI files; the labels are the program's own."""
    s = settings(notificationsBus={"cluster": "rabbitmq"})

    def check(_: Any) -> None:
        by_name = {i["metadata"]["name"]: i for i in mocks.of_type(SECRET).values()}

        def keys(name: str) -> set[str]:
            return set(revealed(by_name[name]["stringData"]))

        base = {"01-nova.conf", "nova-blank.conf", "my.cnf", "config.json"}
        assert keys("nova-api-config-data") == base | {"httpd.conf", "10-nova-api-wsgi.conf", "nova-api-wsgi"}
        assert keys("nova-metadata-config-data") == base | {
            "httpd.conf", "10-nova-metadata-wsgi.conf", "nova-metadata-wsgi"}
        for name in ("nova-scheduler-config-data", "nova-cell0-conductor-config-data",
                     "nova-cell1-conductor-config-data", "nova-cell1-novncproxy-config-data"):
            assert keys(name) == base, name
        assert keys("nova-cell1-compute-config") == {
            "01-nova.conf", "nova-blank.conf", "nova-compute-config.json", "rabbitmq_user_name",
            "notification_rabbitmq_user_name"}
        assert keys("nova-metadata-neutron-config") == {"05-nova-metadata.conf"}
        # no scripts Secrets, internal Secrets (nova, nova-<cell>) or service account
        assert not {n for n in by_name if n.endswith("-scripts") or n in ("nova", "nova-cell0", "nova-cell1")}
        assert not mocks.of_type("kubernetes:core/v1:ServiceAccount")
        api = next(i for i in mocks.of_type(STATEFULSET).values() if i["metadata"]["name"] == "nova-api")
        assert api["spec"]["selector"]["matchLabels"] == {
            "service": "nova", "component": "nova-api", "app.kubernetes.io/managed-by": "openstack-nova"}
        assert [c["name"] for c in api["spec"]["template"]["spec"]["containers"]] == ["nova-api"]

    return build(mocks, s).apply(check)


@pulumi.runtime.test
def test_compute_config_carries_the_cells_bus(mocks: RecordingMocks) -> pulumi.Output[Any]:
    def check(_: Any) -> None:
        by_name = {i["metadata"]["name"]: i for i in mocks.of_type(SECRET).values()}
        cell1 = revealed(by_name["nova-cell1-compute-config"]["stringData"])["01-nova.conf"]
        cell2 = revealed(by_name["nova-cell2-compute-config"]["stringData"])["01-nova.conf"]
        assert "rabbitmq-cell1.openstack.svc" in cell1 and "rabbitmq-cell2" not in cell1
        assert "rabbitmq-cell2.openstack.svc" in cell2 and "rabbitmq-cell1" not in cell2
        # generated passwords reach the files
        assert "generated-nova-credentials-cell1-bus-password" in cell1

    return build(mocks, settings()).apply(check)


@pulumi.runtime.test
def test_override_file_only_with_custom_service_config(mocks: RecordingMocks) -> pulumi.Output[Any]:
    s = settings(apiServiceTemplate={"customServiceConfig": "[DEFAULT]\ndebug = true\n"})

    def check(_: Any) -> None:
        by_name = {i["metadata"]["name"]: i for i in mocks.of_type(SECRET).values()}
        # the rendered files stay secret on their way to the API server
        assert SECRET_SIG in by_name["nova-api-config-data"]["stringData"]
        assert "02-nova-override.conf" in revealed(by_name["nova-api-config-data"]["stringData"])
        assert "02-nova-override.conf" not in revealed(by_name["nova-scheduler-config-data"]["stringData"])

    return build(mocks, s).apply(check)


@pulumi.runtime.test
def test_pod_templates_carry_config_and_cells_hashes(mocks: RecordingMocks) -> pulumi.Output[Any]:
    def check(cells_hash: str) -> None:
        by_name = {i["metadata"]["name"]: i for i in mocks.of_type(STATEFULSET).values()}
        api = by_name["nova-api"]["spec"]["template"]["metadata"]["annotations"]
        assert len(api["nova.openstack.org/config-hash"]) == 64
        assert api["nova.openstack.org/registered-cells-hash"] == cells_hash
        conductor = by_name["nova-cell1-conductor"]["spec"]["template"]["metadata"]["annotations"]
        assert "nova.openstack.org/registered-cells-hash" not in conductor
        assert by_name["nova-api"]["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"

    return build(mocks, settings()).apply(check)


@pulumi.runtime.test
def test_extra_mounts_follow_their_propagation(mocks: RecordingMocks) -> pulumi.Output[Any]:
    raw = {"kubernetes": {"skipAwait": True},
           "nova": {"cellTemplates": {"cell0": {}, "cell1": {}}},
           "extraMounts": [
               *EXTRA_MOUNTS,
               {"propagation": ["Compute"],
                "volumes": [{"name": "ceph", "secret": {"secretName": "ceph-conf"}}],
                "mounts": [{"name": "ceph", "mountPath": "/etc/ceph"}]},
           ]}
    s = load(raw, catalog=None)

    def volumes_of(deployment: dict[str, Any]) -> set[str]:
        return {v["name"] for v in deployment["spec"]["template"]["spec"]["volumes"]} - {"config-data"}

    def check(_: Any) -> None:
        by_name = {i["metadata"]["name"]: i for i in mocks.of_type(STATEFULSET).values()}
        assert volumes_of(by_name["nova-api"]) == {"policy"}
        assert volumes_of(by_name["nova-scheduler"]) == set()
        assert volumes_of(by_name["nova-cell1-conductor"]) == {"cell1-extra"}
        assert volumes_of(by_name["nova-cell0-conductor"]) == set()
        mounts = by_name["nova-api"]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
        assert {"name": "policy", "mountPath": "/etc/nova/policy.d", "readOnly": True} in mounts

    return build(mocks, s).apply(check)


@pulumi.runtime.test
def test_probes_follow_upstream(mocks: RecordingMocks) -> pulumi.Output[Any]:
    def check(_: Any) -> None:
        by_name = {i["metadata"]["name"]: i for i in mocks.of_type(STATEFULSET).values()}

        def container(name: str) -> dict[str, Any]:
            return by_name[name]["spec"]["template"]["spec"]["containers"][0]

        api = container("nova-api")
        assert api["readinessProbe"]["httpGet"] == {"path": "/", "port": 8774}
        # apiTimeout 100: readiness every 30 s, liveness every 50 s, as upstream derives them
        assert (api["readinessProbe"]["periodSeconds"], api["readinessProbe"]["timeoutSeconds"]) == (30, 30)
        assert (api["livenessProbe"]["periodSeconds"], api["livenessProbe"]["failureThreshold"]) == (50, 10)
        assert container("nova-metadata")["livenessProbe"]["httpGet"]["port"] == 8775
        for rpc in ("nova-scheduler", "nova-cell1-conductor"):
            probe = container(rpc)["livenessProbe"]["exec"]["command"]
            assert probe == ["/usr/bin/pgrep", "-r", "DRST", "-f", rpc.split("-", 1)[0] + "-" + rpc.rsplit("-", 1)[1]]
            assert "readinessProbe" not in container(rpc)
        assert container("nova-cell1-novncproxy")["readinessProbe"]["httpGet"] == {
            "path": "/vnc_lite.html", "port": 6080}
        for name in by_name:
            assert container(name)["startupProbe"]["failureThreshold"] >= 6
            assert container(name)["imagePullPolicy"] == "IfNotPresent"

    return build(mocks, settings(apiTimeout=100)).apply(check)


@pulumi.runtime.test
def test_api_behind_internal_and_public_services(mocks: RecordingMocks) -> pulumi.Output[Any]:
    def check(_: Any) -> None:
        services = {i["metadata"]["name"]: i for i in mocks.of_type("kubernetes:core/v1:Service").values()}
        assert {"nova-internal", "nova-public", "nova-metadata-internal", "nova-novncproxy-cell1-public"} <= set(
            services)
        assert services["nova-public"]["spec"]["selector"]["component"] == "nova-api"
        assert services["nova-public"]["spec"]["ports"][0]["port"] == 8774

    return build(mocks, settings()).apply(check)


@pulumi.runtime.test
def test_a_cells_metadata_service_has_upstreams_names(mocks: RecordingMocks) -> pulumi.Output[Any]:
    """nova-operator's names for a cell's metadata service: the neutron agents of the cell's nodes
    reach nova-metadata-<cell>-internal, from nova-<cell>-metadata-neutron-config."""
    s = settings(metadataServiceTemplate={"enabled": False},
                 cellTemplates={"cell0": {}, "cell1": {"metadataServiceTemplate": {"enabled": True}}})

    def check(_: Any) -> None:
        def names(typ: str) -> set[str]:
            return {i["metadata"]["name"] for i in mocks.of_type(typ).values()}

        assert "nova-metadata-cell1-internal" in names("kubernetes:core/v1:Service")
        assert not {n for n in names("kubernetes:core/v1:Service") if n.startswith("nova-cell1-metadata")}
        assert {"nova-cell1-metadata-config-data", "nova-cell1-metadata-neutron-config"} <= names(SECRET)
        assert "nova-cell1-metadata" in names(STATEFULSET)
        by_name = {i["metadata"]["name"]: i for i in mocks.of_type(SECRET).values()}
        neutron = revealed(by_name["nova-cell1-metadata-neutron-config"]["stringData"])["05-nova-metadata.conf"]
        assert "nova_metadata_host = nova-metadata-cell1-internal.openstack.svc" in neutron

    return build(mocks, s).apply(check)


@pulumi.runtime.test
def test_stale_service_cleanup_runs_after_every_rollout(
    mocks: RecordingMocks, monkeypatch: pytest.MonkeyPatch
) -> pulumi.Output[Any]:
    import components.cleanup
    from components.controlplane import NovaControlPlane, control_plane_spec

    waits: list[Any] = []
    real_job = components.cleanup.config_job

    def recording_job(*args: Any, **kwargs: Any) -> Any:
        waits.extend(kwargs["opts"].depends_on)
        return real_job(*args, **kwargs)

    monkeypatch.setattr(components.cleanup, "config_job", recording_job)
    cells = {"cell0": {}, "cell1": {"conductorServiceTemplate": {"replicas": 2}}, "cell2": {}}
    s = settings(cellTemplates=cells, schedulerServiceTemplate={"replicas": 3})
    plane = NovaControlPlane("nova", control_plane_spec(s))
    # after every scheduler and conductor rollout, the API's rollout, its Services and its catalog entry
    assert set(waits) == {
        plane.scheduler.statefulset, *(c.conductor.statefulset for c in plane.cells.values()),
        plane.api.statefulset, *plane.api.services, plane.keystone.job, plane.service_cleanup.config_secret}

    def check(_: Any) -> None:
        job = next(j for j in mocks.of_type(JOB).values() if j["metadata"]["name"] == "nova-service-cleanup")
        pod = job["spec"]["template"]["spec"]
        container = pod["containers"][0]
        assert container["command"] == ["python3", "/var/lib/openstack/config/nova-service-cleanup.py"]
        # no secret in the pod spec: the credentials are a file of the Secret, readable by root only
        assert {e["name"]: e["value"] for e in container["env"]} == {
            "OS_CLIENT_CONFIG_FILE": "/var/lib/openstack/config/clouds.yaml",
            "CLEANUP_CONFIG_DIR": "/var/lib/openstack/config"}
        assert pod["volumes"][0]["secret"] == {"secretName": "nova-service-cleanup-config", "defaultMode": 0o400}
        assert len(job["spec"]["template"]["metadata"]["annotations"]["nova.openstack.org/config-hash"]) == 64
        config = next(i for i in mocks.of_type(SECRET).values()
                      if i["metadata"]["name"] == "nova-service-cleanup-config")
        assert SECRET_SIG in config["stringData"]
        plan = json.loads(revealed(config["stringData"])["nova-service-cleanup.json"])
        assert plan["binaries"]["nova-scheduler"]["statefulsets"] == {"nova-scheduler": 3}
        assert plan["binaries"]["nova-conductor"]["statefulsets"] == {
            "nova-cell0-conductor": 1, "nova-cell1-conductor": 2, "nova-cell2-conductor": 1}

    urns = [r.urn for r in plane.all_resources()]
    return pulumi.Output.all(*urns).apply(check)


CRONJOB = "kubernetes:batch/v1:CronJob"


@pulumi.runtime.test
def test_each_cell_archives_and_purges_its_database(mocks: RecordingMocks) -> pulumi.Output[Any]:
    cells = {"cell0": {}, "cell1": {}, "cell2": {"dbPurge": {"schedule": "@weekly", "archiveAge": 7, "purgeAge": 14}}}

    def check(_: Any) -> None:
        crons = {i["metadata"]["name"]: i for i in mocks.of_type(CRONJOB).values()}
        assert set(crons) == {"nova-cell0-db-purge", "nova-cell1-db-purge", "nova-cell2-db-purge"}
        for name, cron in crons.items():
            spec = cron["spec"]
            job = spec["jobTemplate"]["spec"]
            pod = job["template"]["spec"]
            assert (spec["concurrencyPolicy"], job["parallelism"], job["completions"]) == ("Forbid", 1, 1), name
            container = pod["containers"][0]
            script = container["command"][2]
            assert "db archive_deleted_rows --verbose --until-complete --task-log --before" in script
            assert "db purge --verbose --before" in script
            assert script.index("archive_deleted_rows") < script.index("db purge")
            sources = [s["secret"]["name"] for s in pod["volumes"][0]["projected"]["sources"]]
            # the API database (superconductor's config) first, then the cell's own database
            cell = name.split("-")[1]
            expected = ["nova-cell0-conductor-config-data"]
            if cell != "cell0":
                expected.append(f"nova-{cell}-conductor-config-data")
            assert sources == expected, name
        # upstream's defaults, and a cell's own
        assert crons["nova-cell1-db-purge"]["spec"]["schedule"] == "0 0 * * *"
        env = {e["name"]: e["value"] for e in
               crons["nova-cell1-db-purge"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert env == {"ARCHIVE_AGE": "30", "PURGE_AGE": "90"}
        cell2 = crons["nova-cell2-db-purge"]["spec"]
        env2 = {e["name"]: e["value"] for e in cell2["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert (cell2["schedule"], env2) == ("@weekly", {"ARCHIVE_AGE": "7", "PURGE_AGE": "14"})

    return build(mocks, settings(cellTemplates=cells)).apply(check)


PLAYBOOK_RUN = "pulumi-python:dynamic/ansible:PlaybookRun"


def _two_node_sets(tmp_path: Any, configs: dict[str, Any] | None = None,
                   n1_vars: dict[str, Any] | None = None, libvirt: dict[str, Any] | None = None,
                   images: dict[str, str] | None = None) -> list[Any]:
    """Node sets `fast` (n0, its own time limits, with TLS, QEMU's limits 4096 processes and 1024 files)
    and `default` (n1, `n1_vars` its ansibleVars), both in cell1; `configs`: customServiceConfig per node;
    `libvirt`: dataplane.libvirt; `images`: the stack's images."""
    from components.edpm.context import ControlPlaneFiles

    key = tmp_path / "id"
    key.write_text("key\n")

    def node_set(node: str, address: str, timeouts: dict[str, int], node_vars: dict[str, Any]) -> dict[str, Any]:
        template = {"ansibleSSHPrivateKeyFile": str(key), "knownHostsFile": KNOWN_HOSTS}
        return {"cell": "cell1", "nodes": {node: {"ansibleHost": address, "ansibleVars": node_vars}},
                "nodeTemplate": {**template, **({"timeouts": timeouts} if timeouts else {})}}

    raw: dict[str, Any] = {"kubernetes": {"skipAwait": True}, "images": images or {},
                           "nova": {"metadataServiceTemplate": LOAD_BALANCER}, "dataplane": {
        "ovn": {"sbConnection": "tcp:10.0.0.5:6642"}, "migrationSSHKey": MIGRATION_KEY,
        **({"libvirt": libvirt} if libvirt else {}),
        "nodeSets": {
            "fast": {**node_set("n0", "192.0.2.10", {"connect": 5, "task": 60, "run": 300, "lock": 0}, {}),
                     "tlsEnabled": True, "qemuMaxProcesses": 4096, "qemuMaxFiles": 1024},
            "default": node_set("n1", "192.0.2.11", {}, n1_vars or {})}}}
    for node_set_config in raw["dataplane"]["nodeSets"].values():
        for name, node in node_set_config["nodes"].items():
            if name in (configs or {}):
                node["customServiceConfig"] = configs[name]  # type: ignore[index]
    s = load(raw, secret_keys=["dataplane"], catalog=None)
    empty = pulumi.Output.from_input({"01-nova.conf": ""})
    metadata = pulumi.Output.secret({"05-nova-metadata.conf": "[DEFAULT]\nmetadata_proxy_shared_secret = s\n"})
    files = ControlPlaneFiles(compute_configs={"cell1": empty}, metadata_configs={None: metadata})
    return _edpm_node_sets(s, files)


def _edpm_node_sets(s: Any, files: Any) -> list[Any]:
    """An EdpmNodeSet for each node set of settings `s`, with the control plane's `files`, as the program
    makes them."""
    from components.dataplane import EdpmDataPlane

    return EdpmDataPlane(s, files).node_sets


def _all_runs(sets: list[Any]) -> pulumi.Output[Any]:
    return pulumi.Output.all(*[r.urn for ns in sets for runs in ns.runs.values() for r in runs.values()])


@pulumi.runtime.test
def test_node_runs_carry_their_node_sets_time_limits(mocks: RecordingMocks, tmp_path: Any) -> pulumi.Output[Any]:
    def check(_: Any) -> None:
        runs = {n: a for n, a in mocks.of_type(PLAYBOOK_RUN).items() if n.startswith(("n0-", "n1-"))}
        assert {n for n in runs} >= {"n0-nova", "n1-nova", "n0-marker", "n1-neutron-metadata"}
        for name, inputs in runs.items():
            want = {"connect": 5, "task": 60, "run": 300, "lock": 0} if name.startswith("n0-") else {
                "connect": 30, "task": 600, "run": 1800, "lock": 600}
            assert inputs["timeouts"] == want, name

    return _all_runs(_two_node_sets(tmp_path)).apply(check)


@pulumi.runtime.test
def test_every_node_gets_every_nodes_host_keys_first(mocks: RecordingMocks, tmp_path: Any) -> pulumi.Output[Any]:
    sets = _two_node_sets(tmp_path)
    # the services of a node run in this order, each after the one before
    assert [list(runs) for ns in sets for runs in ns.runs.values()] == [
        ["marker", "ssh-known-hosts", "neutron-metadata", "libvirt", "nova"]] * 2
    keys = {line.split()[0]: line.split(None, 1)[1] for line in Path(KNOWN_HOSTS).read_text().splitlines()}

    def check(_: Any) -> None:
        runs = mocks.of_type(PLAYBOOK_RUN)
        block = ("n0,192.0.2.10 " + keys["192.0.2.10"] + "\n" + "n1,192.0.2.11 " + keys["192.0.2.11"] + "\n")
        for node in ("n0", "n1"):
            assert runs[f"{node}-ssh-known-hosts"]["public_files"] == {"ssh_known_hosts": block}
            assert runs[f"{node}-ssh-known-hosts"]["playbook"] == "ssh-known-hosts.yml"

    return _all_runs(sets).apply(check)


@pulumi.runtime.test
def test_a_runs_provider_is_a_plain_reference_and_its_key_and_files_stay_secret(
        mocks: RecordingMocks, tmp_path: Any) -> pulumi.Output[Any]:
    import base64
    import pickle

    from components.ansible_runner.playbook import _PlaybookProvider

    def check(_: Any) -> None:
        run = mocks.of_type(PLAYBOOK_RUN)["n0-nova"]
        assert not isinstance(run["__provider"], dict)  # no secret inside, so none in state
        assert isinstance(pickle.loads(base64.b64decode(run["__provider"])), _PlaybookProvider)
        assert SECRET_SIG in run["ssh_private_key"] and SECRET_SIG in run["files"]

    return _all_runs(_two_node_sets(tmp_path)).apply(check)


@pulumi.runtime.test
def test_a_node_sets_outputs_are_by_node_and_service(mocks: RecordingMocks, tmp_path: Any) -> pulumi.Output[Any]:
    fast = next(s for s in _two_node_sets(tmp_path) if s.node_set_name == "fast")
    services = ["ssh-known-hosts", "neutron-metadata", "libvirt", "nova"]

    def check(values: list[Any]) -> None:
        hashes, in_sync = values
        assert list(hashes) == list(in_sync) == ["n0"]
        assert list(hashes["n0"]) == services  # what each service's last run deployed
        assert list(in_sync["n0"]) == ["marker", *services]

    return pulumi.Output.all(fast.deployed_hashes, fast.in_sync).apply(check)


@pulumi.runtime.test
def test_each_compute_gets_its_cells_config_and_the_migration_keys_as_secret_files(
        mocks: RecordingMocks, tmp_path: Any) -> pulumi.Output[Any]:
    sets = _two_node_sets(tmp_path, {"n1": {"nova": "[neutron]\npassword = pw\n"}})

    def check(_: Any) -> None:
        runs = mocks.of_type(PLAYBOOK_RUN)
        cell = {"01-nova.conf": "", "ssh-privatekey": "k\n", "ssh-publickey": "k.pub\n"}
        assert SECRET_SIG in runs["n0-nova"]["files"] and revealed(runs["n0-nova"]["files"]) == cell
        # a node's own secret snippet joins them, for that node alone
        assert revealed(runs["n1-nova"]["files"]) == {**cell, "26-nova-extra-host.conf": "[neutron]\npassword = pw\n"}

    return _all_runs(sets).apply(check)


@pulumi.runtime.test
def test_snippets_that_set_secret_options_reach_nodes_as_secret_files(
        mocks: RecordingMocks, tmp_path: Any) -> pulumi.Output[Any]:
    sets = _two_node_sets(tmp_path, {
        "n0": {"nova": "[neutron]\npassword = pw-in-snippet\n",
               "neutron-metadata": "[DEFAULT]\nmetadata_proxy_shared_secret = shared-in-snippet\n"},
        "n1": {"nova": "[DEFAULT]\ndebug = true\n"},
    })

    def check(_: Any) -> None:
        runs = mocks.of_type(PLAYBOOK_RUN)
        nova0, meta0, nova1 = runs["n0-nova"], runs["n0-neutron-metadata"], runs["n1-nova"]
        assert "26-nova-extra-host.conf" not in nova0["public_files"]
        assert revealed(nova0["files"])["26-nova-extra-host.conf"] == "[neutron]\npassword = pw-in-snippet\n"
        assert nova0["vars"] == {"edpm_nova_secret_files": ["26-nova-extra-host.conf"]}
        assert "26-neutron-metadata-extra-host.conf" not in meta0["public_files"]
        assert "26-neutron-metadata-extra-host.conf" in revealed(meta0["files"])
        assert meta0["vars"] == {"edpm_neutron_metadata_secret_files": ["26-neutron-metadata-extra-host.conf"]}
        # a snippet without secrets stays in preview, and changes no role variable
        assert nova1["public_files"]["26-nova-extra-host.conf"] == "[DEFAULT]\ndebug = true\n"
        assert nova1["vars"] == {}

    return _all_runs(sets).apply(check)


@pulumi.runtime.test
def test_a_nodes_own_snippets_reach_its_nova_and_neutron_metadata_runs(
        mocks: RecordingMocks, tmp_path: Any) -> pulumi.Output[Any]:
    nova, metadata = "[libvirt]\ncpu_mode = custom\n", "[DEFAULT]\nmetadata_workers = 4\n"
    sets = _two_node_sets(tmp_path, {"n0": {"nova": nova, "neutron-metadata": metadata}})

    def check(_: Any) -> None:
        runs = mocks.of_type(PLAYBOOK_RUN)
        # shown in preview, after everything the program renders (they sort last, and win)
        assert runs["n0-nova"]["public_files"]["26-nova-extra-host.conf"] == nova
        assert runs["n0-neutron-metadata"]["public_files"]["26-neutron-metadata-extra-host.conf"] == metadata
        for run in ("n0-nova", "n0-neutron-metadata"):
            assert max(runs[run]["public_files"], key=lambda f: (f.endswith(".conf"), f)).startswith("26-")
        # the other node's runs get neither
        assert not [f for r in ("n1-nova", "n1-neutron-metadata") for f in runs[r]["public_files"]
                    if f.startswith("26-")]

    return _all_runs(sets).apply(check)


@pulumi.runtime.test
def test_each_run_records_the_roles_it_runs_with(mocks: RecordingMocks, tmp_path: Any) -> pulumi.Output[Any]:
    """A changed role re-runs exactly the runs whose playbooks use it (see test_playbook.py)."""
    from components.ansible_runner.playbook import roles_fingerprint

    def check(_: Any) -> None:
        runs = {n: r for n, r in mocks.of_type(PLAYBOOK_RUN).items() if "playbook" in r}
        assert len(runs) == 10 and {r["roles"] == roles_fingerprint(r["playbook"]) for r in runs.values()} == {True}
        assert runs["n0-nova"]["roles"] != runs["n0-libvirt"]["roles"]

    return _all_runs(_two_node_sets(tmp_path)).apply(check)


def _alike_and_not(tmp_path: Any) -> dict[str, Any]:
    """The node sets, by name, of a data plane with node set `plain`: n0 and n1 alike (cell1, no
    snippet), n2 with a public snippet, n3 in cell2, n4 with a secret snippet; node set `tls` (TLS):
    t0 and t1, in cell1."""
    from components.edpm.context import ControlPlaneFiles

    key = tmp_path / "id"
    key.write_text("key\n")
    template = {"ansibleSSHPrivateKeyFile": str(key), "knownHostsFile": KNOWN_HOSTS}
    plain = {"n0": {"ansibleHost": "10.0.0.1"}, "n1": {"ansibleHost": "10.0.0.2"},
             "n2": {"ansibleHost": "10.0.0.9", "customServiceConfig": {"nova": "[DEFAULT]\ndebug = true\n"}},
             "n3": {"ansibleHost": "192.168.122.100", "cell": "cell2"},
             "n4": {"ansibleHost": "192.168.122.101", "customServiceConfig": {"nova": "[neutron]\npassword = pw\n"}}}
    tls = {"t0": {"ansibleHost": "192.168.122.102"}, "t1": {"ansibleHost": "192.0.2.10"}}
    raw = {"kubernetes": {"skipAwait": True},
           "nova": {"cellTemplates": {"cell0": {}, "cell1": {}, "cell2": {}}, "metadataServiceTemplate": LOAD_BALANCER},
           "dataplane": {
        "ovn": {"sbConnection": "tcp:10.0.0.5:6642"}, "migrationSSHKey": MIGRATION_KEY,
        "nodeSets": {"plain": {"cell": "cell1", "nodes": plain, "nodeTemplate": template},
                     "tls": {"cell": "cell1", "nodes": tls, "nodeTemplate": template, "tlsEnabled": True}}}}
    s = load(raw, secret_keys=["dataplane"], catalog=None)
    configs = {cell: pulumi.Output.secret({"01-nova.conf": f"[DEFAULT]\n# {cell}\n"}) for cell in ("cell1", "cell2")}
    files = ControlPlaneFiles(compute_configs=configs, metadata_configs={None: pulumi.Output.secret({"m": "m"})})
    from components.dataplane import EdpmDataPlane

    return {node_set.node_set_name: node_set for node_set in EdpmDataPlane(s, files).node_sets}


@pulumi.runtime.test
def test_nodes_alike_share_one_output_of_their_files_and_others_get_their_own(
        mocks: RecordingMocks, tmp_path: Any) -> pulumi.Output[Any]:
    from components.edpm.registry import builtin_services
    from components.render import host_specific_conf

    sets = _alike_and_not(tmp_path)
    nova, libvirt = (next(s for s in builtin_services() if s.name == name) for name in ("nova", "libvirt"))

    def inputs(node_set: str, service: Any) -> dict[str, Any]:
        """Each node's inputs of `service`, as the node set's runs got them (its Outputs made once)."""
        ns = sets[node_set]
        context = next(c for s, c in ns._contexts if s.name == service.name)
        made = {n.name: service.node_inputs(context, n) for n in ns._node_set.nodes}
        return {name: dataclasses.replace(i, files=ns._shared.resolve(i.files),
                                          public_files=ns._shared.resolve(i.public_files))
                for name, i in made.items()}

    own = inputs("plain", nova)
    # one Output of the secret files for the nodes alike (same cell, same own files), another for each other
    assert own["n0"].files is own["n1"].files
    assert len({id(own[n].files) for n in ("n0", "n2", "n3", "n4")}) == 4
    assert own["n0"].public_files is not own["n1"].public_files  # each node's own 02-nova-host-specific.conf
    # libvirt: the same files on every node of a node set without TLS, each TLS node its own certificate
    plain_libvirt, tls_libvirt = inputs("plain", libvirt), inputs("tls", libvirt)
    assert len({id(i.files) for i in plain_libvirt.values()}) == len({id(i.public_files) for i in
                                                                      plain_libvirt.values()}) == 1
    assert tls_libvirt["t0"].files is not tls_libvirt["t1"].files

    def check(_: Any) -> None:
        runs = mocks.of_type(PLAYBOOK_RUN)
        keys = {"ssh-privatekey": "k\n", "ssh-publickey": "k.pub\n"}
        for node, cell in (("n0", "cell1"), ("n1", "cell1"), ("n2", "cell1"), ("n3", "cell2")):
            assert SECRET_SIG in runs[f"{node}-nova"]["files"]
            assert revealed(runs[f"{node}-nova"]["files"]) == {"01-nova.conf": f"[DEFAULT]\n# {cell}\n", **keys}
        assert revealed(runs["n4-nova"]["files"]) == {"01-nova.conf": "[DEFAULT]\n# cell1\n", **keys,
                                                       "26-nova-extra-host.conf": "[neutron]\npassword = pw\n"}
        for node, address in (("n0", "10.0.0.1"), ("n1", "10.0.0.2"), ("n3", "192.168.122.100")):
            assert runs[f"{node}-nova"]["public_files"] == {
                "02-nova-host-specific.conf": host_specific_conf(address, node, tls=False)}
        assert runs["n2-nova"]["public_files"]["26-nova-extra-host.conf"] == "[DEFAULT]\ndebug = true\n"
        assert revealed(runs["t0-libvirt"]["files"])["tls.key"] == "key-of-libvirt-certificate-t0\n"
        assert revealed(runs["t1-libvirt"]["files"])["tls.key"] == "key-of-libvirt-certificate-t1\n"
        assert runs["n0-libvirt"]["public_files"] == runs["n4-libvirt"]["public_files"]

    return _all_runs(list(sets.values())).apply(check)


@pulumi.runtime.test
def test_a_runs_secret_inputs_are_the_values_resources_and_knownness_of_what_it_was_given(
        mocks: RecordingMocks) -> pulumi.Output[Any]:
    import asyncio

    from components.ansible_runner.playbook import secret

    given = pulumi.CustomResource("test:index:Thing", "given", {"a": "1"})
    files = given.urn.apply(lambda _: {"01-nova.conf": "[DEFAULT]\n", "x": "y"})
    loop = asyncio.get_event_loop()

    def resolved(value: Any) -> Any:
        future = loop.create_future()
        future.set_result(value)
        return future

    unknown: pulumi.Output[Any] = pulumi.Output(set(), resolved(None), resolved(False), resolved(False))

    async def check() -> None:
        wrapped = secret(files)
        assert await wrapped.is_secret() and await wrapped.is_known()
        assert await wrapped.future() == {"01-nova.conf": "[DEFAULT]\n", "x": "y"}
        assert given in await wrapped.resources()
        still_unknown = secret(unknown)
        assert await still_unknown.is_secret() and not await still_unknown.is_known()
        plain = secret({"a": "b"})  # not an Output: Output.secret itself
        assert await plain.is_secret() and await plain.future() == {"a": "b"}

    return pulumi.Output.from_input(check())


LIBVIRT_PUBLIC = sorted([*(f"{d}.conf" for d in ("virtlogd", "virtnodedevd", "virtproxyd", "virtqemud",
                                                    "virtsecretd")), "qemu.conf", "sasl2-libvirt.conf",
                         "libvirt-firewall.yaml"])


@pulumi.runtime.test
def test_libvirt_gets_the_stacks_password_and_with_tls_its_nodes_certificate(
        mocks: RecordingMocks, tmp_path: Any) -> pulumi.Output[Any]:
    from components.render import host_specific_conf, libvirt_config_files

    sets = _two_node_sets(tmp_path, libvirt={"password": "sasl-pw"})

    def check(_: Any) -> None:
        runs = mocks.of_type(PLAYBOOK_RUN)
        tls, plain = runs["n0-libvirt"], runs["n1-libvirt"]
        assert (tls["vars"], plain["vars"]) == ({"edpm_libvirt_tls_certs_enabled": True},
                                                {"edpm_libvirt_tls_certs_enabled": False})
        # shown in preview: the config and the certificates; the key and the password only ever secret
        assert sorted(tls["public_files"]) == sorted([*LIBVIRT_PUBLIC, "ca.crt", "tls.crt"])
        assert sorted(plain["public_files"]) == LIBVIRT_PUBLIC
        assert tls["public_files"]["tls.crt"] == "cert-of-libvirt-certificate-n0\n"
        assert tls["public_files"]["ca.crt"] == "cert-of-libvirt-ca\n"
        # each node set's own qemu.conf process limit
        assert {k: v for k, v in tls["public_files"].items() if k in LIBVIRT_PUBLIC} == libvirt_config_files(
            tls=True, qemu_max_processes=4096, qemu_max_files=1024)
        assert plain["public_files"] == libvirt_config_files(tls=False)
        assert SECRET_SIG in tls["files"] and SECRET_SIG in plain["files"]
        secret = revealed(tls["files"])
        assert sorted(secret) == ["LibvirtPassword", "auth.conf", "tls.key"]
        assert secret["LibvirtPassword"] == "sasl-pw" and "password=sasl-pw\n" in secret["auth.conf"]
        assert secret["tls.key"] == "key-of-libvirt-certificate-n0\n"
        assert list(revealed(plain["files"])) == ["auth.conf"]
        assert "sasl-pw" not in json.dumps([tls["public_files"], plain["public_files"], revealed(plain["files"])])
        # nova migrates over TLS where libvirt has it
        assert runs["n0-nova"]["public_files"]["02-nova-host-specific.conf"] == host_specific_conf(
            "192.0.2.10", "n0", tls=True)
        assert runs["n1-nova"]["public_files"]["02-nova-host-specific.conf"] == host_specific_conf(
            "192.0.2.11", "n1", tls=False)
        # the Secrets an operator of upstream finds: the password, the CA, a certificate per TLS node
        published = {i["metadata"]["name"]: i for i in mocks.of_type(SECRET).values()}
        assert revealed(published["libvirt-secret"]["stringData"]) == {"LibvirtPassword": "sasl-pw"}
        # libvirt's, and the migration key's (nova's stack part)
        assert sorted(published) == ["cert-libvirt-default-n0", "libvirt-secret", "nova-migration-ssh-key",
                                     "rootca-libvirt"]
        for name in ("cert-libvirt-default-n0", "rootca-libvirt"):
            assert published[name]["type"] == "kubernetes.io/tls"
            assert SECRET_SIG in published[name]["stringData"]
            assert sorted(revealed(published[name]["stringData"])) == ["ca.crt", "tls.crt", "tls.key"]
        certificate = mocks.resources["libvirt-certificate-n0"].inputs
        assert (certificate["common_name"], certificate["organization"], certificate["dns_names"],
                certificate["ip_addresses"]) == ("n0", "rootca-libvirt", ["n0"], ["192.0.2.10"])
        assert "libvirt-certificate-n1" not in mocks.resources

    return _all_runs(sets).apply(check)


@pulumi.runtime.test
def test_without_a_password_the_stack_generates_one(mocks: RecordingMocks, tmp_path: Any) -> pulumi.Output[Any]:
    sets = _two_node_sets(tmp_path)

    def check(_: Any) -> None:
        generated = "generated-libvirt-password"
        published = {i["metadata"]["name"]: i for i in mocks.of_type(SECRET).values()}
        assert revealed(published["libvirt-secret"]["stringData"]) == {"LibvirtPassword": generated}
        assert revealed(mocks.of_type(PLAYBOOK_RUN)["n0-libvirt"]["files"])["LibvirtPassword"] == generated

    return _all_runs(sets).apply(check)


# --- files extraMounts give EDPM nodes ---------------------------------------------------

CEPHX_KEY = "AQBvLr9mAAAAABAAe2tq0f0fJ1gS8+q1bq4ZlA=="
FSID = "6a1b2c3d-0000-4000-8000-000000000001"
KEYRING = f"[client.openstack]\n\tkey = {CEPHX_KEY}\n"
CEPH_FILES = {"ceph.conf": f"[global]\nfsid = {FSID}\n", "ceph.client.openstack.keyring": KEYRING}
READ_DATA = {
    "kubernetes:core/v1:Secret": {"data": {k: base64.b64encode(v.encode()).decode() for k, v in CEPH_FILES.items()}},
    "kubernetes:core/v1:ConfigMap": {"data": {"03-ceph-nova.conf": "[libvirt]\nimages_type = rbd\n"}},
}


class ReadingMocks(RecordingMocks):
    """RecordingMocks whose cluster holds a Ceph Secret and a ceph-nova ConfigMap."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: dict[str, pulumi.runtime.MockResourceArgs] = {}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        if args.resource_id:
            self.reads[args.resource_id] = args
            return args.resource_id, {**READ_DATA[args.typ], "metadata": {"name": args.resource_id}}
        return super().new_resource(args)


@pytest.fixture()
def reading_mocks() -> Iterator[ReadingMocks]:
    recorder = ReadingMocks()
    pulumi.runtime.set_mocks(recorder, project="openstack-nova", stack="unit", preview=False)
    yield recorder


def _node_sets_with_ceph(tmp_path: Any) -> list[Any]:
    """Node sets ceph (n0) and plain (n1); only ceph gets the Ceph files and 03-ceph-nova.conf."""
    from components.edpm.context import ControlPlaneFiles

    key = tmp_path / "id"
    key.write_text("key\n")

    def node_set(node: str, address: str) -> dict[str, Any]:
        return {"cell": "cell1", "nodes": {node: {"ansibleHost": address}},
                "nodeTemplate": {"ansibleSSHPrivateKeyFile": str(key), "knownHostsFile": KNOWN_HOSTS}}

    raw = {"kubernetes": {"skipAwait": True}, "nova": {"metadataServiceTemplate": LOAD_BALANCER},
           "dataplane": {"ovn": {"sbConnection": "tcp:10.0.0.5:6642"}, "migrationSSHKey": MIGRATION_KEY,
                         "nodeSets": {"ceph": node_set("n0", "192.0.2.10"), "plain": node_set("n1", "192.0.2.11")}},
           "extraMounts": [{"propagation": ["ceph"],
                            "volumes": [{"name": "ceph", "secret": {"secretName": "ceph-conf-files"}},
                                        {"name": "nova", "configMap": {"name": "ceph-nova"}}],
                            "mounts": [{"name": "ceph", "mountPath": "/etc/ceph"},
                                       {"name": "nova", "mountPath": "/var/lib/openstack/configs/nova"}]}]}
    s = load(raw, secret_keys=["dataplane"], catalog=None)
    empty = pulumi.Output.from_input({"01-nova.conf": ""})
    files = ControlPlaneFiles(compute_configs={"cell1": empty}, metadata_configs={None: empty})
    return _edpm_node_sets(s, files)


@pulumi.runtime.test
def test_mounted_files_reach_the_runs_of_their_node_set_only(reading_mocks: ReadingMocks,
                                                             tmp_path: Any) -> pulumi.Output[Any]:
    from components.render import ceph_secret_files, ceph_secrets

    sets = _node_sets_with_ceph(tmp_path)
    assert [list(runs) for ns in sets for runs in ns.runs.values()] == [
        ["marker", "ssh-known-hosts", "ceph-client", "neutron-metadata", "libvirt", "nova"],
        ["marker", "ssh-known-hosts", "neutron-metadata", "libvirt", "nova"]]

    def check(_: Any) -> None:
        # each object is read once, from the stack's namespace, its data kept secret
        assert set(reading_mocks.reads) == {"openstack/ceph-conf-files", "openstack/ceph-nova"}
        runs = reading_mocks.of_type(PLAYBOOK_RUN)
        ceph = runs["n0-ceph-client"]
        assert (ceph["playbook"], ceph["stop_playbook"]) == ("ceph-client.yml", "ceph-client-stop.yml")
        assert SECRET_SIG in ceph["files"]
        assert revealed(ceph["files"]) == CEPH_FILES
        nova = runs["n0-nova"]
        # the ConfigMap's snippet is shown in preview; nova restarts when the Ceph files change
        assert nova["public_files"]["03-ceph-nova.conf"] == "[libvirt]\nimages_type = rbd\n"
        assert "edpm_nova_secret_files" not in nova["vars"]  # no Secret gives nova files
        assert len(nova["vars"]["edpm_nova_ceph_files_hash"]) == 64
        plain = runs["n1-nova"]
        assert "03-ceph-nova.conf" not in plain["public_files"] and "edpm_nova_ceph_files_hash" not in plain["vars"]
        assert "n1-ceph-client" not in runs
        # libvirt keeps the cluster's key: its definition shown in preview, the key secret
        libvirt = runs["n0-libvirt"]
        assert libvirt["public_files"][f"secret-{FSID}.xml"] == ceph_secret_files(ceph_secrets(CEPH_FILES))[0][
            f"secret-{FSID}.xml"]
        assert revealed(libvirt["files"])[f"secret-{FSID}.base64"] == CEPHX_KEY
        assert CEPHX_KEY not in json.dumps(libvirt["public_files"])
        assert not [f for f in [*runs["n1-libvirt"]["public_files"], *revealed(runs["n1-libvirt"]["files"])]
                    if f.startswith("secret-")]

    return _all_runs(sets).apply(check)


@pulumi.runtime.test
def test_each_node_gets_the_agents_files_and_image(mocks: RecordingMocks, tmp_path: Any) -> pulumi.Output[Any]:
    own = "registry.example/neutron-metadata-agent:node"
    sets = _two_node_sets(tmp_path, n1_vars={"edpm_neutron_metadata_agent_image": own})
    default = "quay.io/podified-antelope-centos9/openstack-neutron-metadata-agent-ovn:current-podified"

    def check(_: Any) -> None:
        runs = mocks.of_type(PLAYBOOK_RUN)
        for node, image in (("n0", default), ("n1", own)):
            run = runs[f"{node}-neutron-metadata"]
            assert (run["playbook"], run["stop_playbook"]) == ("neutron-metadata.yml", "neutron-metadata-stop.yml")
            # shown in preview: everything but nova's shared secret
            assert sorted(run["public_files"]) == [
                "01-neutron-ovn-metadata-agent.conf", "01-rootwrap.conf", "10-neutron-metadata.conf",
                "haproxy-kill", "ovn_metadata_agent.json", "ovn_metadata_haproxy_wrapper"]
            assert run["public_files"]["10-neutron-metadata.conf"] == "[ovn]\novn_sb_connection = tcp:10.0.0.5:6642\n"
            assert SECRET_SIG in run["files"] and list(revealed(run["files"])) == ["05-nova-metadata.conf"]
            # the image the Quadlet unit runs (upstream's inventory variable, unless ansibleVars set it) is
            # also the one the haproxy wrapper starts each network's haproxy from
            assert run["host_vars"] == {"edpm_neutron_metadata_agent_image": image}
            assert f"\nimage={image}\n" in run["public_files"]["ovn_metadata_haproxy_wrapper"]

    return _all_runs(sets).apply(check)



@pulumi.runtime.test
def test_the_stacks_images_reach_the_nodes_unless_their_ansible_vars_name_others(
        mocks: RecordingMocks, tmp_path: Any) -> pulumi.Output[Any]:
    """images.compute and images.neutronMetadataAgent become the role variables of each node's runs (upstream's
    inventory variables: a node's ansibleVars win); the stop playbooks run with the same variables."""
    compute, agent = "registry.example/nova-compute:stack", "registry.example/neutron-metadata-agent:stack"
    own = "registry.example/nova-compute:node"
    sets = _two_node_sets(tmp_path, n1_vars={"edpm_nova_compute_image": own},
                          images={"compute": compute, "neutronMetadataAgent": agent, "novaRelease": "34.0.0"})

    def check(_: Any) -> None:
        runs = mocks.of_type(PLAYBOOK_RUN)
        assert runs["n0-nova"]["host_vars"] == {"edpm_nova_compute_image": compute}
        assert runs["n1-nova"]["host_vars"] == {"edpm_nova_compute_image": own}
        assert (runs["n0-nova"]["stop_playbook"], runs["n1-nova"]["stop_playbook"]) == ("nova-stop.yml",) * 2
        for node in ("n0", "n1"):
            run = runs[f"{node}-neutron-metadata"]
            assert run["host_vars"]["edpm_neutron_metadata_agent_image"] == agent
            assert f"\nimage={agent}\n" in run["public_files"]["ovn_metadata_haproxy_wrapper"]
        # the stack's images are variables of their own service's runs only (a node's ansibleVars go to all)
        assert runs["n0-neutron-metadata"]["host_vars"] == {"edpm_neutron_metadata_agent_image": agent}
        assert runs["n0-libvirt"]["host_vars"] == {}

    return _all_runs(sets).apply(check)


@pulumi.runtime.test
def test_each_run_trusts_its_nodes_keys_and_knows_its_urn(mocks: RecordingMocks, tmp_path: Any) -> pulumi.Output[Any]:
    """A run accepts only its node's keys from the node set's file; its delete names its URN."""
    sets = _two_node_sets(tmp_path)
    keys = {line.split()[0]: line.split(None, 1)[1] for line in Path(KNOWN_HOSTS).read_text().splitlines()}
    urns = pulumi.Output.all(**{f"{node}-{service}": run.urn for ns in sets
                                for node, node_runs in ns.runs.items() for service, run in node_runs.items()})

    def check(real: dict[str, str]) -> None:
        inputs = mocks.of_type(PLAYBOOK_RUN)
        for name, urn in real.items():
            node_set, address = ("fast", "192.0.2.10") if name.startswith("n0-") else ("default", "192.0.2.11")
            # the mocks name stack and project their own way: the types and the name are what count
            assert inputs[name]["state_urn"].split("::", 2)[2] == urn.split("::", 2)[2], name
            assert inputs[name]["known_hosts"] == f"{address} {keys[address]}\n", name
            assert (inputs[name]["known_hosts_file"], inputs[name]["node_set"]) == (KNOWN_HOSTS, node_set)
        assert inputs["n1-nova"]["state_urn"] == (
            "urn:pulumi:unit::openstack-nova::openstack-nova:dataplane:EdpmNodeSet"
            "$pulumi-python:dynamic/ansible:PlaybookRun::n1-nova")

    return urns.apply(check)
def test_a_mounted_file_never_replaces_one_of_novas_own() -> None:
    from components.edpm.services.nova import _not_taken

    assert _not_taken({"03-ceph-nova.conf": "x"}, {"01-nova.conf"}) == {"03-ceph-nova.conf": "x"}
    with pytest.raises(pulumi.RunError, match=r"extraMounts give nova 01-nova\.conf, which the program makes itself"):
        _not_taken({"01-nova.conf": "x"}, {"01-nova.conf", "ssh-privatekey"})
