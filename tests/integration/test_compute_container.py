"""The compute container's pieces on the test nodes, as the edpm_nova role lays
them out: nova in the libvirt group, kolla's iscsiadm wrapper, the state
directory ownership step that runs before nova-compute starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.local_env import NODES, ROOT, node, up
from tests.integration.nova_compute import compute_process, eventually, in_compute
from tests.integration.stacks import Stack

NODE0_PATH = "dataplane.nodeSets.edpm-compute.nodes.edpm-compute-0"
NOVA_IDS, LIBVIRT_GID = "42436:42436", "42473"
WRAPPER = ROOT / "ansible" / "roles" / "edpm_nova" / "files" / "run-on-host"


def test_nova_compute_runs_in_the_libvirt_group_and_reaches_libvirt(dev_stack: str) -> None:
    for name in NODES:
        assert node(name, "getent group libvirt").stdout.strip() == f"libvirt:x:{LIBVIRT_GID}:nova"
        process = eventually(lambda: compute_process(name), bool)  # noqa: B023
        assert process is not None, name
        groups = node(name, f"grep ^Groups: /proc/{process[0]}/status").stdout.split()[1:]
        assert LIBVIRT_GID in groups, (name, groups)
        # as nova, through the node's libvirt socket the container mounts
        version = in_compute(name, "virsh -c qemu:///system version 2>&1 || python3 -c "
                             "'import libvirt; print(libvirt.open(\"qemu:///system\").getVersion())'")
        assert version.returncode == 0, (name, version.stdout)
    # the node's /etc is its own: the host's groups are as they were
    host_libvirt = [g for g in Path("/etc/group").read_text().splitlines() if g.startswith("libvirt:")]
    assert all("nova" not in g.split(":")[3] for g in host_libvirt)


def test_iscsiadm_is_the_run_on_host_wrapper_in_the_container_only(dev_stack: str) -> None:
    wrapper = WRAPPER.read_text()
    for name in NODES:
        assert in_compute(name, "stat -c '%a %U:%G' /usr/sbin/iscsiadm").stdout.strip() == "755 root:root", name
        assert in_compute(name, "cat /usr/sbin/iscsiadm").stdout == wrapper, name
        node_own = node(name, "cat /usr/sbin/iscsiadm 2>/dev/null").stdout
        assert node_own != wrapper, name


def _owners(name: str, *paths: str) -> dict[str, str]:
    out = node(name, "stat -c '%n %u:%g' " + " ".join(paths) + " 2>/dev/null").stdout
    return dict(line.split() for line in out.splitlines())


@pytest.mark.long
def test_the_ownership_step_moves_old_ids_and_leaves_compute_id(dev_copy: Stack) -> None:
    state = "/var/lib/nova"
    # nova's ids before an "upgrade": the marker and a disk carry them, as does compute_id
    prepare = (f"touch {state}/upgrade_marker {state}/instances/probe-disk && mkdir -p {state}/root-made "
               f"&& chown 4242:4242 {state}/upgrade_marker {state}/instances/probe-disk {state}/compute_id")
    assert node(NODES[0], prepare).returncode == 0
    try:
        # any change of node 0's nova files restarts its nova-compute, the ownership step first
        snippet = "[DEFAULT]\nreserved_host_memory_mb = 1024\n"
        dev_copy.cli("config", "set", "--path", f"{NODE0_PATH}.customServiceConfig.nova", snippet)
        result = up(dev_copy.name, cwd=dev_copy.project)
        assert sorted(n for op, _, n in result["steps"] if op == "update") == ["edpm-compute-0-nova"], result
        owners = _owners(NODES[0], f"{state}/instances/probe-disk", f"{state}/root-made", f"{state}/compute_id",
                         f"{state}/upgrade_marker")
        assert owners == {f"{state}/instances/probe-disk": NOVA_IDS, f"{state}/root-made": NOVA_IDS,
                          f"{state}/compute_id": "4242:4242"}  # skipped; the marker is gone
        # the node's identity is what it was: nova-compute found its compute node again
        assert eventually(lambda: compute_process(NODES[0]), bool) is not None
    finally:
        node(NODES[0], f"chown nova:nova {state}/compute_id; rm -rf {state}/upgrade_marker "
                       f"{state}/instances/probe-disk {state}/root-made")
