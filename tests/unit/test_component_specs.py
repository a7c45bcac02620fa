"""Each control-plane component is built from its own spec: nova's and the cell's settings, the
images, where its objects go and the credentials handed to it, with no stack config and no
`Settings` (as nova-operator deploys a nova service on its own, its database and bus handed over)."""

from __future__ import annotations

import dataclasses
import importlib
import json
import typing
from collections.abc import Iterator
from typing import Any

import pulumi
import pytest

from components.render import Credentials
from components.settings import Cell, Database, Images, Keystone, MessageBus, Nova, ServiceTemplate
from components.settings.model import DBPurge
from components.settings.releases import DEFAULT_IMAGES_RELEASE, RELEASES
from tests.unit.test_components import SECRET_SIG, RecordingMocks, revealed

NAMESPACE = "nova-test"
CELL1_BUS = "rabbit://nova-cell1:bus-pw@rabbitmq-cell1.nova-test.svc:5672/%2F?ssl=0"
IMAGES = Images(api="api:1", scheduler="scheduler:1", conductor="conductor:1", metadata="metadata:1",
                novncproxy="novncproxy:1", compute="compute:1", neutron_metadata_agent="agent:1",
                release=RELEASES[DEFAULT_IMAGES_RELEASE])
KEYSTONE = Keystone(internal_url="http://keystone-internal.nova-test.svc:5000",
                    public_url="http://keystone-public.nova-test.svc:5000", region="regionTwo",
                    service_user="nova", password=None)


def _template(replicas: int = 1, enabled: bool = True) -> ServiceTemplate:
    return ServiceTemplate(replicas=replicas, custom_service_config="", node_selector=None, enabled=enabled)


def _cell(name: str, conductors: int = 1) -> Cell:
    return Cell(
        name=name, database=Database(f"openstack-{name}", f"nova_{name}", None),
        messaging_bus=MessageBus(f"rabbitmq-{name}", f"nova-{name}", "/", 5672, None),
        has_api_access=True, conductor=_template(conductors), metadata=_template(enabled=False),
        novncproxy=_template(enabled=name != "cell0"), db_purge=DBPurge("1 0 * * *", 30, 90),
    )


NOVA = Nova(
    keystone=KEYSTONE, api_database=Database("openstack", "nova_api", None),
    messaging_bus=MessageBus("rabbitmq", "nova-api", "/", 5672, None), notifications_bus=None, api_timeout=60,
    memcached_instance="memcached", metadata_shared_secret=None, api=_template(), scheduler=_template(2),
    metadata=_template(), cells=(_cell("cell0"), _cell("cell1", conductors=3)),
)


def _credentials() -> pulumi.Output[Credentials]:
    return pulumi.Output.secret(Credentials(
        keystone_password="ks-pw", api_db_password="api-db-pw", cell_db_passwords={"cell1": "cell1-db-pw"},
        api_transport_url="rabbit://nova-api:api-pw@rabbitmq.nova-test.svc:5672/%2F?ssl=0",
        cell_transport_urls={"cell1": CELL1_BUS}, metadata_shared_secret="shared"))


@pytest.fixture()
def mocks() -> Iterator[RecordingMocks]:
    recorder = RecordingMocks()
    pulumi.runtime.set_mocks(recorder, project="openstack-nova", stack="unit", preview=False)
    yield recorder


def _made(mocks: RecordingMocks) -> dict[tuple[str, str], dict[str, Any]]:
    """(type, object name) -> inputs of every Kubernetes object made."""
    return {(a.typ.rsplit(":", 1)[-1], a.inputs["metadata"]["name"]): a.inputs
            for a in mocks.resources.values() if a.typ.startswith("kubernetes:")}


def _pod(inputs: dict[str, Any]) -> dict[str, Any]:
    spec = inputs["spec"]
    template = spec["jobTemplate"]["spec"]["template"] if "jobTemplate" in spec else spec["template"]
    return dict(template["spec"])


