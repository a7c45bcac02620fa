"""The CI job's example stack (stacks/Pulumi.ci-live-migration.yaml) on the test nodes: both
computes in one cell, configured as a non-root user with sudo, with the job's
`cpu_mode = custom` / `cpu_models = Nehalem` snippet, which must reach the running
nova-compute and the guests' CPU, and a server that live-migrates between the two
computes and back. The stack is a second control plane (namespace openstack-lm) on
the same nodes, brought up once for this module; in `make test`, so in CI: the proof of
what the project is for (8 min 35 s of the suite at ecdb2a0, the dev stack applied again
included)."""

from __future__ import annotations

from typing import Any

from tests.integration.local_env import node, openstack
from tests.integration.nova_compute import compute_services, eventually, in_compute, option_dump
from tests.integration.test_dataplane import NODES, nova_conf, stat
from tests.integration.test_servers import MICROVERSION, Servers, guests, servers
from tools.nova_catalog import NAMESPACES
from tools.server_cpu import ServerCpu, show

__all__ = ["servers"]  # the fixture, shared with test_servers


# Registered by keystoneauth when nova starts, so absent from every sample config.
RUNTIME_OPTIONS = {"oslo_limit/auth_type"}


def _validator_errors(name: str, conf: str, namespaces: list[str]) -> tuple[int, set[str]]:
    args = " ".join(f"--namespace {n}" for n in namespaces)
    # nova's own validator, in the node's nova_compute container
    proc = node(name, f"podman exec nova_compute python3 -m oslo_config.validator {args} --input-file {conf}")
    errors = {ln.split(":", 2)[2].split(" ", 1)[0] for ln in proc.stderr.splitlines() if ln.startswith("ERROR:")}
    return proc.returncode, errors


def test_ci_stack_configures_its_nodes_as_a_non_root_user_with_sudo(ci_stack: str) -> None:
    for name in NODES:
        log = node(name, "journalctl --no-pager -o cat -u ssh.service").stdout
        assert "Accepted publickey for cloud-admin from 192.168.122.1" in log, name
        # what it wrote as root through sudo
        assert stat(name, "/var/lib/openstack/nova/01-nova.conf")["01-nova.conf"] == "600 root"
        assert node(name, "stat -c %U /etc/libvirt/qemu.conf").stdout.strip() == "root"


def test_ci_live_migration_snippet_reaches_nova_compute_on_both_nodes(ci_stack: str) -> None:
    for name in NODES:
        # what the running nova-compute itself reports in its start-up option dump
        dumped = eventually(lambda: option_dump(name, "libvirt.cpu_mode"), bool)  # noqa: B023
        assert dumped == ["custom"], (name, dumped)
        assert option_dump(name, "libvirt.cpu_models") == ["['Nehalem']"], name
        # a compute restarted by this run reports "up" at its first heartbeat
        state = eventually(lambda: compute_services("openstack-lm").get(name, {}).get("State"),  # noqa: B023
                           lambda s: s == "up")
        assert state == "up", name


def test_ci_live_migration_snippet_is_loaded_on_both_nodes(ci_stack: str) -> None:
    for name in NODES:
        loaded = in_compute(name, "ls /etc/nova/nova.conf.d").stdout.split()
        assert "25-nova-extra.conf" in loaded
        assert nova_conf(name, "libvirt.cpu_mode") == "'custom'"
        assert nova_conf(name, "libvirt.cpu_models") == "['Nehalem']"
        for conf in loaded:
            path = f"/etc/nova/nova.conf.d/{conf}"
            if conf == "01-nova.conf":
                # the generated file also sets oslo.log, oslo.messaging, ... options: nova's full list
                code, errors = _validator_errors(name, path, [n for n in NAMESPACES if n != "osprofiler"])
                assert errors <= RUNTIME_OPTIONS, (name, conf, errors)
            else:
                code, errors = _validator_errors(name, path, ["nova.conf"])
                assert (code, errors) == (0, set()), (name, conf, errors)


def _migrate(server: dict[str, Any], to: str, namespace: str) -> ServerCpu:
    openstack(
        "--os-compute-api-version",
        MICROVERSION,
        "server",
        "migrate",
        "--live-migration",
        "--host",
        to,
        "--wait",
        server["id"],
        namespace=namespace,
        want_json=False,
    )
    shown = openstack("server", "show", server["id"], namespace=namespace)
    assert (shown["status"], shown["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", to), shown
    return show(server["id"], namespace)


def test_live_migration_both_ways_with_the_ci_jobs_cpu_model(ci_stack: str, servers: Servers) -> None:
    namespace = "openstack-lm"
    server = servers.boot(NODES[0], namespace)
    cpu = show(server["id"], namespace)
    # the journey's end: the CI job's snippet, as the hypervisor runs the guest
    assert (cpu.host, cpu.mode, cpu.model) == (NODES[0], "custom", "Nehalem"), cpu
    since = node(NODES[1], "date +%s").stdout.strip()
    there = _migrate(server, NODES[1], namespace)
    assert (there.host, there.state) == (NODES[1], "running"), there
    assert server["id"] not in guests(NODES[0])
    assert (there.mode, there.model) == ("custom", "Nehalem"), there
    # qemu+ssh, as the program configures it: the source's nova logged in to the destination as nova
    log = node(NODES[1], f"journalctl --no-pager -o cat -u ssh.service --since @{since}").stdout
    assert "Accepted publickey for nova from 192.168.122.100" in log, log[-2000:]
    back = _migrate(server, NODES[0], namespace)
    assert (back.host, back.state) == (NODES[0], "running"), back
    assert server["id"] not in guests(NODES[1])
