"""Puts the data plane's side into the running cluster, or says how it is.

    start   MetalLB's CRDs (the release's own, from the toolchain), MetalLB, its address
            pools and L2 advertisements, the data plane's DNS; applied again only when
            something changed (a hash of everything, as cluster.sh keeps CoreDNS's); then
            waits until MetalLB runs, dnsmasq-dns has its address, MetalLB announces it on
            the ctlplane bridge and dnsmasq answers there.
    status  one line each for MetalLB's controller and speaker and the data plane's DNS.

Run by devenv/dataplane.sh (TOOLCHAIN_BIN and OPENSTACK_NOVA_ENV set), from devenv/start.sh
once the cluster runs and its images are imported, before the test nodes start.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import socket
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import envfile, network
from .kube import Kubectl, KubectlError, last_line
from .manifests import (
    DNS_NAME,
    DNS_NAMESPACE,
    METALLB_NAMESPACE,
    Images,
    Obj,
    address_pools,
    dataplane_dns,
    metallb,
)

PROG = "dataplane"
PROGRAM = Path(__file__).resolve().parent / "dnsmasq_hosts.py"
CRDS = Path("manifests") / "metallb-crds.yaml"  # under TOOLCHAIN_BIN (devenv/toolchain.sh)
EXCLUDE_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"
ROLLOUT_TIMEOUT = 180
ADDRESS_TIMEOUT = 60.0
ANNOUNCE_TIMEOUT = 30.0
WORKLOADS = ((METALLB_NAMESPACE, "deployment/controller"), (METALLB_NAMESPACE, "daemonset/speaker"),
             (DNS_NAMESPACE, f"deployment/{DNS_NAME}"))


def note(message: str) -> None:
    print(f"{PROG}: {message}", flush=True)


class StartError(RuntimeError):
    pass


@dataclass(frozen=True)
class Environment:
    kubectl: Kubectl
    crds: Path
    state: Path  # the hash of what was applied last

    @classmethod
    def from_os(cls) -> Environment:
        bin_dir, env_dir = os.environ.get("TOOLCHAIN_BIN"), os.environ.get("OPENSTACK_NOVA_ENV")
        if not bin_dir or not env_dir:
            raise StartError("TOOLCHAIN_BIN and OPENSTACK_NOVA_ENV are not set: run me through devenv/dataplane.sh")
        kube = Path(env_dir) / "kube"
        kubeconfig = kube / "kubeconfig"
        if not kubeconfig.is_file():
            raise StartError(f"no cluster: {kubeconfig} is missing (devenv/cluster.sh start first)")
        return cls(Kubectl(Path(bin_dir) / "kubectl", kubeconfig), Path(bin_dir) / CRDS, kube / "dataplane.applied")


def images(versions: dict[str, str]) -> Images:
    return Images(controller=versions["METALLB_CONTROLLER_IMAGE"], speaker=versions["METALLB_SPEAKER_IMAGE"],
                  dnsmasq=f"localhost/openstack-nova/dnsmasq:{versions['IMAGE_TAG']}")


def desired(layout: network.Layout, versions: dict[str, str], program: str) -> list[Obj]:
    found = images(versions)
    return [*metallb(found), *address_pools(layout), *dataplane_dns(found.dnsmasq, layout, program)]


def digest(crds: bytes, objects: list[Obj]) -> str:
    return hashlib.sha256(crds + json.dumps(objects, sort_keys=True).encode()).hexdigest()[:16]


# ---- DNS, asked from the host ---------------------------------------------------------------

def dns_query(name: str, ident: int) -> bytes:
    """A recursive A query for `name`."""
    labels = b"".join(bytes([len(p)]) + p.encode() for p in name.rstrip(".").split(".")) + b"\0"
    return struct.pack(">HHHHHH", ident, 0x0100, 1, 0, 0, 0) + labels + struct.pack(">HH", 1, 1)


def dns_reply(query: bytes, reply: bytes) -> tuple[int, list[str]] | None:
    """(rcode, the A records' addresses) of a reply to `query`, or None when it is none."""
    if len(reply) < len(query) or reply[:2] != query[:2] or not reply[2] & 0x80:
        return None
    rcode, answers = reply[3] & 0x0F, struct.unpack(">H", reply[6:8])[0]
    addresses, at = [], len(query)
    for _ in range(answers):
        at = _past_name(reply, at)
        if at + 10 > len(reply):
            break
        kind, _, _, length = struct.unpack(">HHIH", reply[at:at + 10])
        at += 10
        if kind == 1 and length == 4 and at + 4 <= len(reply):
            addresses.append(socket.inet_ntoa(reply[at:at + 4]))
        at += length
    return rcode, addresses


def _past_name(reply: bytes, at: int) -> int:
    """Where the (maybe compressed) name at `at` ends."""
    while at < len(reply):
        length = reply[at]
        if length & 0xC0 == 0xC0:
            return at + 2
        if length == 0:
            return at + 1
        at += length + 1
    return at


def ask(server: str, name: str, port: int = 53, timeout: float = 1.0) -> tuple[int, list[str]] | None:
    """The server's (rcode, addresses) for `name` over UDP, or None when it does not answer."""
    query = dns_query(name, random.randrange(1, 0xFFFF))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        try:
            s.sendto(query, (server, port))
            return dns_reply(query, s.recv(4096))
        except OSError:
            return None


# ---- waiting ----------------------------------------------------------------------------------

def eventually(check: Callable[[], Any], seconds: float, interval: float = 0.5) -> Any:
    """check()'s first true value within `seconds`, else its last value."""
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def explain(kube: Kubectl, namespace: str) -> str:
    """The namespace's pods with what keeps them from being ready, and the last log lines of one."""
    pods = (kube.get_json("pods", "-n", namespace) or {}).get("items", [])
    lines, unready = [], None
    for pod in pods:
        statuses = pod.get("status", {}).get("containerStatuses") or []
        waiting = [s.get("state", {}).get("waiting", {}).get("reason") for s in statuses]
        ready = bool(statuses) and all(s.get("ready") for s in statuses)
        reasons = ", ".join(r for r in waiting if r) or pod.get("status", {}).get("phase", "?")
        lines.append(f"  pod {pod['metadata']['name']}: {'ready' if ready else reasons}")
        if not ready and unready is None:
            unready = pod["metadata"]["name"]
    if unready:
        log = kube.run("logs", "-n", namespace, unready, "--tail=15", "--all-containers", check=False).stdout
        lines += [f"  | {line}" for line in log.strip().splitlines()]
    return "\n".join(lines) or "  (no pods)"


def wait_rollouts(kube: Kubectl) -> None:
    for namespace, what in WORKLOADS:
        done = kube.run("rollout", "status", "-n", namespace, what, f"--timeout={ROLLOUT_TIMEOUT}s", check=False,
                        timeout=ROLLOUT_TIMEOUT + 30)
        if done.returncode != 0:
            raise StartError(f"{namespace}/{what} not ready after {ROLLOUT_TIMEOUT}s "
                             f"({last_line(done.stderr or done.stdout)}):\n{explain(kube, namespace)}")


def check_node_not_excluded(kube: Kubectl) -> None:
    nodes = (kube.get_json("nodes") or {}).get("items", [])
    excluded = [n["metadata"]["name"] for n in nodes if EXCLUDE_LABEL in (n["metadata"].get("labels") or {})]
    if excluded:
        raise StartError(f"node {', '.join(excluded)} has the label {EXCLUDE_LABEL}: MetalLB's speaker would "
                         f"announce no address from it; remove it (kubectl label node {excluded[0]} {EXCLUDE_LABEL}-)")


def dns_address(kube: Kubectl) -> list[str]:
    service = kube.get_json("service", "-n", DNS_NAMESPACE, DNS_NAME) or {}
    return [i.get("ip", "") for i in service.get("status", {}).get("loadBalancer", {}).get("ingress") or []]


def announced_on(kube: Kubectl, namespace: str, name: str) -> list[str]:
    """The interfaces MetalLB's speaker announces the Service's address on (its ServiceL2Status)."""
    found = kube.get_json("servicel2statuses", "-n", METALLB_NAMESPACE, "-l",
                          f"metallb.io/service-name={name},metallb.io/service-namespace={namespace}") or {}
    return sorted({i.get("name", "") for s in found.get("items", [])
                   for i in s.get("status", {}).get("interfaces") or []})


def wait_announced(kube: Kubectl, layout: network.Layout) -> None:
    """The speaker announces an address only if its interface was there when it handled the
    Service (it does not try again when the bridge appears later): if it does not announce
    dnsmasq-dns's, it is started again once, and then finds the bridge."""
    bridge = layout.ctlplane.bridge
    if bridge in eventually(lambda: announced_on(kube, DNS_NAMESPACE, DNS_NAME), ANNOUNCE_TIMEOUT):
        return
    note(f"MetalLB does not announce {layout.dataplane_dns_ip} on {bridge}: starting its speaker again")
    kube.run("delete", "pods", "-n", METALLB_NAMESPACE, "-l", "component=speaker", "--wait=true")
    wait_rollouts(kube)
    found = eventually(lambda: announced_on(kube, DNS_NAMESPACE, DNS_NAME), ANNOUNCE_TIMEOUT)
    if bridge not in found:
        raise StartError(f"MetalLB does not announce {layout.dataplane_dns_ip} on {bridge} (it does on: "
                         f"{', '.join(found) or 'nothing'}); is the bridge there (devenv/nodes.sh network)?\n"
                         f"{explain(kube, METALLB_NAMESPACE)}")


def start(env: Environment) -> int:
    layout = network.load()
    versions = envfile.load("versions.env")
    if not env.crds.is_file():
        raise StartError(f"MetalLB's CRDs are missing ({env.crds}): run 'make toolchain'")
    crds = env.crds.read_bytes()
    objects = desired(layout, versions, PROGRAM.read_text())
    wanted = digest(crds, objects)
    kube = env.kubectl
    check_node_not_excluded(kube)
    present = all(kube.run("get", "-n", ns, what, check=False).returncode == 0 for ns, what in WORKLOADS)
    applied = env.state.read_text().strip() if env.state.is_file() else ""
    changed = applied != wanted or not present
    if changed:
        env.state.unlink(missing_ok=True)
        kube.apply_file(env.crds)
        kube.run("wait", "--for=condition=Established", "--timeout=60s", "-f", str(env.crds))
        kube.apply(objects)
        note("MetalLB and the data plane's DNS applied")
    wait_rollouts(kube)
    address = eventually(lambda: dns_address(kube), ADDRESS_TIMEOUT)
    if address != [layout.dataplane_dns_ip]:
        raise StartError(f"{DNS_NAMESPACE}/{DNS_NAME} has not the address {layout.dataplane_dns_ip} "
                         f"(it has {address or 'none'}):\n{explain(kube, METALLB_NAMESPACE)}")
    wait_announced(kube, layout)
    if eventually(lambda: ask(layout.dataplane_dns_ip, f"{DNS_NAME}.{DNS_NAMESPACE}.svc"), 30) is None:
        raise StartError(f"the data plane's DNS at {layout.dataplane_dns_ip} does not answer:\n"
                         f"{explain(kube, DNS_NAMESPACE)}")
    env.state.write_text(wanted + "\n")
    pools = ", ".join(f"{n.name} {n.pool} on {n.bridge}" for n in layout.dataplane_networks)
    note(f"{'running' if changed else 'already running'}: MetalLB (pools {pools}), "
         f"the data plane's DNS at {layout.dataplane_dns_ip}")
    return 0


def status(env: Environment) -> int:
    layout, kube, rc = network.load(), env.kubectl, 0
    for namespace, what in WORKLOADS:
        found = kube.get_json("-n", namespace, what)
        if found is None:
            state, rc = "missing (devenv/dataplane.sh start)", 3
        else:
            state = _ready(found)
            rc = rc if state.startswith("ready") else 3
        print(f"{namespace + '/' + what.split('/')[1]:<28} {state}")
    address = dns_address(kube)
    answer = ask(layout.dataplane_dns_ip, f"{DNS_NAME}.{DNS_NAMESPACE}.svc") if address else None
    on = announced_on(kube, DNS_NAMESPACE, DNS_NAME) if address else []
    state = (f"{', '.join(address) or 'no address'}, announced on {', '.join(on) or 'nothing'}, "
             f"{'answers' if answer else 'no answer'}")
    if answer is None or layout.ctlplane.bridge not in on:
        rc = 3
    print(f"{'dns ' + layout.dataplane_dns_ip:<28} {state}")
    return rc


def _ready(workload: dict[str, Any]) -> str:
    st = workload.get("status", {})
    if workload["kind"] == "DaemonSet":
        want, have = st.get("desiredNumberScheduled", 0), st.get("numberReady", 0)
    else:
        want, have = workload.get("spec", {}).get("replicas", 1), st.get("readyReplicas", 0)
    return f"{'ready' if want and have >= want else 'not ready'} ({have}/{want})"


def run(command: str) -> int:
    try:
        env = Environment.from_os()
        if command == "start":
            return start(env)
        return status(env)
    except (StartError, KubectlError, network.LayoutError, envfile.EnvFileError) as e:
        print(f"{PROG}: {e}", file=sys.stderr, flush=True)
        return 1

