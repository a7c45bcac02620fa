"""OVN's central databases, a neighbour of the local environment: an ovsdb-server each behind
ovn-operator's Service names, reached from another pod by their whole cluster names (as neutron
and ovn-northd reach them), and the southbound one from the test nodes at what the stack config
names, as ovn-controller (C, libunbound) and the metadata agent (python's ovs) reach it."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.integration.local_env import NODES, ROOT, node, run

NB, SB = "ovsdbserver-nb", "ovsdbserver-sb"
# How the metadata agent connects (ovsdbapp over python's ovs): list the server's databases.
AGENT_CONNECT = """
import json, os, sys, warnings
warnings.simplefilter("ignore")
import ovs.jsonrpc, ovs.stream
error, stream = ovs.stream.Stream.open_block(ovs.stream.Stream.open(sys.argv[1]), 30000)
if error:
    sys.exit(f"cannot connect to {sys.argv[1]}: {os.strerror(error)}")
request = ovs.jsonrpc.Message.create_request("list_dbs", [])
error, reply = ovs.jsonrpc.Connection(stream).transact_block(request)
print(json.dumps(reply.result))
"""


def from_other_pod(namespace: str, server: str, *command: str) -> str:
    """A command in the other database's pod (its image has OVN's clients): through the
    Services, from outside the server's own pod."""
    pod = f"{SB if server == NB else NB}-0"
    return run("kubectl", "exec", "-n", namespace, pod, "--", *command).stdout


def fqdn(service: str, namespace: str, port: int) -> str:
    return f"tcp:{service}.{namespace}.svc.cluster.local:{port}"


@pytest.mark.parametrize(("service", "port", "database"), [
    (NB, 6641, "OVN_Northbound"),
    (SB, 6642, "OVN_Southbound"),
])
def test_each_database_answers_at_its_service(dev_neighbours: str, service: str, port: int, database: str) -> None:
    target = fqdn(service, dev_neighbours, port)
    listed = from_other_pod(dev_neighbours, service, "ovsdb-client", "--timeout=30", "list-dbs", target)
    assert set(listed.split()) == {database, "_Server"}
    by_agent = from_other_pod(dev_neighbours, service, "python3", "-c", AGENT_CONNECT, target)
    assert set(json.loads(by_agent.strip().splitlines()[-1])) == {database, "_Server"}


def test_the_dev_stacks_southbound_connection_reaches_the_southbound_database_from_the_nodes(
        dev_neighbours: str) -> None:
    """The stack's connection is the nodes': its name resolves through the node's resolver (the
    data plane's DNS) to the database's LoadBalancer address, with libunbound as ovn-controller
    resolves it (the metadata agent's python ovs resolves so too, through python3-unbound)."""
    config = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())["config"]
    connection = config["openstack-nova:dataplane"]["ovn"]["sbConnection"]
    assert connection == f"tcp:{SB}.{dev_neighbours}.svc:6642"
    for name in NODES:
        listed = node(name, f"ovsdb-client --timeout=30 list-dbs {connection}")
        assert set(listed.stdout.split()) == {"OVN_Southbound", "_Server"}, (name, listed.stderr)


def test_the_southbound_database_keeps_what_a_node_registers(dev_neighbours: str) -> None:
    """What ovn-controller and the metadata agent write: a chassis, found again, then removed."""
    sbctl = ("ovn-sbctl", f"--db={fqdn(SB, dev_neighbours, 6642)}", "--timeout=30")
    chassis = "integration-test-chassis"

    def names() -> list[str]:
        return from_other_pod(dev_neighbours, SB, *sbctl, "--bare", "--columns=name", "find", "Chassis",
                              f"name={chassis}").split()

    from_other_pod(dev_neighbours, SB, *sbctl, "--may-exist", "chassis-add", chassis, "geneve", "192.0.2.10")
    try:
        assert names() == [chassis]
    finally:
        from_other_pod(dev_neighbours, SB, *sbctl, "--if-exists", "chassis-del", chassis)
    assert names() == []
