"""Helpers of the network-boundary tests: what a test node resolves and reaches, what its
rendered files name, and which Services the data plane's DNS serves."""

from __future__ import annotations

import ipaddress
import json
import re
import shlex
from functools import cache
from pathlib import Path

import yaml

from components.settings.exposure import parse_range
from components.settings.model import AddressRange
from tests.integration.local_env import ENV, ROOT, kubectl_json, node

HOSTNAME_ANNOTATION = "dnsmasq.network.openstack.org/hostname"
# The rendered files on a node that name the control plane's hosts.
NODE_FILES = ("/var/lib/openstack/nova/*.conf", "/var/lib/openstack/neutron-ovn-metadata-agent/*.conf")
# Options that name a host without a URL around it.
_HOST_OPTIONS = re.compile(r"^\s*(\w*_host)\s*=\s*(\S+)\s*$", re.M)
# scheme://[user[:password]@]host[:port][,more hosts...] in URLs; ovsdb's tcp:|ssl:host:port.
_URL_HOSTS = re.compile(r"\b[a-z][a-z0-9+.-]*://([^/\s?]+)")
_BROWSER_URL = re.compile(r"^\s*\w*base_url\s*=")
_OVSDB_HOST = re.compile(r"\b(?:tcp|ssl):([A-Za-z][A-Za-z0-9.-]*):\d+")


def hosts_named_in(text: str) -> set[str]:
    """The host names (never the credentials beside them) that a config file's text names."""
    # a *_base_url is handed to users' browsers (the console proxies'), never opened by the node
    text = "\n".join(line for line in text.splitlines() if not _BROWSER_URL.match(line))
    found: set[str] = set()
    for authority in _URL_HOSTS.findall(text):
        for part in authority.split(","):
            host = part.rsplit("@", 1)[-1].rsplit(":", 1)[0].strip("[]")
            found.add(host)
    found.update(m.group(2) for m in _HOST_OPTIONS.finditer(text))
    found.update(_OVSDB_HOST.findall(text))
    # "%s" is a template nova fills with a peer compute (live_migration_uri), not a name
    return {h for h in found if h and "%" not in h and not _is_address(h) and h != "localhost"}


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def names_in_node_files(name: str) -> set[str]:
    """The host names in nova-compute's and the metadata agent's rendered files on the node."""
    text = node(name, "cat " + " ".join(NODE_FILES)).stdout
    return hosts_named_in(text)


def resolve_on_node(name: str, host: str) -> list[str]:
    """The IPv4 addresses the node's own resolver gives `host` ([] when it gives none)."""
    out = node(name, f"getent ahostsv4 {shlex.quote(host)}").stdout
    return sorted({line.split()[0] for line in out.splitlines() if line.strip()})


def tcp_connects_from_node(name: str, address: str, port: int, seconds: int = 5) -> bool:
    """Whether a TCP connection from the node to address:port is accepted within `seconds`."""
    probe = node(name, f"timeout {seconds} bash -c {shlex.quote(f'exec 3<>/dev/tcp/{address}/{port}')}")
    return probe.returncode == 0


@cache
def node_internalapi_address(name: str) -> str:
    """The node's address on the internalapi network, as devenv/nodes.sh recorded it."""
    nodes = json.loads((Path(ENV["OPENSTACK_NOVA_ENV"]) / "nodes" / "nodes.json").read_text())
    return str(nodes[name]["internalapi"])


def dev_pools() -> dict[str, list[str]]:
    """The dev stack's LoadBalancer pools (kubernetes.loadBalancerPools)."""
    config = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())["config"]
    return dict(config["openstack-nova:kubernetes"]["loadBalancerPools"])


def in_pool(address: str, ranges: list[str]) -> bool:
    """Whether `address` lies in one of a pool's ranges ("a.b.c.d-e.f.g.h" or a CIDR), as the
    program's own check of a stack's pools reads them."""
    ip = ipaddress.ip_address(address)
    for entry in ranges:
        parsed = parse_range(entry)
        assert isinstance(parsed, AddressRange), parsed
        if ip in parsed:
            return True
    return False


def exposed_services() -> dict[str, list[str]]:
    """What the data plane's DNS is fed from: name -> the LoadBalancer addresses of every Service
    of the cluster that carries the hostname annotation."""
    found: dict[str, list[str]] = {}
    for service in kubectl_json("get", "services", "--all-namespaces")["items"]:
        host = (service["metadata"].get("annotations") or {}).get(HOSTNAME_ANNOTATION)
        if not host or service["spec"].get("type") != "LoadBalancer":
            continue
        ingress = service.get("status", {}).get("loadBalancer", {}).get("ingress") or []
        found[host] = sorted(i["ip"] for i in ingress if i.get("ip"))
    return found
