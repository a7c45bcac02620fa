"""The neutron OVN metadata agent's health check, run against a stand-in /proc
and the agent's config directory as the program renders it."""

from __future__ import annotations

import ast
import ipaddress
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from components.render import AgentLayout, neutron_metadata_agent_files
from components.settings import Ovn

SCRIPT = (Path(__file__).resolve().parents[2] / "ansible" / "roles" / "edpm_neutron_metadata" / "files"
          / "ovn_metadata_agent_healthcheck.py")
LAYOUT = AgentLayout(image="image", sidecar_image="image", sidecar_debug=False,
                     config_dir="/var/lib/openstack/neutron-ovn-metadata-agent", lib_dir="/var/lib/neutron")
SB = "tcp:172.17.0.30:6642,tcp:172.17.0.31:6642"
AGENT = ["/usr/bin/python3", "/usr/bin/neutron-ovn-metadata-agent"]
PROXY = "/var/lib/neutron/metadata_proxy"
ESTABLISHED, TIME_WAIT = "01", "06"


def _hex(address: str, port: int) -> str:
    """An address as /proc/net/tcp{,6} writes it: the IP in host-order 32-bit words."""
    packed = ipaddress.ip_address(address).packed
    words = b"".join(packed[i:i + 4][::-1] for i in range(0, len(packed), 4))
    return f"{words.hex().upper()}:{port:04X}"


@dataclass
class Proc:
    """A stand-in /proc: processes with their sockets, and the network tables they share."""

    root: Path
    tcp: list[str] = field(default_factory=list)
    tcp6: list[str] = field(default_factory=list)
    unix: list[str] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)
    inode: int = 1000

    def process(self, pid: int, argv: list[str], sockets: list[int] | None = None) -> None:
        directory = self.root / str(pid)
        (directory / "fd").mkdir(parents=True)
        (directory / "cmdline").write_bytes("\0".join(argv).encode() + b"\0")
        (directory / "fd" / "0").symlink_to("/dev/null")
        for number, inode in enumerate(sockets or [], start=3):
            (directory / "fd" / str(number)).symlink_to(f"socket:[{inode}]")
        self.pids.append(pid)

    def _next(self) -> int:
        self.inode += 1
        return self.inode

    def connection(self, address: str, port: int, state: str = ESTABLISHED) -> int:
        """A TCP connection from the node to address:port; its inode."""
        inode = self._next()
        table = self.tcp if ipaddress.ip_address(address).version == 4 else self.tcp6
        local = _hex("127.0.0.1" if table is self.tcp else "::1", 40000 + len(table))
        table.append(f"{len(table)}: {local} {_hex(address, port)} {state} 00000000:00000000 00:00000000 "
                     f"00000000 0 0 {inode} 1 0000000000000000 20 4 30 10 -1")
        return inode

    def unix_socket(self, path: str, listening: bool = True) -> int:
        inode = self._next()
        flags, state = ("00010000", "01") if listening else ("00000000", "03")
        self.unix.append(f"0000000000000000: 00000002 00000000 {flags} 0001 {state} {inode} {path}")
        return inode

    def write(self) -> None:
        headers = {"tcp": "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
                          "timeout inode", "unix": "Num       RefCount Protocol Flags    Type St Inode Path"}
        for pid in self.pids:
            net = self.root / str(pid) / "net"
            net.mkdir(exist_ok=True)
            for name, rows in (("tcp", self.tcp), ("tcp6", self.tcp6), ("unix", self.unix)):
                (net / name).write_text("\n".join([headers.get(name, headers["tcp"]), *rows]) + "\n")


@pytest.fixture
def proc(tmp_path: Path) -> Proc:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "self").mkdir()  # not a process: skipped
    return Proc(tmp_path / "proc")


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    """The agent's config directory (/etc/neutron.conf.d in its container) as the program lays it out."""
    directory = tmp_path / "neutron.conf.d"
    directory.mkdir()
    for name, text in neutron_metadata_agent_files(LAYOUT, Ovn(sb_connection=SB)).items():
        if name.endswith(".conf"):
            (directory / name).write_text(text)
    (directory / "05-nova-metadata.conf").write_text("[DEFAULT]\nnova_metadata_host = nova-metadata\n")
    return directory


def _check(proc: Proc, config_dir: Path) -> tuple[int, str]:
    proc.write()
    result = subprocess.run([sys.executable, str(SCRIPT), "--proc", str(proc.root), "--config-dir", str(config_dir)],
                            capture_output=True, text=True, timeout=30, check=False)
    assert result.stderr == ""
    return result.returncode, result.stdout.strip()


def _healthy_agent(proc: Proc, sb: tuple[str, int] = ("172.17.0.31", 6642)) -> None:
    """An agent serving the proxy socket, connected to OVS and to one member of the SB cluster;
    a worker shares the listening socket."""
    listening = proc.unix_socket(PROXY)
    proc.process(100, AGENT, [listening, proc.connection("127.0.0.1", 6640), proc.connection(*sb)])
    proc.process(101, ["neutron-ovn-metadata-agent: metadata worker"], [listening])


def test_the_script_runs_on_the_agent_images_python() -> None:
    # the podified images run python 3.9; nothing newer than 3.7 is used
    ast.parse(SCRIPT.read_text(), feature_version=(3, 7))
    assert SCRIPT.read_text().startswith("#!/usr/bin/python3\n")


