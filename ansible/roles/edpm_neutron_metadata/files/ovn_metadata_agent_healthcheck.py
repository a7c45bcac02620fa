#!/usr/bin/python3
"""Health check of the ovn_metadata_agent container.

podman runs it in the container (`--health-cmd /openstack/healthcheck`, the
host's /var/lib/openstack/healthchecks/ovn_metadata_agent mounted at
/openstack). The container shares the host's PID and network namespaces, so
/proc shows the agent wherever it runs. The agent is healthy when:

- a neutron-ovn-metadata-agent process runs;
- one of its processes listens on the metadata proxy socket, where each
  network's haproxy sends the instances' requests ([DEFAULT]
  metadata_proxy_socket, by default $state_path/metadata_proxy);
- its processes hold an established connection to each OVSDB it works with:
  the node's Open vSwitch database ([ovs] ovsdb_connection) and the OVN
  southbound database ([ovn] ovn_sb_connection), any one member of a
  clustered database. Unix-socket connections cannot be told apart from the
  outside and are not checked.

The options are read where the agent reads them: the *.conf files of its
config directory in name order, later files winning. Prints one line, what is
wrong or "healthy: ..."; exits 0 when healthy, 1 otherwise.

Usage: healthcheck [--proc DIR] [--config-dir DIR]
Python 3.7 or later, standard library only: it runs with the image's python.
"""

from __future__ import annotations

import argparse
import configparser
import ipaddress
import os
import socket
import sys
from pathlib import Path

AGENT = "neutron-ovn-metadata-agent"
# neutron's defaults of the options the check reads
DEFAULTS = {
    ("DEFAULT", "state_path"): "/var/lib/neutron",
    ("DEFAULT", "metadata_proxy_socket"): "$state_path/metadata_proxy",
    ("ovs", "ovsdb_connection"): "tcp:127.0.0.1:6640",
    ("ovn", "ovn_sb_connection"): "tcp:127.0.0.1:6642",
}
TCP_ESTABLISHED = "01"
UNIX_LISTENING = 0x00010000  # __SO_ACCEPTCON in /proc/net/unix's flags


class UnhealthyError(Exception):
    """What shows the agent unhealthy."""


def is_agent(argv: list[str]) -> bool:
    """Whether a command line runs the agent: its script under a python, the script itself,
    or a worker whose title names it ("neutron-ovn-metadata-agent: ...")."""
    if not argv or not argv[0]:
        return False
    first = os.path.basename(argv[0].split(" ")[0]).rstrip(":")
    if first == AGENT:
        return True
    return first.startswith("python") and len(argv) > 1 and os.path.basename(argv[1]) == AGENT


def agent_pids(proc: Path) -> list[str]:
    """The agent's processes (its parent and its workers)."""
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if is_agent(argv):
            found.append(entry.name)
    return sorted(found, key=int)


