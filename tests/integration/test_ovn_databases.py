"""OVN's central databases, a neighbour of the local environment: an ovsdb-server each behind
ovn-operator's Service names, reached from a pod at what the stack config names."""

from __future__ import annotations

import pytest
import yaml

from tests.integration.local_env import ROOT, run


def in_client(namespace: str, *command: str) -> str:
    """A command in the openstackclient pod (the same image: it has OVN's clients)."""
    return run("kubectl", "exec", "-n", namespace, "deploy/openstackclient", "--", *command).stdout


@pytest.mark.parametrize(("service", "port", "database"), [
    ("ovsdbserver-nb", 6641, "OVN_Northbound"),
    ("ovsdbserver-sb", 6642, "OVN_Southbound"),
])
def test_each_database_answers_at_its_service(dev_neighbours: str, service: str, port: int, database: str) -> None:
    listed = in_client(dev_neighbours, "ovsdb-client", "--timeout=30", "list-dbs",
                       f"tcp:{service}.{dev_neighbours}.svc:{port}")
    assert set(listed.split()) == {database, "_Server"}


def test_the_dev_stacks_southbound_connection_reaches_the_southbound_database(dev_neighbours: str) -> None:
    config = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())["config"]
    connection = config["openstack-nova:dataplane"]["ovn"]["sbConnection"]
    listed = in_client(dev_neighbours, "ovsdb-client", "--timeout=30", "list-dbs", connection)
    assert "OVN_Southbound" in listed.split()


def test_the_southbound_database_keeps_what_a_node_registers(dev_neighbours: str) -> None:
    """What ovn-controller and the metadata agent write: a chassis, found again, then removed."""
    db = f"--db=tcp:ovsdbserver-sb.{dev_neighbours}.svc:6642"
    chassis = "integration-test-chassis"
    in_client(dev_neighbours, "ovn-sbctl", db, "--timeout=30", "--may-exist", "chassis-add", chassis,
              "geneve", "192.0.2.10")
    try:
        found = in_client(dev_neighbours, "ovn-sbctl", db, "--timeout=30", "--bare", "--columns=name",
                          "find", "Chassis", f"name={chassis}")
        assert found.split() == [chassis]
    finally:
        in_client(dev_neighbours, "ovn-sbctl", db, "--timeout=30", "--if-exists", "chassis-del", chassis)
    gone = in_client(dev_neighbours, "ovn-sbctl", db, "--timeout=30", "--bare", "--columns=name",
                     "find", "Chassis", f"name={chassis}")
    assert gone.split() == []
