"""The data plane's side of the local environment (devenv/dataplane, devenv/network.env): the
address plan in one place, MetalLB's and the data plane's DNS's objects, the dnsmasq-dns
pod's program, and the host's boundary (checked by nft itself when the host has it)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from devenv.dataplane import boundary, deploy, dnsmasq_hosts, envfile, manifests, network
from devenv.dataplane.dnsmasq_hosts import HOSTNAME_ANNOTATION, Syncer

ROOT = Path(__file__).resolve().parents[2]
DEVENV = ROOT / "devenv"
LAYOUT = network.load()
VERSIONS = envfile.load("versions.env")


# ---- the address plan, in one place -----------------------------------------------------------

def _shell_values(path: Path) -> dict[str, str]:
    names = envfile.read_env(path.read_text())
    script = f'. "{path}"; ' + "; ".join(f'printf "%s\\0" "${name}"' for name in names)
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout
    return dict(zip(names, out.split("\0")[:-1], strict=True))


@pytest.mark.parametrize("name", ["network.env", "versions.env"])
def test_the_python_reader_sees_what_the_scripts_sourcing_the_file_see(name: str) -> None:
    assert envfile.load(name) == _shell_values(DEVENV / name)


def test_the_reader_expands_earlier_names_and_refuses_what_it_cannot_read() -> None:
    assert envfile.read_env("# c\nA=1\n\nB=$A.2\nC=\"${B} x\"\nD='$A'\n") == {
        "A": "1", "B": "1.2", "C": "1.2 x", "D": "$A"}
    for bad in ("A=$B\n", "export A=1\n", "A=a b\n", "A=$(date)\n"):
        with pytest.raises(envfile.EnvFileError):
            envfile.read_env(bad)


def test_the_address_plan_is_upstreams_with_a_wider_internalapi_pool() -> None:
    assert (LAYOUT.service_cidr, LAYOUT.pod_cidr, LAYOUT.cluster_dns_ip) == ("10.96.0.0/24", "10.244.0.0/24",
                                                                             "10.96.0.10")
    ctl, ia = LAYOUT.ctlplane, LAYOUT.internalapi
    assert (ctl.bridge, ctl.cidr, ctl.host_ip, ctl.pool) == (
        "novaedpm0", "192.168.122.0/24", "192.168.122.1", "192.168.122.80-192.168.122.90")
    assert (ia.bridge, ia.cidr, ia.host_ip, ia.pool) == ("novaia0", "172.17.0.0/24", "172.17.0.5",
                                                         "172.17.0.80-172.17.0.99")
    assert (ctl.node_ip(1), ia.node_ip(1)) == ("192.168.122.101", "172.17.0.101")
    assert LAYOUT.dataplane_dns_ip == "192.168.122.80"


@pytest.mark.parametrize(("key", "value", "message"), [
    ("DATAPLANE_DNS_IP", "192.168.122.91", "not in the ctlplane pool"),
    ("INTERNALAPI_LB_POOL", "172.17.0.80-172.17.0.120", "overlaps"),
    ("CTLPLANE_LB_POOL", "192.168.122.1-192.168.122.90", "overlaps"),
    ("INTERNALAPI_HOST_IP", "172.18.0.5", "is not in 172.17.0.0/24"),
    ("POD_CIDR", "10.244.0.0/33", "network.env"),
])
def test_a_layout_that_would_break_quietly_is_refused(key: str, value: str, message: str) -> None:
    values = {**envfile.load("network.env"), key: value}
    with pytest.raises(network.LayoutError, match=message):
        network.from_env(values)


@pytest.mark.parametrize("script", ["cluster.sh", "nodes.sh"])
def test_the_scripts_take_the_address_plan_from_network_env_and_set_none_of_it_themselves(script: str) -> None:
    text = (DEVENV / script).read_text()
    assert '. "$here/network.env"' in text
    assigned = set(re.findall(r"^([A-Z_][A-Z0-9_]*)=", text, re.M))
    assert assigned & set(envfile.load("network.env")) == set()
    for literal in ("10.96.0", "10.244.0", "192.168.12", "172.17.0", "novaedpm0", "novaia0"):
        assert literal not in text, (script, literal)


def _nodes_sh(call: str, tmp_path: Path) -> str:
    proc = subprocess.run(["bash", "-c", f'. "$1"; {call}', "sourced", str(DEVENV / "nodes.sh")],
                          env={**os.environ, "OPENSTACK_NOVA_CACHE": str(tmp_path)},
                          capture_output=True, text=True, check=True)
    return proc.stdout


def test_a_node_has_an_address_on_each_network_and_resolves_through_the_data_planes_dns_alone(tmp_path: Path) -> None:
    assert _nodes_sh("node_ip 3; node_internalapi_ip 3; veth_name 3; internalapi_veth_name 3", tmp_path).split() == [
        "192.168.122.103", "172.17.0.103", "ve-edpm-3", "vi-edpm-3"]
    node = tmp_path / "env" / "nodes" / "edpm-compute-0"
    ssh, root = tmp_path / "env" / "ssh", tmp_path / "root"
    for d in (node, ssh, root / "etc" / "ssh", root / "root", root / "home" / "cloud-admin"):
        d.mkdir(parents=True)
    (node / "machine-id").write_text("0" * 32)
    for key in (node / "ssh_host_ed25519_key", ssh / "id_ed25519"):
        key.write_text("key\n")
        key.with_suffix(".pub").write_text("ssh-ed25519 AAAA test\n")
    _nodes_sh(f'write_identity 0 "{root}" 2', tmp_path)
    assert (root / "etc" / "resolv.conf").read_text() == "nameserver 192.168.122.80\n"
    assert (root / "etc" / "hosts").read_text().splitlines()[2:] == [
        "192.168.122.100 edpm-compute-0", "192.168.122.101 edpm-compute-1"]


def test_start_makes_the_network_before_the_cluster_and_the_data_plane_before_the_nodes() -> None:
    steps = re.findall(r'^"\$here/(\S+)" (\w+)$', (DEVENV / "start.sh").read_text(), re.M)
    assert [s for s in steps if s[0] != "images.sh"] == [
        ("nodes.sh", "network"), ("cluster.sh", "start"), ("dataplane.sh", "start"), ("nodes.sh", "start")]


# ---- the host's boundary ------------------------------------------------------------------------

def test_the_boundary_drops_what_a_node_addressed_to_the_clusters_networks_in_both_hooks() -> None:
    text = boundary.ruleset(LAYOUT)
    assert text.splitlines()[1:3] == ["add table inet openstack-nova-boundary",
                                      "delete table inet openstack-nova-boundary"]
    chains = re.findall(r"chain (\w+) \{\n\t\ttype filter hook (\w+) priority filter; policy accept;\n(.*?)\t\}",
                        text, re.S)
    assert [(c[0], c[1]) for c in chains] == [("forward", "forward"), ("input", "input")]
    for _, _, rules in chains:
        assert rules.splitlines() == [
            '\t\tiifname { "novaedpm0", "novaia0" } ct original ip daddr { 10.96.0.0/24, 10.244.0.0/24 } '
            "counter drop",
            '\t\tiifname { "novaedpm0", "novaia0" } ct state invalid,untracked ip daddr '
            "{ 10.96.0.0/24, 10.244.0.0/24 } counter drop"]


def test_the_boundary_cli_prints_the_scripts_nodes_sh_applies() -> None:
    def cli(*args: str) -> str:
        return subprocess.run([sys.executable, "-m", "devenv.dataplane", *args], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout

    assert cli("boundary") == boundary.ruleset(LAYOUT)
    assert cli("boundary", "--delete") == boundary.delete_script()


def _nft_in_own_netns(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["unshare", "--net", "sh", "-c", "nft -f - && nft list ruleset"], input=script,
                          capture_output=True, text=True, check=False)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("nft") or not shutil.which("unshare"),
                    reason="needs root, nft and unshare (a network namespace of its own)")
def test_nft_takes_the_boundary_and_its_removal_twice_over() -> None:
    twice = _nft_in_own_netns(boundary.ruleset(LAYOUT) * 2)
    assert twice.returncode == 0, twice.stderr
    assert twice.stdout.count("table inet openstack-nova-boundary") == 1
    gone = _nft_in_own_netns(boundary.ruleset(LAYOUT) + boundary.delete_script() * 2)
    assert (gone.returncode, gone.stdout) == (0, ""), gone.stderr


# ---- MetalLB -----------------------------------------------------------------------------------------

def _objects() -> list[dict[str, Any]]:
    return deploy.desired(LAYOUT, VERSIONS, deploy.PROGRAM.read_text())


def _find(kind: str, name: str, objects: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    (found,) = [o for o in objects or _objects() if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def test_every_object_is_named_once_and_namespaced_where_its_kind_is() -> None:
    objects = _objects()
    keys = [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects]
    assert len(keys) == len(set(keys))
    cluster_wide = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
    for kind, namespace, name in keys:
        assert (namespace is None) == (kind in cluster_wide), (kind, name)
    namespaces = [o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"]
    assert namespaces == ["metallb-system", "dataplane-dns"]
    # each Namespace comes before its objects (kubectl applies the list in order)
    for index, (_, namespace, _) in enumerate(keys):
        if namespace:
            assert keys.index(("Namespace", None, namespace)) < index


def test_the_controller_runs_the_built_image_with_its_webhooks_off_and_nothing_for_them() -> None:
    objects = _objects()
    pod = _find("Deployment", "controller", objects)["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == "localhost/openstack-nova/metallb-controller:v0.15.2" == \
        VERSIONS["METALLB_CONTROLLER_IMAGE"]
    assert "--webhook-mode=disabled" in container["args"]
    assert "volumes" not in pod and "volumeMounts" not in container  # no webhook certificate
    assert not any(e["name"].startswith("METALLB_ML") for e in container.get("env", []))
    assert {o["kind"] for o in objects} & {"ValidatingWebhookConfiguration", "Secret"} == set()
    resources = {r for o in objects if o["kind"] in ("ClusterRole", "Role") for rule in o["rules"]
                 for r in rule["resources"]}
    assert resources & {"customresourcedefinitions", "validatingwebhookconfigurations",
                        "podsecuritypolicies"} == set()
    assert pod["securityContext"] == {"runAsNonRoot": True, "runAsUser": 65534, "fsGroup": 65534}


def test_the_speaker_answers_arp_from_the_hosts_network_without_memberlist() -> None:
    pod = _find("DaemonSet", "speaker")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["hostNetwork"] is True
    assert container["image"] == VERSIONS["METALLB_SPEAKER_IMAGE"]
    assert container["securityContext"]["capabilities"] == {"add": ["NET_RAW"], "drop": ["ALL"]}
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"]}
    assert env == {"METALLB_NODE_NAME": "spec.nodeName", "METALLB_POD_NAME": "metadata.name",
                   "METALLB_HOST": "status.hostIP"}
    bindings = {(o["kind"], o["metadata"]["name"]): o["subjects"] for o in _objects() if o["kind"].endswith("Binding")}
    assert bindings[("ClusterRoleBinding", "metallb-system:speaker")] == [
        {"kind": "ServiceAccount", "name": "speaker", "namespace": "metallb-system"}]


def test_each_data_plane_network_has_its_pool_advertised_on_its_own_bridge() -> None:
    objects = _objects()
    pools = {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] == "IPAddressPool"}
    ads = {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] == "L2Advertisement"}
    assert pools == {"ctlplane": {"addresses": ["192.168.122.80-192.168.122.90"]},
                     "internalapi": {"addresses": ["172.17.0.80-172.17.0.99"]}}
    assert ads == {"ctlplane": {"ipAddressPools": ["ctlplane"], "interfaces": ["novaedpm0"]},
                   "internalapi": {"ipAddressPools": ["internalapi"], "interfaces": ["novaia0"]}}
    assert {o["metadata"]["namespace"] for o in objects if o["kind"] in ("IPAddressPool", "L2Advertisement")} == {
        "metallb-system"}


# ---- the data plane's DNS ---------------------------------------------------------------------------

def test_the_dns_service_is_the_ctlplane_load_balancer_the_nodes_name_answering_on_53() -> None:
    service = _find("Service", "dnsmasq-dns")
    assert service["metadata"]["namespace"] == "dataplane-dns"
    assert service["metadata"]["annotations"] == {"metallb.universe.tf/address-pool": "ctlplane",
                                                  "metallb.universe.tf/loadBalancerIPs": "192.168.122.80"}
    assert service["spec"]["type"] == "LoadBalancer"
    assert sorted((p["port"], p["protocol"], p["targetPort"]) for p in service["spec"]["ports"]) == [
        (53, "TCP", 5353), (53, "UDP", 5353)]
    pod = _find("Deployment", "dnsmasq-dns")["spec"]["template"]
    assert service["spec"]["selector"] == pod["metadata"]["labels"]


def test_the_dns_pod_runs_the_program_of_the_checkout_with_the_openstack_image_as_nobody() -> None:
    objects = _objects()
    program = (DEVENV / "dataplane" / "dnsmasq_hosts.py").read_text()
    config = _find("ConfigMap", "dnsmasq-dns-program", objects)
    assert config["data"] == {"dnsmasq_hosts.py": program}
    template = _find("Deployment", "dnsmasq-dns", objects)["spec"]["template"]
    (container,) = template["spec"]["containers"]
    assert container["image"] == f"localhost/openstack-nova/dnsmasq:{VERSIONS['IMAGE_TAG']}"
    assert container["command"] == ["python3", "/var/lib/dataplane-dns/dnsmasq_hosts.py",
                                    "--hosts-file=/run/dataplane-dns/hosts", "--port=5353"]
    assert container["readinessProbe"]["tcpSocket"] == {"port": 5353}
    assert container["securityContext"]["runAsUser"] == 65534
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert mounts == {"/var/lib/dataplane-dns": "program", "/run/dataplane-dns": "hosts"}
    # a changed program rolls the pod
    other = manifests.dataplane_dns("img", LAYOUT, program + "\n")
    assert _find("Deployment", "dnsmasq-dns", other)["spec"]["template"]["metadata"]["annotations"] != \
        template["metadata"]["annotations"]
    role = _find("ClusterRole", "openstack-nova:dataplane-dns", objects)
    assert role["rules"] == [{"apiGroups": [""], "resources": ["services"], "verbs": ["list", "watch"]}]


def test_the_image_the_dns_pod_runs_has_dnsmasq_and_is_imported_under_its_name() -> None:
    packages = (DEVENV / "images" / "packages.txt").read_text().split()
    assert "dnsmasq-base" in packages
    match = re.search(r"^IMAGE_NAMES=\(([^)]*)\)", (DEVENV / "images.sh").read_text(), re.M)
    assert match and "dnsmasq" in match.group(1).split()


def _service(name: str, host: str | None, ips: list[str], kind: str = "LoadBalancer",
             namespace: str = "openstack") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace,
                         "annotations": {HOSTNAME_ANNOTATION: host} if host is not None else {}},
            "spec": {"type": kind},
            "status": {"loadBalancer": {"ingress": [{"ip": ip} for ip in ips]}}}


SERVICES = [
    _service("keystone-internal", "keystone-internal.openstack.svc", ["172.17.0.80"]),
    _service("placement-internal", "Placement-Internal.openstack.svc.", ["172.17.0.80"]),
    _service("rabbitmq-cell1", "rabbitmq-cell1.openstack.svc", ["172.17.0.86"]),
    _service("rabbitmq-cell2", "rabbitmq-cell2.openstack.svc", []),  # no address yet
    _service("memcached", None, ["172.17.0.90"]),  # not annotated
    _service("galera", "galera.openstack.svc", [], kind="ClusterIP"),
    _service("evil", "x\n1.2.3.4 keystone-internal.openstack.svc", ["172.17.0.91"]),
    _service("dual", "dual.other.svc", ["172.17.0.9", "fd00::5"], namespace="other"),
]


def test_records_map_each_address_to_the_annotated_names_of_its_load_balancers() -> None:
    assert dnsmasq_hosts.records(SERVICES) == {
        "172.17.0.80": ("keystone-internal.openstack.svc", "placement-internal.openstack.svc"),
        "172.17.0.86": ("rabbitmq-cell1.openstack.svc",),
        "172.17.0.9": ("dual.other.svc",), "fd00::5": ("dual.other.svc",)}
    assert dnsmasq_hosts.rejected(SERVICES) == [
        "openstack/evil: 'x\\n1.2.3.4 keystone-internal.openstack.svc'"]


def test_the_hosts_file_has_a_line_per_address_in_address_order_whatever_the_services_order() -> None:
    text = dnsmasq_hosts.hosts_text(dnsmasq_hosts.records(SERVICES))
    assert text == ("172.17.0.9 dual.other.svc\n"
                    "172.17.0.80 keystone-internal.openstack.svc placement-internal.openstack.svc\n"
                    "172.17.0.86 rabbitmq-cell1.openstack.svc\n"
                    "fd00::5 dual.other.svc\n")
    assert dnsmasq_hosts.hosts_text(dnsmasq_hosts.records(reversed(SERVICES))) == text
    assert dnsmasq_hosts.hosts_text({}) == ""


def test_dnsmasq_runs_in_the_foreground_on_the_hosts_file_alone_as_upstream_runs_it() -> None:
    assert dnsmasq_hosts.dnsmasq_command("/usr/sbin/dnsmasq", "/run/h", 5353) == [
        "/usr/sbin/dnsmasq", "--keep-in-foreground", "--port=5353", "--interface=*", "--no-resolv", "--no-hosts",
        "--domain-needed", "--bogus-priv", "--addn-hosts=/run/h", "--pid-file=", "--log-facility=-",
        "--log-queries"]


class FakeDnsmasq:
    def __init__(self) -> None:
        self.signals: list[int] = []
        self.status: int | None = None

    def poll(self) -> int | None:
        return self.status

    def send_signal(self, sig: int) -> None:
        self.signals.append(sig)

    def terminate(self) -> None:
        self.status = -15

    def wait(self, timeout: float | None = None) -> int:
        return self.status or 0


def test_the_syncer_starts_dnsmasq_after_the_first_list_and_signals_it_only_on_a_change(tmp_path: Path) -> None:
    answers: list[Any] = [OSError("connection refused"), SERVICES, list(reversed(SERVICES)), SERVICES[:1],
                          ValueError("bad body")]
    started: list[FakeDnsmasq] = []
    logged: list[str] = []

    def listing() -> list[dict[str, Any]]:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return list(answer)

    def start() -> FakeDnsmasq:
        started.append(FakeDnsmasq())
        return started[-1]

    hosts = tmp_path / "hosts"
    syncer = Syncer(hosts, listing, start, logged.append)
    assert syncer.step() is None and not started and not hosts.exists()  # the API is not there yet
    assert syncer.step() is None and len(started) == 1
    assert hosts.read_text() == dnsmasq_hosts.hosts_text(dnsmasq_hosts.records(SERVICES))
    assert oct(hosts.stat().st_mode & 0o777) == "0o644"
    assert syncer.step() is None and started[0].signals == []  # the same records
    assert syncer.step() is None and started[0].signals == [signal.SIGHUP]
    assert hosts.read_text() == "172.17.0.80 keystone-internal.openstack.svc\n"
    assert "- rabbitmq-cell1.openstack.svc 172.17.0.86" in logged
    assert syncer.step() is None and started[0].signals == [signal.SIGHUP]  # a failed list changes nothing
    assert [line for line in logged if "ignored" in line] == [
        "ignored, its dnsmasq.network.openstack.org/hostname is no host name: "
        "openstack/evil: 'x\\n1.2.3.4 keystone-internal.openstack.svc'"]
    answers.append(SERVICES[:1])
    started[0].status = 2
    assert syncer.step() == 2  # dnsmasq died: the program exits with its status
    assert list(tmp_path.iterdir()) == [hosts]  # no temporary file left


@pytest.mark.skipif(not Path(dnsmasq_hosts.DNSMASQ).exists(), reason="needs dnsmasq (Debian's dnsmasq-base)")
def test_dnsmasq_answers_the_records_and_follows_a_change_on_sighup(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    hosts = tmp_path / "hosts"
    command = dnsmasq_hosts.dnsmasq_command(dnsmasq_hosts.DNSMASQ, str(hosts), port)
    if os.geteuid() == 0:  # it would change to a user that cannot read tmp_path
        command.append("--user=root")
    listed = [SERVICES]
    syncer = Syncer(hosts, lambda: list(listed[0]), lambda: subprocess.Popen(command, stderr=subprocess.DEVNULL),
                    lambda line: None)
    try:
        assert syncer.step() is None
        answer = deploy.eventually(lambda: deploy.ask("127.0.0.1", "placement-internal.openstack.svc", port=port), 10)
        assert answer == (0, ["172.17.0.80"])
        listed[0] = [_service("placement-internal", "placement-internal.openstack.svc", ["172.17.0.81"])]
        assert syncer.step() is None
        assert deploy.eventually(
            lambda: deploy.ask("127.0.0.1", "placement-internal.openstack.svc", port=port) == (0, ["172.17.0.81"]),
            10)
        gone = deploy.ask("127.0.0.1", "keystone-internal.openstack.svc", port=port)
        assert gone is not None and gone[1] == []
    finally:
        syncer.stop()


# ---- deploy's own parts ---------------------------------------------------------------------------

def test_a_dns_reply_is_read_with_its_compressed_names() -> None:
    query = deploy.dns_query("keystone-internal.openstack.svc", 0x1234)
    answer = struct.pack(">HHHIH", 0xC00C, 1, 1, 30, 4) + socket.inet_aton("172.17.0.80")
    cname = struct.pack(">HHHIH", 0xC00C, 5, 1, 30, 2) + b"\xc0\x0c"
    reply = bytearray(query)
    reply[2:4] = b"\x85\x80"
    reply[6:8] = struct.pack(">H", 2)
    assert deploy.dns_reply(query, bytes(reply) + cname + answer) == (0, ["172.17.0.80"])
    refused = bytearray(query)
    refused[2:4] = b"\x81\x85"
    assert deploy.dns_reply(query, bytes(refused)) == (5, [])
    assert deploy.dns_reply(query, query) is None  # not a reply
    other = bytearray(reply)
    other[0] ^= 1
    assert deploy.dns_reply(query, bytes(other)) is None


def test_what_was_applied_is_known_by_a_hash_of_everything() -> None:
    objects = _objects()
    first = deploy.digest(b"crds", objects)
    assert first == deploy.digest(b"crds", json.loads(json.dumps(objects)))
    assert deploy.digest(b"crds!", objects) != first
    assert deploy.digest(b"crds", objects[:-1]) != first



# ---- the boundary, tried by the kernel ---------------------------------------------------------------

@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("nft"), reason="needs root and nft (network namespaces)")
@pytest.mark.parametrize("masquerade", [True, False], ids=["pods-masqueraded", "pods-not-masqueraded"])
def test_a_node_reaches_the_load_balancer_address_and_no_cluster_ip_or_pod_and_a_pod_reaches_the_node(
        masquerade: bool) -> None:
    from tests.unit import boundary_lab as lab_

    lab = lab_.Lab().open()
    try:
        lab.kube_proxy()
        if masquerade:
            lab.masquerade_pods()
        lab.listen("pod", 8080)
        lab.listen("host", 6443)
        lab.listen("node", 5900)
        before = {dest: lab.connects("node", *dest) for dest in (
            (lab_.LB_IP, 80), (lab_.CLUSTER_IP, 80), (lab_.POD_IP, 8080), (lab_.API_CLUSTER_IP, 443))}
        assert all(before.values()), before  # without the boundary the host takes the node anywhere
        applied = lab.nft(boundary.ruleset(LAYOUT))
        assert applied.returncode == 0, applied.stderr
        assert lab.connects("node", lab_.LB_IP, 80)  # DNATed to the same pod, but addressed to the LB
        dropped = 0.5  # a drop is silent: a connection not made in this long is refused
        assert not lab.connects("node", lab_.CLUSTER_IP, 80, dropped)  # forward hook
        assert not lab.connects("node", lab_.POD_IP, 8080, dropped)
        assert not lab.connects("node", lab_.API_CLUSTER_IP, 443, dropped)  # input hook: the endpoint is the host
        assert lab.connects("pod", lab_.NODE_IP, 5900)  # the noVNC proxy's way to a node: replies pass
        assert lab.connects("node", lab_.LB_IP, 80)
    finally:
        lab.close()


# ---- start and status, against a stand-in kubectl ---------------------------------------------------

@pytest.fixture
def fake_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    from tests.unit import fake_kubectl

    bin_dir, env_dir = tmp_path / "bin", tmp_path / "env"
    log = fake_kubectl.install(bin_dir, ingress=["192.168.122.80"], announced=["novaedpm0"])
    (bin_dir / "manifests").mkdir()
    (bin_dir / "manifests" / "metallb-crds.yaml").write_text("---\nkind: CustomResourceDefinition\n")
    (env_dir / "kube").mkdir(parents=True)
    (env_dir / "kube" / "kubeconfig").write_text("{}")
    monkeypatch.setenv("TOOLCHAIN_BIN", str(bin_dir))
    monkeypatch.setenv("OPENSTACK_NOVA_ENV", str(env_dir))
    monkeypatch.setattr(deploy, "ask", lambda server, name, port=53, timeout=1.0: (5, []))
    return log, bin_dir


def _verbs(log: Path) -> list[str]:
    from tests.unit import fake_kubectl

    return [" ".join(c[:3]) for c in fake_kubectl.calls(log) if c[0] in ("apply", "wait", "delete")]


def test_start_applies_the_crds_then_everything_once_and_a_second_start_applies_nothing(
        fake_env: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    log, bin_dir = fake_env
    assert deploy.run("start") == 0
    assert _verbs(log) == ["apply --server-side --field-manager=openstack-nova-devenv",
                           "wait --for=condition=Established --timeout=60s",
                           "apply --server-side --field-manager=openstack-nova-devenv"]
    assert capsys.readouterr().out.splitlines()[-1].startswith("dataplane: running: MetalLB (pools ctlplane ")
    log.unlink()
    assert deploy.run("start") == 0
    assert _verbs(log) == []
    assert "dataplane: already running: " in capsys.readouterr().out
    (bin_dir / "manifests" / "metallb-crds.yaml").write_text("---\nkind: CustomResourceDefinition\n# v2\n")
    assert deploy.run("start") == 0
    assert len(_verbs(log)) == 3  # new CRDs: applied again


def test_start_restarts_the_speaker_once_when_it_does_not_announce_the_dns_address(
        fake_env: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.unit import fake_kubectl

    log, bin_dir = fake_env
    fake_kubectl.install(bin_dir, ingress=["192.168.122.80"], announced=[])
    monkeypatch.setattr(deploy, "ANNOUNCE_TIMEOUT", 0.2)
    assert deploy.run("start") == 1
    assert "delete pods -n" in _verbs(log)
    err = capsys.readouterr().err
    assert "MetalLB does not announce 192.168.122.80 on novaedpm0 (it does on: nothing)" in err


def test_start_refuses_a_node_excluded_from_load_balancers(
        fake_env: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    from tests.unit import fake_kubectl

    log, bin_dir = fake_env
    fake_kubectl.install(bin_dir, node_labels={deploy.EXCLUDE_LABEL: ""})
    assert deploy.run("start") == 1
    assert _verbs(log) == []
    assert "has the label node.kubernetes.io/exclude-from-external-load-balancers" in capsys.readouterr().err


def test_status_says_what_runs_and_what_does_not(fake_env: tuple[Path, Path],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from tests.unit import fake_kubectl

    _, bin_dir = fake_env
    assert deploy.run("status") == 3
    assert capsys.readouterr().out.splitlines()[0] == \
        "metallb-system/controller    missing (devenv/dataplane.sh start)"
    fake_kubectl.install(bin_dir, applied=True, ingress=["192.168.122.80"], announced=["novaedpm0"])
    assert deploy.run("status") == 0
    assert capsys.readouterr().out.splitlines() == [
        "metallb-system/controller    ready (1/1)",
        "metallb-system/speaker       ready (1/1)",
        "dataplane-dns/dnsmasq-dns    ready (1/1)",
        "dns 192.168.122.80           192.168.122.80, announced on novaedpm0, answers"]
