"""In which order `pulumi up` creates things: the whole program (`__main__.py`) under Pulumi mocks
with the dev stack's config (three cells, a node in cell1 and one in cell2) and libvirt's TLS, each
order stated as what must exist (or have run) before what. The orders follow nova-operator's and the
data plane's: see README, "Order"."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests.unit.engine import EngineMonitor, name_of
from tests.unit.test_components import PLAYBOOK_RUN, RecordingMocks
from tests.unit.test_rotation import _dev_config, run_main

NAMESPACE = "kubernetes:core/v1:Namespace"
SECRET = "kubernetes:core/v1:Secret"
SERVICE = "kubernetes:core/v1:Service"
STATEFULSET = "kubernetes:apps/v1:StatefulSet"
JOB = "kubernetes:batch/v1:Job"
CRONJOB = "kubernetes:batch/v1:CronJob"
RUN = PLAYBOOK_RUN
CELLS = ("cell0", "cell1", "cell2")
NODE_CELLS = {"edpm-compute-0": "cell1", "edpm-compute-1": "cell2"}
# a node's services as the dev stack lists them (upstream's default list), after the node's marker
NODE_SERVICES = ("marker", "ssh-known-hosts", "neutron-metadata", "libvirt", "nova")


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> EngineMonitor:
    config = _dev_config(Path(tmp_path_factory.mktemp("dev")))
    config["dataplane"]["nodeSets"]["edpm-compute"]["tlsEnabled"] = True
    mocks = RecordingMocks()
    monitor = EngineMonitor(mocks)
    run_main(config, mocks, monitor)
    return monitor


def test_every_object_of_the_stack_is_created_in_its_namespace_after_it(program: EngineMonitor) -> None:
    namespace = program.one(NAMESPACE, "openstack")
    objects = [r for r in program.registered.values()
               if r.custom and r.type.startswith("kubernetes:") and r.type != NAMESPACE]
    # the control plane's, the migration key's and libvirt's (its password, CA and node certificates)
    assert {"nova-migration-ssh-key", "libvirt-secret", "rootca-libvirt", "cert-libvirt-default-edpm-compute-0",
            "nova-api-config-data", "nova-cell1-conductor-db-sync"} <= {name_of(r) for r in objects}
    assert [f"{r.type} {name_of(r)}" for r in objects if not program.waits_for(r, namespace)] == []


@pytest.mark.parametrize("cell", CELLS)
def test_a_cells_schema_is_migrated_before_its_conductor_starts_and_it_is_mapped(program: EngineMonitor,
                                                                                cell: str) -> None:
    db_sync = program.one(JOB, f"nova-{cell}-conductor-db-sync")
    # the Job mounts the conductor's config Secret
    assert program.waits_for(db_sync, program.one(SECRET, f"nova-{cell}-conductor-config-data"))
    for later in (program.one(STATEFULSET, f"nova-{cell}-conductor"), program.one(JOB, f"nova-{cell}-cell-mapping"),
                  program.one(CRONJOB, f"nova-{cell}-db-purge")):
        assert program.waits_for(later, db_sync), name_of(later)


def test_cells_with_api_access_are_synced_once_cell0_is_mapped(program: EngineMonitor) -> None:
    cell0_mapping = program.one(JOB, "nova-cell0-cell-mapping")
    for cell in ("cell1", "cell2"):
        assert program.waits_for(program.one(JOB, f"nova-{cell}-conductor-db-sync"), cell0_mapping), cell
    assert not program.waits_for(program.one(JOB, "nova-cell0-conductor-db-sync"),
                                 program.one(JOB, "nova-cell1-cell-mapping"))


@pytest.mark.parametrize("service", ["nova-api", "nova-scheduler", "nova-metadata"])
def test_top_level_services_start_once_every_cell_is_mapped(program: EngineMonitor, service: str) -> None:
    statefulset = program.one(STATEFULSET, service)
    assert [c for c in CELLS if not program.waits_for(statefulset, program.one(JOB, f"nova-{c}-cell-mapping"))] == []


def test_every_service_starts_after_its_config_secret(program: EngineMonitor) -> None:
    statefulsets = program.of_type(STATEFULSET)
    assert len(statefulsets) == 8  # api, scheduler, metadata; a conductor per cell; cell1's and cell2's novncproxy
    for name, statefulset in statefulsets.items():
        assert program.waits_for(statefulset, program.one(SECRET, f"{name}-config-data")), name


def test_a_cells_host_discovery_runs_once_its_computes_are_deployed(program: EngineMonitor) -> None:
    discoveries = program.of_type(JOB)
    assert {n for n in discoveries if n.endswith("-host-discover")} == {"nova-cell1-host-discover",
                                                                         "nova-cell2-host-discover"}
    for node, cell in NODE_CELLS.items():
        for other in ("cell1", "cell2"):
            waits = program.waits_for(discoveries[f"nova-{other}-host-discover"], program.one(RUN, f"{node}-nova"))
            # its own cell's computes only: the other cell's discovery does not wait for them
            assert waits is (other == cell), (node, other)


@pytest.mark.parametrize("node", sorted(NODE_CELLS))
def test_a_nodes_services_run_one_after_another_marker_first(program: EngineMonitor, node: str) -> None:
    runs = [program.one(RUN, f"{node}-{service}") for service in NODE_SERVICES]
    for earlier, later in itertools.pairwise(runs):
        assert program.waits_for(later, earlier), f"{name_of(later)} runs before {name_of(earlier)} has"
        assert not program.waits_for(earlier, later)


def test_the_service_cleanup_runs_after_every_rollout_and_once_the_api_is_in_the_catalog(
        program: EngineMonitor) -> None:
    cleanup = program.one(JOB, "nova-service-cleanup")
    before = [program.one(SECRET, "nova-service-cleanup-config"), program.one(JOB, "nova-keystone-registration"),
              *(program.one(STATEFULSET, n) for n in ("nova-api", "nova-scheduler",
                                                      *(f"nova-{c}-conductor" for c in CELLS))),
              program.one(SERVICE, "nova-internal"), program.one(SERVICE, "nova-public")]
    assert [f"{r.type} {name_of(r)}" for r in before if not program.waits_for(cleanup, r)] == []


def test_keystone_registration_runs_after_its_config_secret(program: EngineMonitor) -> None:
    assert program.waits_for(program.one(JOB, "nova-keystone-registration"),
                             program.one(SECRET, "nova-keystone-registration-config"))
