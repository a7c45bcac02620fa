"""libvirt: the config of libvirt's modular daemons and qemu in /etc/libvirt,
the node's firewall rules for VNC and migration (for edpm_nftables), SASL's
credentials of the migration user and, with a node set's tlsEnabled, the
node's certificate; and a libvirt secret per Ceph cluster of the node set's
Ceph client files (what nova's rbd_secret_uuid names).

Its stack part is `LibvirtSecrets`: the SASL password (libvirt-secret) and,
for node sets with TLS, the CA and each node's certificate.
"""

from __future__ import annotations

from typing import Any

import pulumi

from components.edpm.context import NodeSetContext, StackContext
from components.edpm.service import EdpmService, RunInputs, derive
from components.edpm.services import ceph_client
from components.libvirt import LibvirtFiles, LibvirtSecrets
from components.render import (
    TLS_CA,
    TLS_CERT,
    CephSecretError,
    ceph_secret_files,
    ceph_secrets,
    libvirt_config_files,
    libvirt_secret_files,
)
from components.settings import LIBVIRT, Node, ServiceSpec

NAME = LIBVIRT  # named with the settings, whose tlsEnabled covers the nodes that run it

_PUBLIC_TLS = (TLS_CERT, TLS_CA)  # a node's certificate and its CA's: no secret


def _stack(stack: StackContext) -> LibvirtFiles:
    dataplane = stack.settings.dataplane
    return LibvirtSecrets("libvirt", stack.target, dataplane.libvirt.password, [n for _, n in dataplane.tls_nodes],
                          opts=stack.in_namespace()).files


def _ceph_files(where: str, secret: dict[str, str], public: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(public, secret) files of the libvirt secrets of a node set's Ceph client files."""
    try:
        return ceph_secret_files(ceph_secrets({**secret, **public}))
    except CephSecretError as err:
        raise pulumi.RunError(f"{where}: {err}") from None


def _secret_files(tls: bool, password: str, node_certs: dict[str, str], ceph: Any) -> dict[str, str]:
    keys = {k: v for k, v in node_certs.items() if k not in _PUBLIC_TLS}
    return {**libvirt_secret_files(password, tls=tls), **keys, **ceph[1]}


def _public_files(tls: bool, qemu_max_processes: int, qemu_max_files: int, log_filters: str,
                  node_certs: dict[str, str], ceph: Any) -> dict[str, str]:
    """Shown in preview: the config, the certificates (not their keys) and the Ceph secrets'
    definitions (a cluster's fsid, also nova's rbd_secret_uuid); never a key."""
    shown = {k: v for k, v in node_certs.items() if k in _PUBLIC_TLS}
    config = libvirt_config_files(tls=tls, qemu_max_processes=qemu_max_processes, qemu_max_files=qemu_max_files,
                                  log_filters=log_filters)
    return {**config, **shown, **ceph[0]}


def _node_inputs(context: NodeSetContext, node: Node) -> RunInputs:
    node_set = context.node_set
    tls = node_set.tls_enabled
    stack: LibvirtFiles = context.stack
    if tls and node.name not in stack.tls:
        raise pulumi.RunError(f"{node.name}: its node set has TLS, but the stack issued it no libvirt certificate")
    # with TLS, a node's certificate is its own; without, every node of the node set gets the same files
    certs: Any = stack.tls[node.name] if tls else {}
    ceph: Any = ({}, {})
    if ceph_client.NAME in node_set.services:
        where = f"openstack-nova:extraMounts: the Ceph client files of node set {node_set.name}"
        ceph = derive(_ceph_files, where, *context.mounted.of(ceph_client.NAME))
    return RunInputs(files=derive(_secret_files, tls, stack.password, certs, ceph, secret=True),
                     public_files=derive(_public_files, tls, node_set.qemu_max_processes, node_set.qemu_max_files,
                                         node_set.libvirt_log_filters, certs, ceph, secret=False),
                     variables={"edpm_libvirt_tls_certs_enabled": tls})


SPEC = ServiceSpec(name=NAME, playbook="libvirt.yml", order=40, default=True)
SERVICE = EdpmService(SPEC, stack=_stack, node_inputs=_node_inputs)
