"""libvirt's configuration on an EDPM compute: the modular daemons, qemu, SASL,
TLS, the node's firewall rules and the Ceph secrets libvirt keeps.

The `libvirt` service lays these out as upstream's EDPM role does: the
daemons' and qemu's files in /etc/libvirt, SASL's in /etc/sasl2, the rules in
/var/lib/edpm-config/firewall, certificates in /etc/pki, Ceph secrets where
libvirt's secret daemon keeps them (/etc/libvirt/secrets).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from components.settings.model import LIBVIRT_LOG_FILTERS, QEMU_MAX_FILES, QEMU_MAX_PROCESSES, VIRTLOGD_LOG_FILTERS

from .engine import render

# The daemons a compute runs, one config file each.
LIBVIRT_DAEMONS = ("virtlogd", "virtnodedevd", "virtproxyd", "virtqemud", "virtsecretd")
SASL_CONF = "sasl2-libvirt.conf"  # /etc/sasl2/libvirt.conf on the node
FIREWALL_RULES = "libvirt-firewall.yaml"  # /var/lib/edpm-config/firewall/libvirt.yaml
AUTH_CONF = "auth.conf"  # /etc/libvirt/auth.conf; secret
PASSWORD_FILE = "LibvirtPassword"  # the key of upstream's libvirt-secret; stays on the controller
TLS_CERT, TLS_KEY, TLS_CA = "tls.crt", "tls.key", "ca.crt"  # as in upstream's certificate directory

# Who migrates to a peer's TLS listener: SASL user "migration" in realm "openstack".
SASL_USER, SASL_REALM = "migration", "openstack"
# Ports the node's firewall opens (upstream's rules): VNC consoles, qemu's
# migration streams (also qemu.conf's range), libvirt's TLS listener.
VNC_PORTS = (5900, 6923)
MIGRATION_PORTS = (61152, 61215)
TLS_PORT = 16514

# Ceph's cephx keys: base64 of 28 bytes (what upstream's role accepts).
_CEPHX_KEY = re.compile(r"^[A-Za-z0-9+/]{38}==$")
_FSID = re.compile(r"^\s*fsid\s*=\s*(\S+)\s*$", re.M)
_KEY = re.compile(r"^\s*key\s*=\s*(\S+)\s*$", re.M)


def _daemon_conf(daemon: str, tls: bool, log_filters: str) -> str:
    if daemon == "virtlogd":
        return render("libvirt/virtlogd.conf.j2", log_filters=VIRTLOGD_LOG_FILTERS)
    # qemu's daemon logs to the journal, the others to their own file
    log_outputs = "2:journald" if daemon == "virtqemud" else f"1:file:/var/log/libvirt/{daemon}.log"
    return render("libvirt/modular-daemon.conf.j2", daemon=daemon, log_filters=log_filters,
                  log_outputs=log_outputs, tls=tls)


def _ports(ports: tuple[int, int]) -> str:
    return f"{ports[0]}-{ports[1]}"


def firewall_rules(*, tls: bool) -> str:
    """The node's inbound rules for libvirt, as edpm_nftables reads them."""
    rules = [{"name": "005 Allow vnc access on all networks.", "ports": _ports(VNC_PORTS)},
             {"name": "006 Allow libvirt live migration traffic", "ports": _ports(MIGRATION_PORTS)}]
    if tls:
        rules.append({"name": "007 Allow libvirt tls", "ports": str(TLS_PORT)})
    return render("libvirt/firewall.yaml.j2", rules=rules)


def libvirt_config_files(*, tls: bool, qemu_max_processes: int = QEMU_MAX_PROCESSES,
                         qemu_max_files: int = QEMU_MAX_FILES,
                         log_filters: str = LIBVIRT_LOG_FILTERS) -> dict[str, str]:
    """File name -> content of a compute's libvirt files that hold no secret."""
    files = {f"{daemon}.conf": _daemon_conf(daemon, tls, log_filters) for daemon in LIBVIRT_DAEMONS}
    files["qemu.conf"] = render("libvirt/qemu.conf.j2", migration_ports=MIGRATION_PORTS,
                                max_processes=qemu_max_processes, max_files=qemu_max_files)
    files[SASL_CONF] = render("libvirt/sasl2-libvirt.conf.j2")
    files[FIREWALL_RULES] = firewall_rules(tls=tls)
    return files


