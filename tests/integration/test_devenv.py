"""The local environment's own behaviour: plugins never downloaded, one clear
line for each broken set-up, recovery after a killed process, a Ready node
with cluster DNS that pods use, and the data plane's load balancer and DNS."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path

from tests.integration.boundary import dev_pools, in_pool, resolve_on_node
from tests.integration.local_env import ENV, ROOT, kubectl_json, node, pulumi, run
from tests.integration.nova_compute import container, eventually
from tests.unit.supervising import alive, pid_in

DEVENV = ROOT / "devenv"
NODE_NAME = "openstack-nova-node"
CLUSTER_DNS = "10.96.0.10"


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, env=env, capture_output=True, text=True, check=False, timeout=120)


def test_plugins_come_from_the_local_cache(dev_stack: str) -> None:
    assert ENV["PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION"] == "true"
    listing = pulumi("plugin", "ls").stdout
    assert any(line.split()[:2] == ["kubernetes", "resource"] and "4.25.0" in line for line in listing.splitlines())


def test_the_cli_writes_its_automatic_log_only_when_asked(tmp_path: Path) -> None:
    """devenv/cli-fixes/automatic_logs_switch.py: off in the environment, the CLI's own default when on."""
    assert ENV["OPENSTACK_NOVA_PULUMI_LOGS"] == "off"
    for value, logs in (("off", 0), ("on", 1)):
        home = tmp_path / value
        env = {**ENV, "PULUMI_HOME": str(home), "OPENSTACK_NOVA_PULUMI_LOGS": value}
        assert _run(["pulumi", "version"], env).returncode == 0
        assert len(list(home.glob("logs/*.log"))) == logs, value


def test_not_root_gets_one_line() -> None:
    # A copy in a directory anyone may enter: the checkout itself may sit under
    # /root, which an unprivileged user cannot reach.
    with tempfile.TemporaryDirectory() as scratch:
        scripts = Path(scratch)
        scripts.chmod(0o755)
        for name in ("start.sh", "lib.sh"):
            shutil.copy2(DEVENV / name, scripts / name)
        proc = _run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(scripts / "start.sh")],
                    dict(os.environ))
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == ["start.sh: must run as root: network namespaces and mounts need it"]


def test_go_missing_gets_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": "/usr/bin:/bin", "OPENSTACK_NOVA_CACHE": str(tmp_path)}
    proc = _run([str(DEVENV / "toolchain.sh"), "etcd"], env)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("toolchain: Go is missing"), proc.stderr


def test_port_in_use_gets_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "OPENSTACK_NOVA_ENV": str(tmp_path / "env"), "KUBE_APISERVER_PORT": str(port),
               "TOOLCHAIN_BIN": ENV["PATH"].split(":")[0]}
        proc = _run([str(DEVENV / "cluster.sh"), "start"], env)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == [
        f"cluster.sh: port {port} is in use (KUBE_APISERVER_PORT); free it or unset the variable"]


def test_killed_processes_are_recovered_by_the_next_start(dev_stack: str) -> None:
    # the node's launcher dies as a crash would take it: the node is gone (its processes with it)
    pid_file = Path(ENV["OPENSTACK_NOVA_ENV"], "nodes", "edpm-compute-1", "nspawn.pid")
    os.kill(int(pid_file.read_text()), signal.SIGKILL)
    proc = _run([str(DEVENV / "start.sh")], {**os.environ, **ENV})
    assert proc.returncode == 0, proc.stderr
    assert "recovered" in proc.stdout + proc.stderr
    # the node booted again, with the files the stack deployed, and its systemd started nova-compute
    assert node("edpm-compute-1", "test -s /var/lib/openstack/nova/01-nova.conf").returncode == 0
    assert eventually(lambda: container("edpm-compute-1"), bool) is not None
    assert pulumi("preview", "--expect-no-changes", "-s", dev_stack, check=False).returncode == 0


def _conditions(obj: dict[str, object]) -> dict[str, str]:
    status = obj["status"]
    assert isinstance(status, dict)
    return {c["type"]: c["status"] for c in status["conditions"]}


def test_the_node_is_ready_and_cluster_dns_is_available() -> None:
    assert _conditions(kubectl_json("get", "node", NODE_NAME))["Ready"] == "True"
    assert _conditions(kubectl_json("-n", "kube-system", "get", "deployment", "coredns"))["Available"] == "True"
    assert kubectl_json("-n", "kube-system", "get", "service", "kube-dns")["spec"]["clusterIP"] == CLUSTER_DNS


