"""A small copy of the environment's network in network namespaces of its own, to try the
host's boundary (devenv/dataplane/boundary.py) with the kernel's own conntrack and NAT.

    node (eth0 192.168.122.101, default route via the host)
      |  novaedpm0 192.168.122.1/24
    host: forwards; a kube-proxy stand-in DNATs a ClusterIP and a LoadBalancer address to the
      |   pod, and a ClusterIP to the host itself (as the API server's); the boundary's table
      |  novapods0 10.244.0.1/24, and 192.168.123.1 (the node IP) on a bridge of its own
    pod (eth0 10.244.0.7, default route via the host)

The node finds the LoadBalancer address on its link by a static neighbour entry (MetalLB's
speaker answers ARP for it in the environment). Nothing here touches the host's own network:
every interface lives in the lab's namespaces, which `close` deletes.
"""

from __future__ import annotations

import os
import subprocess
import textwrap
import time
from dataclasses import dataclass, field

POD_IP = "10.244.0.7"
NODE_IP = "192.168.122.101"
HOST_NODE_IP = "192.168.123.1"  # the Kubernetes node's own address
CLUSTER_IP = "10.96.0.50"  # a Service whose endpoint is the pod
API_CLUSTER_IP = "10.96.0.1"  # a Service whose endpoint is the host (kube-apiserver)
LB_IP = "192.168.122.80"

_LISTEN = textwrap.dedent("""
    import socket, sys
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", int(sys.argv[1])))
    s.listen(16)
    print("listening", flush=True)
    while True:
        c, _ = s.accept()
        c.sendall(b"hello")
        c.close()
""")
_CONNECT = textwrap.dedent("""
    import socket, sys
    try:
        with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=float(sys.argv[3])) as c:
            sys.exit(0 if c.recv(5) == b"hello" else 1)
    except OSError:
        sys.exit(1)
""")


@dataclass
class Lab:
    prefix: str = field(default_factory=lambda: f"nbt{os.getpid()}")
    servers: list[subprocess.Popen[str]] = field(default_factory=list)

    def ns(self, role: str) -> str:
        return f"{self.prefix}-{role}"

    def ip(self, role: str, *args: str) -> None:
        subprocess.run(["ip", "-n", self.ns(role), *args], check=True, capture_output=True, text=True)

    def run(self, role: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["ip", "netns", "exec", self.ns(role), *args], input=stdin, capture_output=True,
                              text=True, check=False)

    def open(self) -> Lab:
        for role in ("host", "node", "pod"):
            subprocess.run(["ip", "netns", "add", self.ns(role)], check=True)
            self.ip(role, "link", "set", "lo", "up")
        for bridge, address in (("novaedpm0", "192.168.122.1/24"), ("novapods0", "10.244.0.1/24"),
                                ("novak8s0", f"{HOST_NODE_IP}/32")):
            self.ip("host", "link", "add", bridge, "type", "bridge")
            self.ip("host", "addr", "add", address, "dev", bridge)
            self.ip("host", "link", "set", bridge, "up")
        for role, bridge, address, gateway in (("node", "novaedpm0", f"{NODE_IP}/24", "192.168.122.1"),
                                               ("pod", "novapods0", f"{POD_IP}/24", "10.244.0.1")):
            self.ip("host", "link", "add", f"v-{role}", "type", "veth", "peer", "name", "eth0", "netns",
                    self.ns(role))
            self.ip("host", "link", "set", f"v-{role}", "master", bridge, "up")
            self.ip(role, "addr", "add", address, "dev", "eth0")
            self.ip(role, "link", "set", "eth0", "up")
            self.ip(role, "route", "add", "default", "via", gateway)
        self.run("host", "sysctl", "-qw", "net.ipv4.ip_forward=1").check_returncode()
        mac = self.run("host", "cat", "/sys/class/net/novaedpm0/address").stdout.strip()
        self.ip("node", "neigh", "replace", LB_IP, "lladdr", mac, "dev", "eth0", "nud", "permanent")
        return self

    def kube_proxy(self) -> None:
        """What kube-proxy's DNAT does for the addresses here (prerouting only: from outside)."""
        rules = textwrap.dedent(f"""
            table ip stand-in-kube-proxy {{
                chain prerouting {{
                    type nat hook prerouting priority dstnat; policy accept;
                    ip daddr {CLUSTER_IP} tcp dport 80 dnat to {POD_IP}:8080
                    ip daddr {LB_IP} tcp dport 80 dnat to {POD_IP}:8080
                    ip daddr {API_CLUSTER_IP} tcp dport 443 dnat to {HOST_NODE_IP}:6443
                }}
            }}
        """)
        self.nft(rules).check_returncode()

    def masquerade_pods(self) -> None:
        """The CNI bridge's ipMasq: the pods' traffic leaves with the host's address."""
        self.nft(textwrap.dedent("""
            table ip stand-in-cni {
                chain postrouting {
                    type nat hook postrouting priority srcnat; policy accept;
                    ip saddr 10.244.0.0/24 ip daddr != 10.244.0.0/24 masquerade
                }
            }
        """)).check_returncode()

    def nft(self, script: str) -> subprocess.CompletedProcess[str]:
        return self.run("host", "nft", "-f", "-", stdin=script)

    def listen(self, role: str, port: int) -> None:
        server = subprocess.Popen(["ip", "netns", "exec", self.ns(role), "python3", "-c", _LISTEN, str(port)],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.servers.append(server)
        assert server.stdout is not None and server.stdout.readline().strip() == "listening"

    def connects(self, role: str, address: str, port: int, timeout: float = 1.5) -> bool:
        return self.run(role, "python3", "-c", _CONNECT, address, str(port), str(timeout)).returncode == 0

    def close(self) -> None:
        for server in self.servers:
            server.kill()
            server.wait()
        for role in ("node", "pod", "host"):
            subprocess.run(["ip", "netns", "del", self.ns(role)], capture_output=True, check=False)
        time.sleep(0.05)