@pulumi.runtime.test
def test_a_cell_is_built_from_its_spec_alone(mocks: RecordingMocks) -> pulumi.Output[Any]:
    from components.cell import CellSpec, NovaCell

    spec = CellSpec(cell=NOVA.cell("cell1"), nova=NOVA, images=IMAGES, namespace=NAMESPACE,
                    credentials=_credentials(), superconductor_config="nova-cell0-conductor", skip_await=True)
    cell = NovaCell("cell1", spec)
    discover = cell.discover_hosts(["compute-0"], depends_on=[])
    assert cell.metadata is None and cell.metadata_neutron_config is None and cell.novncproxy is not None
    workloads = [(w.config_secret, w.statefulset, *w.services) for w in (cell.conductor, cell.novncproxy)]
    # the checks run once every object is registered
    urns = [r.urn for r in (cell.db_sync, cell.cell_mapping, cell.db_purge, discover, *cell.secrets,
                            *(r for w in workloads for r in w))]
    assert cell.compute_config is not None
    compute_config = cell.compute_config

    def check(args: list[Any]) -> None:
        made = _made(mocks)
        assert set(made) == {
            ("Secret", "nova-cell1-conductor-config-data"), ("StatefulSet", "nova-cell1-conductor"),
            ("Secret", "nova-cell1-novncproxy-config-data"), ("StatefulSet", "nova-cell1-novncproxy"),
            ("Service", "nova-novncproxy-cell1-public"), ("Secret", "nova-cell1-compute-config"),
            ("Job", "nova-cell1-conductor-db-sync"), ("Job", "nova-cell1-cell-mapping"),
            ("CronJob", "nova-cell1-db-purge"), ("Job", "nova-cell1-host-discover"),
        }
        for inputs in made.values():
            assert inputs["metadata"]["namespace"] == NAMESPACE
            assert inputs["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
        conductor = made[("StatefulSet", "nova-cell1-conductor")]
        assert conductor["spec"]["replicas"] == 3
        assert _pod(conductor)["containers"][0]["image"] == "conductor:1"
        assert _pod(made[("StatefulSet", "nova-cell1-novncproxy")])["containers"][0]["image"] == "novncproxy:1"
        for kind, job in (("Job", "nova-cell1-conductor-db-sync"), ("Job", "nova-cell1-cell-mapping"),
                          ("CronJob", "nova-cell1-db-purge"), ("Job", "nova-cell1-host-discover")):
            assert _pod(made[(kind, job)])["containers"][0]["image"] == "conductor:1", job
        # the mapping reads the API database from the superconductor's config, then the cell's own
        sources = _pod(made[("Job", "nova-cell1-cell-mapping")])["volumes"][0]["projected"]["sources"]
        assert [s["secret"]["name"] for s in sources] == [
            "nova-cell0-conductor-config-data", "nova-cell1-conductor-config-data"]
        assert made[("CronJob", "nova-cell1-db-purge")]["spec"]["schedule"] == "1 0 * * *"
        # the credentials handed over are in the config Secrets, and only there in clear
        conf = revealed(made[("Secret", "nova-cell1-conductor-config-data")]["stringData"])["01-nova.conf"]
        assert CELL1_BUS in conf and "cell1-db-pw" in conf and "api-db-pw" in conf
        assert SECRET_SIG in made[("Secret", "nova-cell1-compute-config")]["stringData"]
        compute = args[-1]
        assert CELL1_BUS in compute["01-nova.conf"] and compute["rabbitmq_user_name"] == "nova-cell1"

    return pulumi.Output.all(*urns, compute_config).apply(check)


@pulumi.runtime.test
def test_the_keystone_registration_is_built_from_its_spec_alone(mocks: RecordingMocks) -> pulumi.Output[Any]:
    from components.keystone import KeystoneServiceSpec, NovaKeystoneService

    spec = KeystoneServiceSpec(keystone=KEYSTONE, namespace=NAMESPACE, image="api:1",
                               password=pulumi.Output.secret("ks-pw"))
    keystone = NovaKeystoneService("keystone", spec)

    def check(_: Any) -> None:
        made = _made(mocks)
        assert set(made) == {("Secret", "nova-keystone-registration-config"), ("Job", "nova-keystone-registration")}
        secret = made[("Secret", "nova-keystone-registration-config")]
        assert secret["metadata"]["namespace"] == NAMESPACE and SECRET_SIG in secret["stringData"]
        files = revealed(secret["stringData"])
        assert json.loads(files["keystone-registration.json"]) == {
            "name": "nova", "type": "compute", "description": "Nova Compute Service", "region": "regionTwo",
            "endpoints": {"public": "http://nova-public.nova-test.svc:8774/v2.1",
                          "internal": "http://nova-internal.nova-test.svc:8774/v2.1"},
        }
        assert "ks-pw" in files["clouds.yaml"] and "keystone-internal.nova-test.svc" in files["clouds.yaml"]
        job = made[("Job", "nova-keystone-registration")]
        assert job["metadata"]["namespace"] == NAMESPACE
        assert "pulumi.com/skipAwait" not in job["metadata"]["annotations"]
        assert _pod(job)["containers"][0]["image"] == "api:1"
        assert _pod(job)["volumes"][0]["secret"]["secretName"] == "nova-keystone-registration-config"

    return pulumi.Output.all(keystone.config_secret.urn, keystone.job.urn).apply(check)


@pulumi.runtime.test
def test_the_service_cleanup_is_built_from_its_spec_alone(mocks: RecordingMocks) -> pulumi.Output[Any]:
    from components.cleanup import NovaServiceCleanup, ServiceCleanupSpec

    spec = ServiceCleanupSpec(nova=NOVA, namespace=NAMESPACE, image="api:1", password=pulumi.Output.secret("pw"))
    cleanup = NovaServiceCleanup("cleanup", spec, after=[])

    def check(_: Any) -> None:
        made = _made(mocks)
        assert set(made) == {("Secret", "nova-service-cleanup-config"), ("Job", "nova-service-cleanup")}
        plan = json.loads(revealed(made[("Secret", "nova-service-cleanup-config")]["stringData"])[
            "nova-service-cleanup.json"])
        assert plan["binaries"]["nova-scheduler"]["statefulsets"] == {"nova-scheduler": 2}
        assert plan["binaries"]["nova-conductor"]["statefulsets"] == {
            "nova-cell0-conductor": 1, "nova-cell1-conductor": 3}
        assert _pod(made[("Job", "nova-service-cleanup")])["containers"][0]["image"] == "api:1"

    return pulumi.Output.all(cleanup.config_secret.urn, cleanup.job.urn).apply(check)


def _named(hint: Any) -> Iterator[str]:
    """The names of the types `hint` is made of, through the fields of a spec (a dataclass)."""
    yield getattr(hint, "__name__", str(hint))
    for arg in typing.get_args(hint):
        yield from _named(arg)
    if dataclasses.is_dataclass(hint):
        for field_hint in typing.get_type_hints(hint).values():
            yield from _named(field_hint)


@pytest.mark.parametrize("component", [
    "components.cell:NovaCell", "components.keystone:NovaKeystoneService",
    "components.cleanup:NovaServiceCleanup", "components.controlplane:NovaControlPlane",
])
def test_no_control_plane_component_takes_the_stacks_settings(component: str) -> None:
    module, name = component.split(":")
    hints = typing.get_type_hints(getattr(importlib.import_module(module), name).__init__)
    taken = {n for hint in hints.values() for n in _named(hint)}
    assert {"Settings", "Dataplane"} & taken == set()
    assert "bool" in taken  # skip_await: the walk reaches the spec's fields