def test_a_load_balancer_service_gets_a_pool_address_and_the_data_planes_dns_follows_it() -> None:
    """MetalLB assigns an annotated LoadBalancer Service an address of its pool; the data plane's
    dnsmasq answers its name on the nodes with that address while it exists, and no longer once
    it is deleted."""
    ns, host = "boundary-probe", "probe.boundary-probe.svc"
    run("kubectl", "create", "namespace", ns)
    try:
        run("kubectl", "apply", "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "probe", "namespace": ns, "annotations": {
                "metallb.universe.tf/address-pool": "internalapi",
                "dnsmasq.network.openstack.org/hostname": host}},
            "spec": {"type": "LoadBalancer", "ports": [{"port": 7, "protocol": "TCP"}]}}))

        def assigned() -> list[str]:
            found = kubectl_json("get", "service", "probe", "-n", ns)
            return [i["ip"] for i in found.get("status", {}).get("loadBalancer", {}).get("ingress") or []]

        address = eventually(assigned, bool, seconds=60, interval=1)
        assert len(address) == 1 and in_pool(address[0], dev_pools()["internalapi"]), address
        answered = eventually(lambda: resolve_on_node("edpm-compute-0", host), bool, seconds=30, interval=1)
        assert answered == address, (answered, address)
    finally:
        run("kubectl", "delete", "namespace", ns, "--wait=true")
    gone = eventually(lambda: resolve_on_node("edpm-compute-0", host), lambda a: not a, seconds=30, interval=1)
    assert gone == [], gone


def test_a_killed_kubelet_is_started_again_by_its_supervisor() -> None:
    """devenv/supervise.py: the daemon's supervisor starts it again, as systemd would, with no start.sh."""
    kube = Path(ENV["OPENSTACK_NOVA_ENV"], "kube")
    killed = int((kube / "kubelet.pid").read_text())
    os.kill(killed, signal.SIGKILL)
    again = eventually(lambda: pid_in(kube / "kubelet.pid"), lambda p: p not in (None, killed) and alive(p or 0),
                       seconds=30, interval=1)
    assert again not in (None, killed) and alive(again or 0), again
    assert f"supervise kubelet: pid {killed} was killed by SIGKILL" in (kube / "kubelet.log").read_text()
    assert eventually(lambda: _conditions(kubectl_json("get", "node", NODE_NAME))["Ready"], lambda r: r == "True",
                      seconds=120, interval=2) == "True"
    proc = _run([str(DEVENV / "start.sh")], {**os.environ, **ENV})
    assert proc.returncode == 0, proc.stderr
    assert "kubelet" not in proc.stdout, proc.stdout
    assert pid_in(kube / "kubelet.pid") == again


def test_a_kubelet_killed_with_its_supervisor_is_recovered_by_the_next_start() -> None:
    """Both gone, as a crash of the host takes them: start.sh finds their pid files and starts it afresh."""
    kube = Path(ENV["OPENSTACK_NOVA_ENV"], "kube")
    os.kill(int((kube / "kubelet.supervisor.pid").read_text()), signal.SIGKILL)
    os.kill(int((kube / "kubelet.pid").read_text()), signal.SIGKILL)
    proc = _run([str(DEVENV / "start.sh")], {**os.environ, **ENV})
    assert proc.returncode == 0, proc.stderr
    assert "recovered stale kubelet state" in proc.stdout
    assert _conditions(kubectl_json("get", "node", NODE_NAME))["Ready"] == "True"
    assert alive(pid_in(kube / "kubelet.supervisor.pid") or 0)


def test_a_second_start_changes_nothing() -> None:
    env = {**os.environ, **ENV, "TOOLCHAIN_BIN": ENV["PATH"].split(":")[0]}
    proc = _run([str(DEVENV / "cluster.sh"), "start"], env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("cluster.sh: already running: https://192.168.123.1:"), proc.stdout


def test_make_up_shows_the_preview_then_the_table_without_asking_off_a_terminal(dev_stack: str) -> None:
    """devenv/apply.sh, the `pulumi up` of `make up`, with stdin not a terminal (as in CI): the
    preview's summary with the policy pack's verdict, no question, then a table per node with its
    cell and the endpoints."""
    done = run(str(DEVENV / "apply.sh"), dev_stack, input="")
    out = done.stdout
    assert out.startswith(f"Preview of stack {dev_stack}: "), out
    assert "Policy pack openstack-nova 0.1.0: no violations" in out
    assert "Apply these changes" not in out + done.stderr
    header = next(line for line in out.splitlines() if line.startswith("NODE SET"))
    assert header.split()[-2:] == ["IN", "SYNC"] and "nova" in header.split()
    rows = {line.split()[1]: line.split() for line in out.splitlines() if line.startswith("edpm-compute ")}
    assert rows["edpm-compute-0"][2] == "cell1" and rows["edpm-compute-1"][2] == "cell2", out
    assert all(r[-1] == "yes" and "failed" not in r for r in rows.values()), out
    assert "nova API:    http://nova-public.openstack.svc:8774/v2.1" in out