def libvirt_secret_files(password: str, *, tls: bool) -> dict[str, str]:
    """File name -> content of a compute's secret libvirt files: auth.conf (the
    credentials when TLS is on) and, with TLS, the password for SASL's database."""
    auth = render("libvirt/auth.conf.j2", tls=tls, authname=f"{SASL_USER}@{SASL_REALM}", password=password)
    return {AUTH_CONF: auth, **({PASSWORD_FILE: password} if tls else {})}


class CephSecretError(ValueError):
    """The Ceph client files do not name a cluster and key libvirt can keep."""


@dataclass(frozen=True)
class CephSecret:
    """The libvirt secret of one Ceph cluster: its fsid, whose key it holds."""

    cluster: str
    fsid: str
    user: str
    key: str

    @property
    def usage(self) -> str:
        return f"{self.cluster}.client.{self.user} secret"


def _user_of(cluster: str, keyrings: Mapping[str, str]) -> str:
    """The cephx user whose key libvirt keeps for `cluster`: its only one, or `openstack`."""
    users = sorted(name.split(".")[2] for name in keyrings if name.split(".")[0] == cluster)
    if len(users) == 1:
        return users[0]
    if "openstack" in users:
        return "openstack"
    found = ", ".join(f"{cluster}.client.{u}.keyring" for u in users) or "none"
    raise CephSecretError(f"libvirt keeps one key per Ceph cluster; {cluster}.conf has "
                          f"{'several keyrings' if users else 'no keyring'} ({found}): give it "
                          f"{cluster}.client.<user>.keyring for one user, or one for user openstack")


def ceph_secrets(files: Mapping[str, str]) -> list[CephSecret]:
    """The libvirt secrets of the Ceph client files (`<cluster>.conf` with its
    fsid, `<cluster>.client.<user>.keyring` with the user's key), as upstream's
    role finds them among the files of the ceph-client service."""
    keyrings = {name: text for name, text in files.items()
                if name.endswith(".keyring") and len(name.split(".")) == 4 and name.split(".")[1] == "client"}
    result = []
    for name in sorted(n for n in files if n.endswith(".conf")):
        cluster = name[:-len(".conf")].split(".")[0]
        fsids = _FSID.findall(files[name])
        if len(fsids) != 1:
            raise CephSecretError(f"{name} must set fsid once (the Ceph cluster's id, libvirt's secret's uuid); "
                                  f"it sets it {len(fsids)} times")
        try:
            fsid = str(uuid.UUID(fsids[0]))
        except ValueError:
            raise CephSecretError(f"{name}: fsid {fsids[0]} is not a UUID") from None
        user = _user_of(cluster, keyrings)
        keyring = f"{cluster}.client.{user}.keyring"
        keys = _KEY.findall(keyrings[keyring])
        if len(keys) != 1 or not _CEPHX_KEY.match(keys[0]):
            # the key's text stays out of the message
            raise CephSecretError(f"{keyring} must hold one cephx key (key = <40 characters of base64>)")
        result.append(CephSecret(cluster=cluster, fsid=fsid, user=user, key=keys[0]))
    fsids = [s.fsid for s in result]
    if len(set(fsids)) != len(fsids):
        raise CephSecretError(f"two Ceph clusters share an fsid: {', '.join(sorted(fsids))}")
    return result


def ceph_secret_files(secrets: list[CephSecret]) -> tuple[dict[str, str], dict[str, str]]:
    """(public, secret) files of libvirt's secrets: `secret-<fsid>.xml`, its
    definition, and `secret-<fsid>.base64`, its value, as libvirt stores them."""
    public = {f"secret-{s.fsid}.xml": render("libvirt/secret.xml.j2", uuid=s.fsid, usage=s.usage) for s in secrets}
    # libvirt keeps the value base64-encoded, which a cephx key already is; no newline
    secret = {f"secret-{s.fsid}.base64": s.key for s in secrets}
    return public, secret
