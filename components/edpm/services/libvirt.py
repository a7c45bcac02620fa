"""libvirt: the config of libvirt's modular daemons and qemu in /etc/libvirt,
the node's firewall rules for VNC and migration (for edpm_nftables), SASL's
credentials of the migration user and, with a node set's tlsEnabled, the
node's certificate; and a libvirt secret per Ceph cluster of the node set's
Ceph client files (what nova's rbd_secret_uuid names).
"""

from __future__ import annotations

from typing import Any

import pulumi

from components.edpm.context import NodeSetContext
from components.edpm.service import EdpmService, RunInputs
from components.edpm.services import ceph_client
from components.render import (
    TLS_CA,
    TLS_CERT,
    CephSecretError,
    ceph_secret_files,
    ceph_secrets,
    libvirt_config_files,
    libvirt_secret_files,
)
from components.settings import LIBVIRT, Node

NAME = LIBVIRT  # named with the settings, whose tlsEnabled covers the nodes that run it

_PUBLIC_TLS = (TLS_CERT, TLS_CA)  # a node's certificate and its CA's: no secret


def _ceph_secrets(context: NodeSetContext) -> pulumi.Output[tuple[dict[str, str], dict[str, str]]]:
    """(public, secret) files of the libvirt secrets of the node set's Ceph client files."""
    node_set = context.node_set
    if ceph_client.NAME not in node_set.services:
        return pulumi.Output.from_input(({}, {}))
    where = f"openstack-nova:extraMounts: the Ceph client files of node set {node_set.name}"

    def files(mounted: list[dict[str, str]]) -> tuple[dict[str, str], dict[str, str]]:
        try:
            return ceph_secret_files(ceph_secrets({**mounted[0], **mounted[1]}))
        except CephSecretError as err:
            raise pulumi.RunError(f"{where}: {err}") from None

    return pulumi.Output.all(*ceph_client.client_files(context)).apply(files)


def _files(context: NodeSetContext, certs: pulumi.Output[dict[str, str]]) -> tuple[pulumi.Output[dict[str, str]],
                                                                                     pulumi.Output[dict[str, str]]]:
    """(secret, public) files of a node with the certificate files `certs`."""
    tls = context.node_set.tls_enabled
    ceph = context.once((NAME, "ceph"), lambda: _ceph_secrets(context))

    def secret_files(values: list[Any]) -> dict[str, str]:
        password, node_certs, (_, ceph_values) = values
        keys = {k: v for k, v in node_certs.items() if k not in _PUBLIC_TLS}
        return {**libvirt_secret_files(password, tls=tls), **keys, **ceph_values}

    # Shown in preview: the config, the certificates (not their keys) and the Ceph secrets'
    # definitions (a cluster's fsid, also nova's rbd_secret_uuid); never a key.
    def public_files(values: list[Any]) -> dict[str, str]:
        node_certs, (ceph_definitions, _) = values
        shown = {k: v for k, v in node_certs.items() if k in _PUBLIC_TLS}
        limits = {"qemu_max_processes": context.node_set.qemu_max_processes,
                  "qemu_max_files": context.node_set.qemu_max_files}
        return {**libvirt_config_files(tls=tls, **limits), **shown, **ceph_definitions}

    files: pulumi.Output[dict[str, str]] = pulumi.Output.secret(
        pulumi.Output.all(context.stack.libvirt.password, certs, ceph).apply(secret_files))
    public = pulumi.Output.unsecret(pulumi.Output.all(certs, ceph).apply(public_files))
    return files, public


def _node_inputs(context: NodeSetContext, node: Node) -> RunInputs:
    tls = context.node_set.tls_enabled
    stack = context.stack.libvirt
    if tls and node.name not in stack.tls:
        raise pulumi.RunError(f"{node.name}: its node set has TLS, but the stack issued it no libvirt certificate")
    # with TLS, a node's certificate is its own; without, every node of the node set gets the same files
    files, public = (_files(context, stack.tls[node.name]) if tls
                     else context.once((NAME, "files"), lambda: _files(context, pulumi.Output.from_input({}))))
    return RunInputs(files=files, public_files=public, variables={"edpm_libvirt_tls_certs_enabled": tls})


SERVICE = EdpmService(name=NAME, playbook="libvirt.yml", node_inputs=_node_inputs, order=40, default=True)
