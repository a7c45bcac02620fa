"""A certificate authority of the stack and the certificates it issues.

What cert-manager does for upstream's dataplane (a self-signed root CA per
issuer, a certificate per node and service) done as two dynamic resources:
keys are generated once and kept, encrypted, in state; a certificate is issued
again when what it names changes, or at the first preview/up after two thirds
of its life (cert-manager's default renewal point), which preview shows.
"""

from __future__ import annotations

import datetime
import secrets
from collections.abc import Sequence
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ResourceProvider

from components.dynamictypes import with_legacy_alias

CA_DAYS = 3650
CERT_DAYS = 365  # lib-common's default certificate duration: one year
RENEW_AT = 2 / 3  # of a certificate's life


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _due(outs: dict[str, Any]) -> bool:
    """Whether a certificate recorded in state has lived past its renewal point."""
    start, end = outs.get("not_before"), outs.get("not_after")
    if not start or not end:
        return False
    begin, finish = datetime.datetime.fromisoformat(start), datetime.datetime.fromisoformat(end)
    return _now() >= begin + (finish - begin) * RENEW_AT


def _key_and_builder(common_name: str, organization: str, days: int) -> tuple[Any, Any, datetime.datetime]:
    # Imported here: only the provider process needs them.
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    start = _now().replace(microsecond=0) - datetime.timedelta(minutes=5)  # a little slack for clocks
    names = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        names.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    builder = (x509.CertificateBuilder().subject_name(x509.Name(names)).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(start)
               .not_valid_after(start + datetime.timedelta(days=days)))
    return key, builder, start


def _pem(key: Any, cert: Any) -> tuple[str, str]:
    from cryptography.hazmat.primitives import serialization

    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    return key_pem, cert.public_bytes(serialization.Encoding.PEM).decode()


class _CAProvider(ResourceProvider):
    def create(self, props: dict[str, Any]) -> CreateResult:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes

        key, builder, start = _key_and_builder(props["common_name"], "", CA_DAYS)
        builder = builder.issuer_name(x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME,
                                                                    props["common_name"])]))
        builder = (builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                                key_encipherment=False, data_encipherment=False, key_agreement=False,
                                                key_cert_sign=True, crl_sign=True, encipher_only=False,
                                                decipher_only=False), critical=True)
                   .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False))
        cert = builder.sign(key, hashes.SHA256())
        key_pem, cert_pem = _pem(key, cert)
        return CreateResult(id_=secrets.token_hex(8), outs={
            "common_name": props["common_name"], "cert_pem": cert_pem, "key_pem": key_pem,
            "not_before": start.isoformat(), "not_after": cert.not_valid_after_utc.isoformat()})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = olds.get("common_name") != news.get("common_name")
        return DiffResult(changes=changed, replaces=["common_name"] if changed else [], delete_before_replace=False)


class CertificateAuthority(pulumi.dynamic.Resource, module="certificates", name="CertificateAuthority"):
    """A self-signed CA (RSA 2048, ten years), created once; its key is kept secret in state."""

    cert_pem: pulumi.Output[str]
    key_pem: pulumi.Output[str]

    def __init__(self, name: str, common_name: str, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(
            _CAProvider(), name,
            {"common_name": common_name, "cert_pem": None, "key_pem": None, "not_before": None, "not_after": None},
            pulumi.ResourceOptions.merge(pulumi.ResourceOptions(additional_secret_outputs=["key_pem"]),
                                         with_legacy_alias(opts)),
        )


# Inputs whose change issues the certificate again.
_ISSUED_FOR = ("ca_cert_pem", "common_name", "organization", "dns_names", "ip_addresses")


class _CertificateProvider(ResourceProvider):
    def create(self, props: dict[str, Any]) -> CreateResult:
        import ipaddress

        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.x509.oid import ExtendedKeyUsageOID

        ca_cert = x509.load_pem_x509_certificate(props["ca_cert_pem"].encode())
        ca_key = serialization.load_pem_private_key(props["ca_key_pem"].encode(), password=None)
        key, builder, start = _key_and_builder(props["common_name"], props["organization"], CERT_DAYS)
        alt_names: list[x509.GeneralName] = [x509.DNSName(n) for n in props["dns_names"]]
        alt_names += [x509.IPAddress(ipaddress.ip_address(a)) for a in props["ip_addresses"]]
        builder = (builder.issuer_name(ca_cert.subject)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                                key_encipherment=True, data_encipherment=False, key_agreement=False,
                                                key_cert_sign=False, crl_sign=False, encipher_only=False,
                                                decipher_only=False), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                         ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
                   .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                       ca_cert.public_key()), critical=False))  # type: ignore[arg-type]
        cert = builder.sign(ca_key, hashes.SHA256())
        key_pem, cert_pem = _pem(key, cert)
        outs = {k: props[k] for k in (*_ISSUED_FOR, "ca_key_pem")}
        return CreateResult(id_=secrets.token_hex(8), outs={
            **outs, "cert_pem": cert_pem, "key_pem": key_pem,
            "not_before": start.isoformat(), "not_after": cert.not_valid_after_utc.isoformat()})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [k for k in _ISSUED_FOR if olds.get(k) != news.get(k)]
        if _due(olds):
            changed.append("not_after")
        return DiffResult(changes=bool(changed), replaces=changed, delete_before_replace=False)


class IssuedCertificate(pulumi.dynamic.Resource, module="certificates", name="IssuedCertificate"):
    """A certificate of `ca` for a server that is also a client (RSA 2048, one year):
    `dns_names` and `ip_addresses` as subject alternative names."""

    cert_pem: pulumi.Output[str]
    key_pem: pulumi.Output[str]

    def __init__(self, name: str, ca: CertificateAuthority, *, common_name: str, organization: str,
                 dns_names: Sequence[str], ip_addresses: Sequence[str],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(
            _CertificateProvider(), name,
            {"ca_cert_pem": ca.cert_pem, "ca_key_pem": ca.key_pem, "common_name": common_name,
             "organization": organization, "dns_names": list(dns_names), "ip_addresses": list(ip_addresses),
             "cert_pem": None, "key_pem": None, "not_before": None, "not_after": None},
            pulumi.ResourceOptions.merge(
                pulumi.ResourceOptions(additional_secret_outputs=["key_pem", "ca_key_pem"]), with_legacy_alias(opts)),
        )
