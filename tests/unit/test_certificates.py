"""The stack's certificate authority and the certificates it issues (libvirt's TLS):
what they hold, and when they are issued again."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from components.certificates import _CAProvider, _CertificateProvider
from components.libvirt import certificate_names
from components.settings import Node, ServiceConfigs


@pytest.fixture(scope="module")
def ca() -> dict[str, Any]:
    return _CAProvider().create({"common_name": "rootca-libvirt"}).outs  # type: ignore[no-any-return]


def _issue(ca: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    props = {"ca_cert_pem": ca["cert_pem"], "ca_key_pem": ca["key_pem"], "common_name": "compute-0",
             "organization": "rootca-libvirt", "dns_names": ["compute-0.example.com"],
             "ip_addresses": ["192.168.122.100"], **overrides}
    return _CertificateProvider().create(props).outs  # type: ignore[no-any-return]


def _days(cert: x509.Certificate) -> int:
    return (cert.not_valid_after_utc - cert.not_valid_before_utc).days


def test_the_ca_is_self_signed_for_ten_years(ca: dict[str, Any]) -> None:
    cert = x509.load_pem_x509_certificate(ca["cert_pem"].encode())
    assert cert.subject == cert.issuer
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "rootca-libvirt"
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    usage = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.key_cert_sign and usage.crl_sign
    assert _days(cert) == 3650
    key = serialization.load_pem_private_key(ca["key_pem"].encode(), password=None)
    assert isinstance(key, rsa.RSAPrivateKey) and key.key_size == 2048


def test_a_node_certificate_is_upstreams_for_a_server_that_is_also_a_client(ca: dict[str, Any]) -> None:
    outs = _issue(ca)
    cert = x509.load_pem_x509_certificate(outs["cert_pem"].encode())
    cert.verify_directly_issued_by(x509.load_pem_x509_certificate(ca["cert_pem"].encode()))
    # the subject's organization is the issuer's name, as upstream's (libvirt and qemu compare them)
    assert cert.subject.rfc4514_string() == "CN=compute-0,O=rootca-libvirt"
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["compute-0.example.com"]
    assert [str(a) for a in names.get_values_for_type(x509.IPAddress)] == ["192.168.122.100"]
    usage = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.digital_signature and usage.key_encipherment and not usage.key_cert_sign
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    assert _days(cert) == 365
    key = serialization.load_pem_private_key(outs["key_pem"].encode(), password=None)
    assert key.public_key().public_numbers() == cert.public_key().public_numbers()  # type: ignore[union-attr]


def test_a_certificate_is_issued_again_when_what_it_names_changes(ca: dict[str, Any]) -> None:
    outs = _issue(ca)
    news = {k: outs[k] for k in ("ca_cert_pem", "ca_key_pem", "common_name", "organization", "dns_names",
                                 "ip_addresses")}
    provider = _CertificateProvider()
    assert provider.diff("id", outs, news).changes is False
    for key, value in (("dns_names", ["compute-0.example.org"]), ("ip_addresses", ["192.168.122.200"]),
                       ("ca_cert_pem", "another CA")):
        diff = provider.diff("id", outs, {**news, key: value})
        assert (diff.changes, diff.replaces) == (True, [key])


def test_a_certificate_is_issued_again_after_two_thirds_of_its_life(ca: dict[str, Any]) -> None:
    outs = _issue(ca)
    news = {k: outs[k] for k in ("ca_cert_pem", "ca_key_pem", "common_name", "organization", "dns_names",
                                 "ip_addresses")}
    now = datetime.datetime.now(datetime.UTC)

    def aged(days: int) -> dict[str, Any]:
        start = now - datetime.timedelta(days=days)
        end = start + datetime.timedelta(days=365)
        return {**outs, "not_before": start.isoformat(), "not_after": end.isoformat()}

    assert _CertificateProvider().diff("id", aged(240), news).changes is False
    diff = _CertificateProvider().diff("id", aged(245), news)
    assert (diff.changes, diff.replaces) == (True, ["not_after"])


def _node(host_name: str, address: str) -> Node:
    return Node(name="compute-0", host_name=host_name, ansible_host=address, cell="cell1", ansible_vars={},
                custom_service_config=ServiceConfigs())


def test_a_node_is_named_as_its_peers_reach_it() -> None:
    # nova names a peer by its host (qemu+tls://<host>/system); Ansible's address too
    assert certificate_names(_node("compute-0.example.com", "192.168.122.100")) == (
        "compute-0", ["compute-0.example.com"], ["192.168.122.100"])
    assert certificate_names(_node("compute-0", "compute-0.ctlplane.example.com")) == (
        "compute-0", ["compute-0", "compute-0.ctlplane.example.com"], [])
    assert certificate_names(_node("compute-0", "compute-0")) == ("compute-0", ["compute-0"], [])
