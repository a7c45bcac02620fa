"""libvirt's TLS on the test nodes (`tlsEnabled` of the dev node set): the stack's
CA and each node's certificate where libvirt and qemu look for them, the
migration user's credentials and SASL database, the TLS firewall rule, nova
migrating over qemu+tls; the password never in plain text; everything gone
again when TLS is turned off.

The test nodes run libvirt's daemons, which read these files; no TLS
connection to them and no migration over TLS is made here. The SASL database
is made with the node's saslpasswd2 (sasl2-bin, in the nodes' root)."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest
import yaml
from cryptography import x509

from components.ansible_runner.playbook import TYPE as PLAYBOOK_RUN
from tests.integration.local_env import NODES, kubectl_json, node, pulumi, up
from tests.integration.stacks import Stack
from tests.integration.test_dataplane import nova_conf

# Longer than CI's budget allows: `make test-long` runs these (README, "The two commands").
pytestmark = pytest.mark.long

ADDRESSES = {"edpm-compute-0": "192.168.122.100", "edpm-compute-1": "192.168.122.101"}
NAMESPACE = "openstack"
TLS_FILES = {
    "/etc/pki/libvirt/servercert.pem": "644 root:root", "/etc/pki/libvirt/clientcert.pem": "644 root:root",
    "/etc/pki/libvirt/private/serverkey.pem": "600 root:root",
    "/etc/pki/libvirt/private/clientkey.pem": "600 root:root", "/etc/pki/CA/cacert.pem": "644 root:root",
    "/etc/pki/qemu/server-cert.pem": "640 root:qemu", "/etc/pki/qemu/client-cert.pem": "640 root:qemu",
    "/etc/pki/qemu/server-key.pem": "640 root:qemu", "/etc/pki/qemu/client-key.pem": "640 root:qemu",
    "/etc/pki/qemu/ca-cert.pem": "640 root:qemu",
}


def _secret(name: str) -> dict[str, str]:
    data = kubectl_json("get", "secret", "-n", NAMESPACE, name)["data"]
    return {key: base64.b64decode(value).decode() for key, value in data.items()}


def _owners(name: str, paths: list[str]) -> dict[str, str]:
    out = node(name, "stat -c '%n %a %U:%G' " + " ".join(paths)).stdout
    return {line.split()[0]: " ".join(line.split()[1:]) for line in out.splitlines()}


def _set_tls(stack: Stack, enabled: bool) -> None:
    config = yaml.safe_load(stack.file.read_text())
    config["config"]["openstack-nova:dataplane"]["nodeSets"]["edpm-compute"]["tlsEnabled"] = enabled
    stack.file.write_text(yaml.safe_dump(config))


@pytest.fixture(scope="module")
def tls_stack(module_dev_copy: Stack) -> Iterator[Stack]:
    """dev with TLS on, once for the module: the first test turns it on, the next ones go on from
    there (each makes its own `up` first, so it also runs alone), the last turns it off again."""
    stack = module_dev_copy
    original = stack.file.read_text()
    _set_tls(stack, True)
    try:
        yield stack
    finally:
        stack.file.write_text(original)
        up(stack.name, cwd=stack.project)


def test_tls_gives_each_node_its_certificate_credentials_and_rule(tls_stack: Stack) -> None:
    stack = tls_stack
    preview = stack.cli("preview", "--diff")
    result = up(stack.name, cwd=stack.project)
    ran = sorted((op, n) for op, typ, n in result["steps"] if typ == PLAYBOOK_RUN and op != "same")
    # the CA and the node certificates are created; libvirt and nova run again on both nodes
    assert [r for r in ran if not r[1].startswith("libvirt-")] == sorted(
        [("update", f"{n}-libvirt") for n in NODES] + [("update", f"{n}-nova") for n in NODES]), ran
    password = _secret("libvirt-secret")["LibvirtPassword"]
    ca = _secret("rootca-libvirt")
    assert kubectl_json("get", "secret", "-n", NAMESPACE, "rootca-libvirt")["type"] == "kubernetes.io/tls"
    ca_cert = x509.load_pem_x509_certificate(ca["tls.crt"].encode())
    for name in NODES:
        issued = _secret(f"cert-libvirt-default-{name}")
        assert issued["ca.crt"] == ca["tls.crt"]
        cert = x509.load_pem_x509_certificate(issued["tls.crt"].encode())
        cert.verify_directly_issued_by(ca_cert)
        alt = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert alt.get_values_for_type(x509.DNSName) == [name]
        assert [str(a) for a in alt.get_values_for_type(x509.IPAddress)] == [ADDRESSES[name]]
        # where libvirt and qemu look for them, keys readable by root (and qemu's group) only
        assert _owners(name, list(TLS_FILES)) == TLS_FILES, name
        for path in ("/etc/pki/libvirt/servercert.pem", "/etc/pki/qemu/client-cert.pem"):
            assert node(name, f"cat {path}").stdout == issued["tls.crt"], (name, path)
        for path in ("/etc/pki/libvirt/private/serverkey.pem", "/etc/pki/qemu/server-key.pem"):
            assert node(name, f"cat {path}").stdout == issued["tls.key"], (name, path)
        assert node(name, "cat /etc/pki/CA/cacert.pem").stdout == ca["tls.crt"], name
        # the migration user: its credentials for this node's libvirt as a client, the database for its listener
        assert _owners(name, ["/etc/libvirt/auth.conf", "/etc/libvirt/passwd.db"]) == {
            "/etc/libvirt/auth.conf": "600 libvirt:libvirt", "/etc/libvirt/passwd.db": "600 root:root"}, name
        auth = node(name, "cat /etc/libvirt/auth.conf").stdout
        assert "authname=migration@openstack\n" in auth and f"password={password}\n" in auth, name
        users = node(name, "sasldblistusers2 -f /etc/libvirt/passwd.db").stdout
        assert "migration@openstack:" in users, name
        rules = yaml.safe_load(node(name, "cat /var/lib/edpm-config/firewall/libvirt.yaml").stdout)
        assert rules[-1] == {"rule_name": "007 Allow libvirt tls", "rule": {"proto": "tcp", "dport": ["16514"]}}
        assert "listen_tls = 1" in node(name, "cat /etc/libvirt/virtproxyd.conf").stdout, name
        # nova-compute migrates over libvirt's TLS listener, QEMU's streams in TLS too
        assert nova_conf(name, "libvirt.live_migration_uri") == "'qemu+tls://%s/system'"
        assert nova_conf(name, "libvirt.live_migration_with_native_tls") == "True"
    # the password and the keys only ever encrypted in state, masked in preview
    state = pulumi("stack", "export", "-s", stack.name, cwd=stack.project).stdout
    keys = [_secret(f"cert-libvirt-default-{n}")["tls.key"] for n in NODES]
    for secret in (password, ca["tls.key"], *keys):
        assert secret not in state and secret not in preview.stdout + preview.stderr
    assert stack.cli("preview", "--expect-no-changes", check=False).returncode == 0


def test_a_lost_sasl_database_is_drift_and_up_writes_it_again(tls_stack: Stack) -> None:
    stack = tls_stack
    up(stack.name, cwd=stack.project)
    node(NODES[0], "rm /etc/libvirt/passwd.db")
    stack.cli("refresh", "--yes", "--skip-preview")
    repaired = sorted(n for op, _, n in up(stack.name, cwd=stack.project)["steps"] if op == "update")
    assert repaired == [f"{NODES[0]}-libvirt"]
    assert "migration@openstack:" in node(NODES[0], "sasldblistusers2 -f /etc/libvirt/passwd.db").stdout


def test_turning_tls_off_removes_the_keys_and_the_database(tls_stack: Stack) -> None:
    stack = tls_stack
    up(stack.name, cwd=stack.project)
    _set_tls(stack, False)
    up(stack.name, cwd=stack.project)
    for name in NODES:
        assert node(name, "ls " + " ".join([*TLS_FILES, "/etc/libvirt/passwd.db"])).stdout == "", name
        assert "password" not in node(name, "cat /etc/libvirt/auth.conf").stdout, name
        assert nova_conf(name, "libvirt.live_migration_with_native_tls") == "False"
        assert nova_conf(name, "libvirt.live_migration_uri").startswith("'qemu+ssh://")
    # no node set has TLS: the CA and the node certificates go; the password stays
    names = {i["metadata"]["name"] for i in kubectl_json("get", "secrets", "-n", NAMESPACE)["items"]}
    assert not {"rootca-libvirt", *(f"cert-libvirt-default-{n}" for n in NODES)} & names
    assert "libvirt-secret" in names
