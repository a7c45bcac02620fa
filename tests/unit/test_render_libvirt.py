"""libvirt's files beyond its daemons' config: TLS, the migration user's
credentials, the node's firewall rules, and the Ceph secrets libvirt keeps, as
edpm-ansible's edpm_libvirt lays them out."""

from __future__ import annotations

import base64
import secrets
import xml.etree.ElementTree as ET

import pytest
import yaml

from components.render import (
    CephSecretError,
    ceph_secret_files,
    ceph_secrets,
    libvirt_config_files,
    libvirt_secret_files,
)

FSID = "6a1b2c3d-0000-4000-8000-000000000001"


def _key() -> str:
    """A cephx key as Ceph writes it: base64 of 28 bytes."""
    return base64.b64encode(secrets.token_bytes(28)).decode()


def _keyring(user: str, key: str) -> str:
    return f"[client.{user}]\n\tkey = {key}\n\tcaps mon = \"profile rbd\"\n"


def _values(text: str) -> dict[str, str]:
    return dict(line.split(" = ", 1) for line in text.splitlines() if line and not line.startswith("#"))


@pytest.mark.parametrize("tls", [False, True])
def test_the_firewall_rules_are_upstreams(tls: bool) -> None:
    files = libvirt_config_files(tls=tls)
    rules = yaml.safe_load(files["libvirt-firewall.yaml"])
    want = [{"rule_name": "005 Allow vnc access on all networks.", "rule": {"proto": "tcp", "dport": ["5900-6923"]}},
            {"rule_name": "006 Allow libvirt live migration traffic",
             "rule": {"proto": "tcp", "dport": ["61152-61215"]}}]
    if tls:
        want.append({"rule_name": "007 Allow libvirt tls", "rule": {"proto": "tcp", "dport": ["16514"]}})
    assert rules == want
    # the migration rule opens the ports qemu migrates on
    qemu = _values(files["qemu.conf"])
    assert f"{qemu['migration_port_min']}-{qemu['migration_port_max']}" == rules[1]["rule"]["dport"][0]


def test_qemus_process_limit_is_upstreams_or_the_node_sets() -> None:
    assert _values(libvirt_config_files(tls=False)["qemu.conf"])["max_processes"] == "131072"
    assert _values(libvirt_config_files(tls=False)["qemu.conf"])["max_files"] == "32768"
    given = _values(libvirt_config_files(tls=False, qemu_max_processes=0, qemu_max_files=1024)["qemu.conf"])
    assert (given["max_processes"], given["max_files"]) == ("0", "1024")


def test_the_daemons_log_warnings_unless_the_node_set_says_otherwise() -> None:
    warning = "3:qemu 3:libvirt 4:object 4:json 4:event 3:util"
    modular = ("virtnodedevd", "virtproxyd", "virtqemud", "virtsecretd")
    files = libvirt_config_files(tls=False)
    filters = {name: _values(text)["log_filters"] for name, text in files.items() if name.endswith("d.conf")}
    assert filters == {"virtlogd.conf": '"3:logging 4:object 4:json 4:event 3:util"',
                       **{f"{d}.conf": f'"{warning}"' for d in modular}}
    debug = "1:qemu 1:libvirt 4:object 4:json 4:event 1:util"
    given = libvirt_config_files(tls=False, log_filters=debug)
    assert {n for n in given if given[n] != files[n]} == {f"{d}.conf" for d in modular}
    assert {_values(given[n])["log_filters"] for n in given if given[n] != files[n]} == {f'"{debug}"'}


def test_with_tls_virtproxyd_listens_for_tls_with_sasl_and_nothing_else_changes() -> None:
    off, on = libvirt_config_files(tls=False), libvirt_config_files(tls=True)
    proxy = _values(on["virtproxyd.conf"])
    assert (proxy["listen_tls"], proxy["listen_tcp"], proxy["auth_tls"]) == ("1", "0", '"sasl"')
    assert {n for n in on if on[n] != off[n]} == {"virtproxyd.conf", "libvirt-firewall.yaml"}
    # SASL itself: upstream's mechanism and database
    assert on["sasl2-libvirt.conf"].splitlines()[1:] == ["mech_list: scram-sha-256",
                                                          "sasldb_path: /etc/libvirt/passwd.db"]


def test_with_tls_the_migration_user_has_credentials_and_a_password() -> None:
    files = libvirt_secret_files("s3cret$pw", tls=True)
    assert sorted(files) == ["LibvirtPassword", "auth.conf"]
    assert files["LibvirtPassword"] == "s3cret$pw"  # as is: it is not an oslo.config file
    lines = [line for line in files["auth.conf"].splitlines() if line and not line.startswith("#")]
    assert lines == ["[credentials-openstack]", "authname=migration@openstack", "password=s3cret$pw",
                     "[auth-libvirt-default]", "credentials=openstack"]


