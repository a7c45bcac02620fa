"""A server's noVNC console as a user's browser opens it, from inside the cluster: the
console URL nova hands out, the WebSocket of the cell's proxy opened with it (by
novnc_client.py, a standard-library client run in the openstackclient pod), the VNC
server the proxy connected to (its log), and the guest's VNC port on its node."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.integration.local_env import kubectl_json, node, openstack, run

CLIENT = Path(__file__).with_name("novnc_client.py")
# websockify's log line as nova's proxy connects to the VNC server a token names
_CONNECTING = re.compile(r"connecting to: \[?([^\s\]]+?)\]?:(\d+)\s*$", re.M)


@dataclass(frozen=True)
class ProxyReply:
    """What the proxy answered a WebSocket upgrade with, and the first bytes it relayed."""

    target: str
    status: int | None
    protocol: str | None
    accepted: bool  # Sec-WebSocket-Accept matched the key (RFC 6455)
    frames: list[str]  # the frames' kinds, e.g. ["binary"]
    data: bytes
    close: dict[str, Any] | None  # the proxy's close frame, when it closed first

    @property
    def greeting(self) -> str:
        return self.data.decode("latin-1")


def novnc_url(server: str, namespace: str = "openstack") -> str:
    """The server's noVNC console URL (`openstack console url show --novnc`)."""
    return str(openstack("console", "url", "show", "--novnc", server, namespace=namespace)["url"])


def open_through_proxy(console_url: str, namespace: str = "openstack") -> ProxyReply:
    """The WebSocket the console page at `console_url` opens, opened from the namespace's
    openstackclient pod: the proxy's answer and the first 12 bytes (an RFB greeting) it relays."""
    proc = run("kubectl", "exec", "-i", "-n", namespace, "deploy/openstackclient", "--", "python3", "-", console_url,
               input=CLIENT.read_text())
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return ProxyReply(target=out["target"], status=out["status"], protocol=out["headers"].get("sec-websocket-protocol"),
                      accepted=out["accepted"], frames=out["frames"], data=out["data"].encode("latin-1"),
                      close=out["close"])


def proxy_connections(service: str, since: str, namespace: str = "openstack") -> list[tuple[str, int]]:
    """(address, port) of each VNC server the pods behind a proxy's Service connected to since
    `since` (RFC 3339), from their logs."""
    selector = kubectl_json("get", "service", "-n", namespace, service)["spec"]["selector"]
    labels = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
    logs = run("kubectl", "logs", "-n", namespace, "-l", labels, f"--since-time={since}", "--tail=-1").stdout
    return [(address, int(port)) for address, port in _CONNECTING.findall(logs)]


def vnc_port(name: str, domain: str) -> int:
    """The TCP port of the libvirt domain's VNC server on node `name` (`virsh vncdisplay`: display
    N, e.g. `[::]:0` or `:0`, listens on 5900 + N)."""
    display = node(name, f"virsh -c qemu:///system vncdisplay {domain}").stdout.strip()
    found = re.search(r":(\d+)$", display)
    assert found, f"{name}: no VNC display for {domain}: {display!r}"
    return 5900 + int(found.group(1))


def proxyclient_address(name: str) -> str:
    """The address the node's nova-compute gives the proxy for its guests' VNC servers:
    server_proxyclient_address is $my_ip, which 02-nova-host-specific.conf sets to the node's
    ctlplane address."""
    conf = node(name, "cat /var/lib/openstack/nova/02-nova-host-specific.conf").stdout
    found = re.search(r"^my_ip\s*=\s*(\S+)", conf, re.M)
    assert found, f"{name}: no my_ip in 02-nova-host-specific.conf:\n{conf}"
    return found.group(1)
