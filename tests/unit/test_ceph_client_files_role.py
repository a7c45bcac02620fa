"""edpm_ceph_client_files run by Ansible on this machine: besides nova_compute's copy, each
cluster's <cluster>.conf lands where the host's own qemu reads it (/etc/ceph) for a guest's
RBD disks, without a keyring, and only the files the role laid out there ever go."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.unit.ansible_run import run_play

PLAY = """\
- name: Lay out the Ceph client files as a node's run does
  hosts: all
  gather_facts: false
  tasks:
    - name: Lay out the Ceph client files
      ansible.builtin.import_role:
        name: edpm_ceph_client_files
"""


def _run(tmp_path: Path, files: dict[str, str]) -> subprocess.CompletedProcess[str]:
    source = tmp_path / "source"
    source.mkdir(exist_ok=True)
    for path in source.iterdir():
        path.unlink()
    for name, text in files.items():
        (source / name).write_text(text)
    extra = {"edpm_ceph_client_files_source": str(source),
             "edpm_ceph_client_files_config_home": str(tmp_path / "config-home"),
             "edpm_ceph_client_files_host_dir": str(tmp_path / "etc-ceph")}
    return run_play(tmp_path, PLAY, extra=extra, stubs={})


def test_each_clusters_conf_reaches_the_hosts_etc_ceph_and_only_the_roles_files_go(tmp_path: Path) -> None:
    host = tmp_path / "etc-ceph"
    host.mkdir()
    (host / "mine.conf").write_text("the operator's\n")
    first = _run(tmp_path, {"ceph.conf": "[global]\nfsid = a\n", "ceph.client.openstack.keyring": "[client]\n",
                            "other.conf": "[global]\nfsid = b\n"})
    assert first.returncode == 0, first.stdout + first.stderr
    assert sorted(p.name for p in host.iterdir()) == [".edpm-ceph-client-files", "ceph.conf", "mine.conf",
                                                       "other.conf"]
    assert (host / "ceph.conf").read_text() == "[global]\nfsid = a\n"
    assert (host / "ceph.conf").stat().st_mode & 0o777 == 0o644
    second = _run(tmp_path, {"ceph.conf": "[global]\nfsid = a\n"})
    assert second.returncode == 0, second.stdout + second.stderr
    assert sorted(p.name for p in host.iterdir()) == [".edpm-ceph-client-files", "ceph.conf", "mine.conf"]
    assert (host / ".edpm-ceph-client-files").read_text() == "ceph.conf\n"
