"""The data plane's DNS, as upstream's infra-operator DNSMasq serves it: dnsmasq answers the
name of every LoadBalancer Service of the cluster that carries the annotation
dnsmasq.network.openstack.org/hostname with the Service's LoadBalancer addresses (upstream,
its ServiceReconciler writes them into a DNSData that dnsmasq loads). Hostnames that share
an address are one line of the hosts file, as upstream merges them into one entry.

The program of the dnsmasq-dns pod (devenv/dataplane/manifests.py mounts it from a
ConfigMap; the image's python3 and its standard library alone). It asks the API server for
the cluster's Services every INTERVAL seconds with the pod's service-account token, writes
the hosts file (atomically) when the records change and sends dnsmasq SIGHUP, which reads
it again. dnsmasq starts once the first hosts file is written, so the pod is ready (its port
answers) only with the records of the moment. It exits non-zero when dnsmasq dies, and the
kubelet starts it again.

    python3 dnsmasq_hosts.py --hosts-file=/run/dataplane-dns/hosts [--port=5353] [--interval=2]
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

HOSTNAME_ANNOTATION = "dnsmasq.network.openstack.org/hostname"
DNS_PORT = 5353  # upstream's container port (infra-operator internal/dnsmasq/const.go)
INTERVAL = 2.0
DNSMASQ = "/usr/sbin/dnsmasq"
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
_HOSTNAME = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")

Records = dict[str, tuple[str, ...]]  # address -> its names, sorted


def hostname(value: str) -> str | None:
    """The annotation's name as dnsmasq is given it (lower case, no final dot), or None when
    it is no host name (nothing else gets into the hosts file)."""
    name = value.strip().lower().removesuffix(".")
    return name if len(name) <= 253 and _HOSTNAME.match(name) else None


def _address(value: Any) -> str | None:
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        return None


def records(services: Iterable[Mapping[str, Any]]) -> Records:
    """Address -> names, of the annotated LoadBalancer Services with addresses."""
    names: dict[str, set[str]] = {}
    for service in services:
        name = _annotated_name(service)
        if name is None:
            continue
        for ingress in (service.get("status") or {}).get("loadBalancer", {}).get("ingress") or []:
            address = _address(ingress.get("ip"))
            if address:
                names.setdefault(address, set()).add(name)
    return {address: tuple(sorted(found)) for address, found in names.items()}


def _annotated_name(service: Mapping[str, Any]) -> str | None:
    if (service.get("spec") or {}).get("type") != "LoadBalancer":
        return None
    value = ((service.get("metadata") or {}).get("annotations") or {}).get(HOSTNAME_ANNOTATION)
    return hostname(value) if isinstance(value, str) else None


def rejected(services: Iterable[Mapping[str, Any]]) -> list[str]:
    """namespace/name of the LoadBalancer Services whose annotation is no host name."""
    found = []
    for service in services:
        meta = service.get("metadata") or {}
        value = (meta.get("annotations") or {}).get(HOSTNAME_ANNOTATION)
        if value is not None and (service.get("spec") or {}).get("type") == "LoadBalancer" \
                and _annotated_name(service) is None:
            found.append(f"{meta.get('namespace')}/{meta.get('name')}: {value!r}")
    return sorted(found)


def hosts_text(found: Records) -> str:
    """The hosts file: one line per address (IPv4 first, in address order), its names sorted."""
    def key(address: str) -> tuple[int, int]:
        ip = ipaddress.ip_address(address)
        return ip.version, int(ip)

    lines = [f"{address} {' '.join(found[address])}\n" for address in sorted(found, key=key) if found[address]]
    return "".join(lines)


def dnsmasq_command(dnsmasq: str, hosts_file: str, port: int) -> list[str]:
    """dnsmasq in the foreground, logging to stderr, as upstream runs it: no upstream server,
    no /etc/hosts, no resolv.conf; the hosts file is all it knows. Every interface (upstream's
    --interface=*: any client, not only the pod's own subnet), no pid file (not root)."""
    return [dnsmasq, "--keep-in-foreground", f"--port={port}", "--interface=*", "--no-resolv", "--no-hosts",
            "--domain-needed", "--bogus-priv", f"--addn-hosts={hosts_file}", "--pid-file=",
            "--log-facility=-", "--log-queries"]


def write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.chmod(0o644)
    os.replace(tmp, path)


def changes(before: Records, after: Records) -> list[str]:
    """What a new hosts file adds and removes, one line each, for the log."""
    old = {(a, n) for a, names in before.items() for n in names}
    new = {(a, n) for a, names in after.items() for n in names}
    return [f"+ {n} {a}" for a, n in sorted(new - old)] + [f"- {n} {a}" for a, n in sorted(old - new)]


class Process(Protocol):
    def poll(self) -> int | None: ...
    def send_signal(self, sig: int) -> None: ...
    def terminate(self) -> None: ...
    def wait(self, timeout: float | None = None) -> int: ...


class Syncer:
    """One poll at a time (`step`): the records from the API, the hosts file, dnsmasq."""

    def __init__(self, hosts_file: Path, list_services: Callable[[], list[dict[str, Any]]],
                 start: Callable[[], Process], log: Callable[[str], None]) -> None:
        self.hosts_file = hosts_file
        self.list_services = list_services
        self.start = start
        self.log = log
        self.records: Records | None = None
        self.dnsmasq: Process | None = None
        self.reported: list[str] = []

    def step(self) -> int | None:
        """Polls once; an exit status when dnsmasq has died, else None."""
        try:
            services = self.list_services()
        except (OSError, ValueError) as e:  # URLError is an OSError, a bad body a ValueError
            self.log(f"listing the cluster's Services failed: {e}")
        else:
            self._update(services)
        if self.dnsmasq is not None:
            status = self.dnsmasq.poll()
            if status is not None:
                self.log(f"dnsmasq exited with status {status}")
                return status or 1
        return None

    def _update(self, services: list[dict[str, Any]]) -> None:
        found = records(services)
        bad = rejected(services)
        if bad != self.reported:
            for line in bad:
                self.log(f"ignored, its {HOSTNAME_ANNOTATION} is no host name: {line}")
            self.reported = bad
        if found == self.records:
            return
        write_atomically(self.hosts_file, hosts_text(found))
        for line in changes(self.records or {}, found):
            self.log(line)
        self.records = found
        if self.dnsmasq is None:
            self.dnsmasq = self.start()
            self.log(f"dnsmasq started with {len(found)} addresses")
        else:
            self.dnsmasq.send_signal(signal.SIGHUP)

    def stop(self) -> None:
        if self.dnsmasq is not None and self.dnsmasq.poll() is None:
            self.dnsmasq.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.dnsmasq.wait(timeout=5)


class ApiClient:
    """The cluster's Services, asked as the pod's service account (its token is read at each
    poll: the kubelet renews it)."""

    def __init__(self, host: str, port: str, account: Path = SERVICE_ACCOUNT) -> None:
        self.url = f"https://{f'[{host}]' if ':' in host else host}:{port}/api/v1/services"
        self.account = account
        self.context = ssl.create_default_context(cafile=str(account / "ca.crt"))

    @classmethod
    def in_cluster(cls) -> ApiClient:
        host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
        if not host or not port:
            raise RuntimeError("KUBERNETES_SERVICE_HOST/PORT are not set: not in a pod?")
        return cls(host, port)

    def list_services(self) -> list[dict[str, Any]]:
        token = (self.account / "token").read_text().strip()
        request = urllib.request.Request(self.url, headers={"Authorization": f"Bearer {token}",
                                                            "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=10) as response:
                body = json.load(response)
        except urllib.error.HTTPError as e:
            raise OSError(f"HTTP {e.code} from {self.url}") from None
        items = body.get("items") if isinstance(body, dict) else None
        if not isinstance(items, list):
            raise ValueError(f"{self.url} gave no list of items")
        return [item for item in items if isinstance(item, dict)]


def _log(message: str) -> None:
    print(f"dataplane-dns: {message}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--hosts-file", type=Path, required=True)
    parser.add_argument("--port", type=int, default=DNS_PORT)
    parser.add_argument("--interval", type=float, default=INTERVAL)
    parser.add_argument("--dnsmasq", default=DNSMASQ)
    args = parser.parse_args(argv)
    api = ApiClient.in_cluster()
    command = dnsmasq_command(args.dnsmasq, str(args.hosts_file), args.port)
    syncer = Syncer(args.hosts_file, api.list_services, lambda: subprocess.Popen(command), _log)
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, frame: stopping.append(signum))
    signal.signal(signal.SIGINT, lambda signum, frame: stopping.append(signum))
    try:
        while not stopping:
            status = syncer.step()
            if status is not None:
                return status
            deadline = time.monotonic() + args.interval
            while not stopping and time.monotonic() < deadline:
                time.sleep(0.1)
    finally:
        syncer.stop()
    _log("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