def test_without_tls_no_credentials_are_written() -> None:
    files = libvirt_secret_files("s3cret", tls=False)
    assert list(files) == ["auth.conf"]
    assert "s3cret" not in files["auth.conf"]
    assert [line for line in files["auth.conf"].splitlines() if not line.startswith("#")] == []


def test_each_ceph_cluster_gets_a_libvirt_secret_of_its_fsid_and_key() -> None:
    key, other = _key(), _key()
    files = {"ceph.conf": f"[global]\n\tfsid = {FSID.upper()}\n\tmon host = 192.0.2.1\n",
             "ceph.client.openstack.keyring": _keyring("openstack", key),
             "az1.conf": "[global]\nfsid=7b2c3d4e-0000-4000-8000-000000000002\n",
             "az1.client.nova.keyring": _keyring("nova", other),
             "README": "not Ceph's"}
    found = ceph_secrets(files)
    assert [(s.cluster, s.fsid, s.user, s.key, s.usage) for s in found] == [
        ("az1", "7b2c3d4e-0000-4000-8000-000000000002", "nova", other, "az1.client.nova secret"),
        ("ceph", FSID, "openstack", key, "ceph.client.openstack secret")]
    public, secret = ceph_secret_files(found)
    assert sorted(public) == sorted(f"secret-{s.fsid}.xml" for s in found)
    # libvirt keeps the value base64-encoded, exactly the key (no newline)
    assert secret == {f"secret-{s.fsid}.base64": s.key for s in found}
    definition = ET.fromstring(public[f"secret-{FSID}.xml"])
    assert (definition.tag, definition.attrib) == ("secret", {"ephemeral": "no", "private": "no"})
    assert definition.findtext("uuid") == FSID
    usage = definition.find("usage")
    assert usage is not None and usage.attrib == {"type": "ceph"}
    assert usage.findtext("name") == "ceph.client.openstack secret"
    # the definitions never hold a key
    assert key not in "".join(public.values())


def test_of_several_users_libvirt_keeps_openstacks_key() -> None:
    key = _key()
    files = {"ceph.conf": f"fsid = {FSID}\n", "ceph.client.admin.keyring": _keyring("admin", _key()),
             "ceph.client.openstack.keyring": _keyring("openstack", key)}
    (found,) = ceph_secrets(files)
    assert (found.user, found.key) == ("openstack", key)


@pytest.mark.parametrize(("files", "message"), [
    ({"ceph.conf": "[global]\nmon host = x\n"}, "ceph.conf must set fsid once .* it sets it 0 times"),
    ({"ceph.conf": f"fsid = {FSID}\nfsid = {FSID}\n"}, "it sets it 2 times"),
    ({"ceph.conf": "fsid = not-a-uuid\n"}, "ceph.conf: fsid not-a-uuid is not a UUID"),
    ({"ceph.conf": f"fsid = {FSID}\n"}, r"ceph.conf has no keyring \(none\)"),
    ({"ceph.conf": f"fsid = {FSID}\n", "ceph.client.a.keyring": "", "ceph.client.b.keyring": ""},
     r"several keyrings \(ceph.client.a.keyring, ceph.client.b.keyring\)"),
    ({"ceph.conf": f"fsid = {FSID}\n", "ceph.client.openstack.keyring": "[client.openstack]\n\tkey = AQB-not==\n"},
     r"ceph.client.openstack.keyring must hold one cephx key \(key = <40 characters of base64>\)$"),
    ({"ceph.conf": f"fsid = {FSID}\n", "ceph.client.openstack.keyring": "[client.openstack]\n",
      "az1.conf": f"fsid = {FSID}\n", "az1.client.openstack.keyring": ""}, "must hold one cephx key"),
], ids=["no fsid", "two fsids", "not a uuid", "no keyring", "two keyrings", "bad key", "no key"])
def test_ceph_files_libvirt_cannot_keep_say_why(files: dict[str, str], message: str) -> None:
    with pytest.raises(CephSecretError, match=message) as err:
        ceph_secrets(files)
    assert "AQB-not" not in str(err.value)


def test_two_clusters_cannot_share_an_fsid() -> None:
    files = {"ceph.conf": f"fsid = {FSID}\n", "ceph.client.openstack.keyring": _keyring("openstack", _key()),
             "az1.conf": f"fsid = {FSID}\n", "az1.client.openstack.keyring": _keyring("openstack", _key())}
    with pytest.raises(CephSecretError, match="two Ceph clusters share an fsid"):
        ceph_secrets(files)


def test_without_ceph_files_libvirt_keeps_no_secret() -> None:
    assert ceph_secret_files(ceph_secrets({})) == ({}, {})