def test_an_agent_serving_the_proxy_and_connected_to_its_databases_is_healthy(proc: Proc, config_dir: Path) -> None:
    _healthy_agent(proc)
    proc.process(7, ["/usr/sbin/sshd", "-D"], [proc.connection("192.168.122.1", 22)])
    assert _check(proc, config_dir) == (0, "healthy: neutron-ovn-metadata-agent (pid 100, 101) serves "
                                           f"{PROXY} and is connected to its databases")


def test_no_agent_process_is_unhealthy(proc: Proc, config_dir: Path) -> None:
    # processes that merely name the agent are not the agent
    proc.process(7, ["grep", "neutron-ovn-metadata-agent"])
    proc.process(8, ["tail", "-f", "/var/log/neutron/neutron-ovn-metadata-agent.log"])
    proc.process(9, ["/usr/bin/python3", "/usr/bin/neutron-ovn-metadata-agentx"])
    assert _check(proc, config_dir) == (1, "unhealthy: neutron-ovn-metadata-agent is not running")


@pytest.mark.parametrize("listening", [True, False], ids=["someone else's socket", "not listening"])
def test_an_agent_that_does_not_serve_the_proxy_socket_is_unhealthy(proc: Proc, config_dir: Path,
                                                                      listening: bool) -> None:
    other = proc.unix_socket(PROXY, listening=True)
    own = proc.unix_socket(PROXY, listening=False)
    proc.process(100, AGENT, [*([] if listening else [own]), proc.connection("127.0.0.1", 6640),
                              proc.connection("172.17.0.30", 6642)])
    proc.process(55, ["haproxy"], [other])
    assert _check(proc, config_dir) == (
        1, f"unhealthy: neutron-ovn-metadata-agent (pid 100) does not listen on the metadata proxy socket {PROXY}")


@pytest.mark.parametrize("case", ["no connection", "closing", "someone else's", "another database"])
def test_an_agent_without_a_connection_to_the_southbound_database_is_unhealthy(
        proc: Proc, config_dir: Path, case: str) -> None:
    sockets = [proc.unix_socket(PROXY), proc.connection("127.0.0.1", 6640)]
    if case == "closing":
        sockets.append(proc.connection("172.17.0.30", 6642, state=TIME_WAIT))
    elif case == "someone else's":
        proc.process(55, ["ovn-controller"], [proc.connection("172.17.0.30", 6642)])
    elif case == "another database":
        sockets.append(proc.connection("172.17.0.99", 6642))
    proc.process(100, AGENT, sockets)
    assert _check(proc, config_dir) == (
        1, "unhealthy: neutron-ovn-metadata-agent (pid 100) has no connection to the OVN southbound database "
           f"({SB}, [ovn] ovn_sb_connection)")


def test_an_agent_without_a_connection_to_open_vswitch_is_unhealthy(proc: Proc, config_dir: Path) -> None:
    proc.process(100, AGENT, [proc.unix_socket(PROXY), proc.connection("172.17.0.30", 6642)])
    assert _check(proc, config_dir) == (
        1, "unhealthy: neutron-ovn-metadata-agent (pid 100) has no connection to the Open vSwitch database "
           "(tcp:127.0.0.1:6640, [ovs] ovsdb_connection)")


def test_the_options_are_those_the_agent_loads_last_file_wins(proc: Proc, config_dir: Path) -> None:
    # a customServiceConfig snippet moves the database and the proxy socket
    (config_dir / "25-neutron-metadata-extra.conf").write_text(
        "[DEFAULT]\nstate_path = /srv/neutron\nmetadata_proxy_socket = $state_path/proxy.sock\n"
        "[ovn]\novn_sb_connection = tcp:[fd00::5]:6642\n")
    proc.process(100, AGENT, [proc.unix_socket("/srv/neutron/proxy.sock"),
                              proc.connection("127.0.0.1", 6640), proc.connection("172.17.0.30", 6642)])
    assert _check(proc, config_dir)[1].endswith(
        "no connection to the OVN southbound database (tcp:[fd00::5]:6642, [ovn] ovn_sb_connection)")
    proc.process(101, AGENT, [proc.connection("fd00::5", 6642)])
    assert _check(proc, config_dir)[0] == 0


def test_names_resolve_and_ipv4_over_ipv6_sockets_count(proc: Proc, config_dir: Path) -> None:
    (config_dir / "25-neutron-metadata-extra.conf").write_text("[ovn]\novn_sb_connection = tcp:localhost:6642\n")
    proc.process(100, AGENT, [proc.unix_socket(PROXY), proc.connection("::ffff:127.0.0.1", 6640),
                              proc.connection("127.0.0.1", 6642)])
    assert _check(proc, config_dir)[0] == 0


def test_unix_socket_databases_are_not_checked(proc: Proc, config_dir: Path) -> None:
    (config_dir / "25-neutron-metadata-extra.conf").write_text(
        "[ovs]\novsdb_connection = unix:/run/openvswitch/db.sock\n"
        "[ovn]\novn_sb_connection = unix:/run/ovn/ovnsb_db.sock\n")
    proc.process(100, AGENT, [proc.unix_socket(PROXY)])
    assert _check(proc, config_dir)[0] == 0


def test_an_unreadable_config_is_unhealthy(proc: Proc, config_dir: Path) -> None:
    (config_dir / "25-neutron-metadata-extra.conf").write_text("ovn_sb_connection = x\n")
    _healthy_agent(proc)
    code, out = _check(proc, config_dir)
    assert code == 1 and out.startswith(f"unhealthy: cannot read {config_dir}/25-neutron-metadata-extra.conf")