def socket_inodes(proc: Path, pids: list[str]) -> set[str]:
    """The inodes of the sockets the processes hold open."""
    inodes = set()
    for pid in pids:
        try:
            fds = list((proc / pid / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(str(fd))
            except OSError:
                continue
            if target.startswith("socket:[") and target.endswith("]"):
                inodes.add(target[len("socket:["):-1])
    return inodes


def agent_options(config_dir: Path) -> dict[tuple[str, str], str]:
    """The options the check needs, as the agent loads them (files in name order, later wins)."""
    options = dict(DEFAULTS)
    for path in sorted(config_dir.glob("*.conf")):
        parser = configparser.ConfigParser(interpolation=None, strict=False, default_section="\0")
        try:
            parser.read_string(path.read_text(), source=str(path))
        except (OSError, configparser.Error) as err:
            raise UnhealthyError(f"cannot read {path}: {err}") from None
        for section, option in DEFAULTS:
            if parser.has_option(section, option):
                options[(section, option)] = parser.get(section, option).strip()
    state_path = options[("DEFAULT", "state_path")]
    socket_path = options[("DEFAULT", "metadata_proxy_socket")]
    options[("DEFAULT", "metadata_proxy_socket")] = socket_path.replace("$state_path", state_path).replace(
        "${state_path}", state_path)
    return options


def _rows(path: Path) -> list[list[str]]:
    """The rows of a /proc/net table, without its header."""
    try:
        return [line.split() for line in path.read_text().splitlines()[1:] if line.strip()]
    except OSError:
        return []


def listening_unix_paths(proc: Path, pid: str, inodes: set[str]) -> set[str]:
    """The paths of the unix sockets among `inodes` that listen for connections."""
    paths = set()
    for row in _rows(proc / pid / "net" / "unix"):
        # Num RefCount Protocol Flags Type St Inode [Path]
        if len(row) >= 8 and row[6] in inodes and int(row[3], 16) & UNIX_LISTENING:
            paths.add(row[7])
    return paths


def _address(hex_address: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]:
    """An address of /proc/net/tcp{,6}: the IP in host-order 32-bit words, then the port."""
    host, port = hex_address.split(":")
    raw = bytes.fromhex(host)
    packed = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    address = ipaddress.ip_address(packed)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address, int(port, 16)


def established_peers(proc: Path, pid: str, inodes: set[str]) -> set[tuple[str, int]]:
    """(address, port) of the established TCP connections among `inodes`."""
    peers = set()
    for table in ("tcp", "tcp6"):
        for row in _rows(proc / pid / "net" / table):
            # sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            if len(row) >= 10 and row[3] == TCP_ESTABLISHED and row[9] in inodes:
                address, port = _address(row[2])
                peers.add((str(address), port))
    return peers


def _tcp_endpoints(connection: str) -> list[tuple[str, int]]:
    """(host, port) of each tcp: entry of an ovsdb connection string."""
    endpoints = []
    for entry in connection.split(","):
        entry = entry.strip()
        if entry.startswith("tcp:"):
            host, _, port = entry[len("tcp:"):].rpartition(":")
            endpoints.append((host.strip("[]"), int(port)))
    return endpoints


def _addresses(host: str, port: int) -> set[str] | None:
    """The addresses `host` stands for; None when it cannot be resolved (match the port alone)."""
    try:
        return {str(ipaddress.ip_address(host))}
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except OSError:
        return None
    return {str(ipaddress.ip_address(info[4][0])) for info in infos}


def connected(connection: str, peers: set[tuple[str, int]]) -> bool:
    """Whether `peers` hold a connection to one of the database's tcp endpoints
    (True when it has none: unix sockets are not checked)."""
    endpoints = _tcp_endpoints(connection)
    if not endpoints:
        return True
    for host, port in endpoints:
        addresses = _addresses(host, port)
        if any(p == port and (addresses is None or a in addresses) for a, p in peers):
            return True
    return False


def check(proc: Path, config_dir: Path) -> str:
    """What shows the agent healthy; raises UnhealthyError with what does not."""
    pids = agent_pids(proc)
    if not pids:
        raise UnhealthyError(f"{AGENT} is not running")
    options = agent_options(config_dir)
    inodes = socket_inodes(proc, pids)
    # Every process of the agent shares one network namespace: read its tables once.
    proxy = options[("DEFAULT", "metadata_proxy_socket")]
    if proxy not in listening_unix_paths(proc, pids[0], inodes):
        raise UnhealthyError(f"{AGENT} (pid {', '.join(pids)}) does not listen on the metadata proxy socket {proxy}")
    peers = established_peers(proc, pids[0], inodes)
    for (section, option), what in ((("ovs", "ovsdb_connection"), "the Open vSwitch database"),
                                    (("ovn", "ovn_sb_connection"), "the OVN southbound database")):
        if not connected(options[(section, option)], peers):
            raise UnhealthyError(f"{AGENT} (pid {', '.join(pids)}) has no connection to {what} "
                            f"({options[(section, option)]}, [{section}] {option})")
    return f"healthy: {AGENT} (pid {', '.join(pids)}) serves {proxy} and is connected to its databases"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--proc", type=Path, default=Path("/proc"))
    parser.add_argument("--config-dir", type=Path, default=Path("/etc/neutron.conf.d"))
    args = parser.parse_args(argv)
    try:
        print(check(args.proc, args.config_dir))
    except UnhealthyError as err:
        print(f"unhealthy: {err}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
