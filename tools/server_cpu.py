"""Where a server runs and the CPU its hypervisor gives it: nova's view (the host
and the libvirt domain of `openstack server show`) checked against the node's
own (the domain's XML from the node's libvirt).

    python -m tools.server_cpu SERVER [--namespace openstack]

prints one line, e.g.

    server demo: host edpm-compute-0, domain instance-00000001 running, cpu mode custom, model Nehalem

Runs against the local environment: openstack in the namespace's
openstackclient pod, virsh on the node through devenv/ssh.sh.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class ServerCpu:
    server: str
    host: str
    domain: str
    state: str
    mode: str
    model: str | None

    def line(self) -> str:
        model = f", model {self.model}" if self.model else ""
        return (f"server {self.server}: host {self.host}, domain {self.domain} {self.state}, "
                f"cpu mode {self.mode}{model}")


def domain_cpu(xml: str) -> tuple[str, str | None]:
    """(mode, model) of a libvirt domain's <cpu>: libvirt's default mode when it names none."""
    cpu = ET.fromstring(xml).find("cpu")
    if cpu is None:
        return "none", None
    model = cpu.find("model")
    return cpu.get("mode", "custom"), model.text if model is not None else None


def _run(*args: str) -> str:
    proc = subprocess.run(list(args), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"server_cpu: {' '.join(args[:4])} ... failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def show(server: str, namespace: str = "openstack") -> ServerCpu:
    shown = json.loads(_run("kubectl", "exec", "-n", namespace, "deploy/openstackclient", "--",
                            "openstack", "server", "show", server, "-f", "json"))
    host, domain = shown["OS-EXT-SRV-ATTR:host"], shown["OS-EXT-SRV-ATTR:instance_name"]
    if not host:
        raise SystemExit(f"server_cpu: server {server} has no host (status {shown['status']})")
    ssh = str(ROOT / "devenv" / "ssh.sh")
    state = _run(ssh, host, f"virsh -c qemu:///system domstate {domain}").strip()
    mode, model = domain_cpu(_run(ssh, host, f"virsh -c qemu:///system dumpxml {domain}"))
    return ServerCpu(server, host, domain, state, mode, model)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("server")
    parser.add_argument("--namespace", default="openstack")
    args = parser.parse_args(argv)
    print(show(args.server, args.namespace).line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
