"""`LibvirtSecrets`: what the computes' libvirt shares across the stack.

- the SASL password of the migration user, published as upstream's
  `libvirt-secret` (key `LibvirtPassword`): the stack's, or generated once;
- when a node set has TLS, libvirt's CA (`rootca-libvirt`, as openstack-operator
  names its root CA) and a certificate per node of such a node set
  (`cert-libvirt-default-<hostName>`), each a Secret with `tls.crt`, `tls.key`
  and `ca.crt` as cert-manager writes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from ipaddress import ip_address

import pulumi
import pulumi_kubernetes as k8s

from components import k8s as kube
from components.certificates import CertificateAuthority, IssuedCertificate
from components.generated import secret_or_generated
from components.render import TLS_CA, TLS_CERT, TLS_KEY, names
from components.settings import Node, SecretStr


@dataclass(frozen=True)
class LibvirtFiles:
    """What each node's libvirt service gets from the stack."""

    password: pulumi.Output[str]
    # node name -> its TLS files (tls.crt, tls.key, ca.crt); only nodes whose node set has TLS
    tls: Mapping[str, pulumi.Output[dict[str, str]]] = field(default_factory=dict)


def _is_ip(value: str) -> bool:
    try:
        ip_address(value)
    except ValueError:
        return False
    return True


def certificate_names(node: Node) -> tuple[str, list[str], list[str]]:
    """(common name, DNS names, IP addresses) of a node's certificate: as upstream's, the short
    host name, the host name (what nova's qemu+tls://%s/system names a peer by), and the
    address Ansible reaches it at."""
    dns = list(dict.fromkeys([node.host_name, *([] if _is_ip(node.ansible_host) else [node.ansible_host])]))
    ips = [node.ansible_host] if _is_ip(node.ansible_host) else []
    return node.host_name.split(".")[0], dns, ips


class LibvirtSecrets(pulumi.ComponentResource):
    files: LibvirtFiles

    def __init__(self, name: str, target: kube.Target, password: SecretStr | None, tls_nodes: Sequence[Node],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        """`password`: the migration user's SASL password (None: generated); `tls_nodes`: the nodes
        that get a certificate of the stack's libvirt CA (none: no CA)."""
        super().__init__("openstack-nova:dataplane:LibvirtSecrets", name, {}, opts)
        child = pulumi.ResourceOptions(parent=self)
        password_output = secret_or_generated(password.reveal() if password is not None else None,
                                              f"{name}-password", self)
        self._target = target
        self._secret(name, names.LIBVIRT_SECRET, {names.LIBVIRT_PASSWORD_KEY: password_output})
        tls: dict[str, pulumi.Output[dict[str, str]]] = {}
        if tls_nodes:
            ca = CertificateAuthority(f"{name}-ca", common_name=names.LIBVIRT_ROOT_CA, opts=child)
            self._secret(f"{name}-rootca", names.LIBVIRT_ROOT_CA,
                         {TLS_CERT: ca.cert_pem, TLS_KEY: ca.key_pem, TLS_CA: ca.cert_pem})
            for node in tls_nodes:
                common_name, dns_names, ips = certificate_names(node)
                cert = IssuedCertificate(f"{name}-certificate-{node.name}", ca, common_name=common_name,
                                         organization=names.LIBVIRT_ROOT_CA, dns_names=dns_names,
                                         ip_addresses=ips, opts=child)
                node_files: pulumi.Output[dict[str, str]] = pulumi.Output.secret(
                    pulumi.Output.all(cert.cert_pem, cert.key_pem, ca.cert_pem).apply(
                        lambda v: {TLS_CERT: v[0], TLS_KEY: v[1], TLS_CA: v[2]}))
                self._secret(f"{name}-cert-{node.name}", names.libvirt_node_cert(node.host_name), node_files)
                tls[node.name] = node_files
        self.files = LibvirtFiles(password=password_output, tls=tls)
        self.register_outputs({})

    def _secret(self, resource: str, secret_name: str, data: pulumi.Input[Mapping[str, pulumi.Input[str]]]) -> None:
        k8s.core.v1.Secret(
            resource,
            metadata=self._target.meta(secret_name, kube.labels("libvirt")),
            type="kubernetes.io/tls" if secret_name != names.LIBVIRT_SECRET else None,
            string_data=pulumi.Output.secret(data),
            opts=pulumi.ResourceOptions(parent=self),
        )
