"""The pure parts of the node-disk secret scan: what it skips, what it reads, where a secret may be."""

from __future__ import annotations

import os
from pathlib import Path

from tests.integration.nodescan import allowed, files_to_read, holding_in_stream, skipped_mounts
from tests.integration.nodesecrets import CONTAINER_LAYERS, allowed_files

# A test node's mounts, trimmed (systemd-nspawn --boot, podman running one container).
MOUNTINFO = """\
100 90 0:50 / / rw,relatime - overlay overlay rw,lowerdir=/r,upperdir=/u,workdir=/w
101 100 0:51 / /proc rw,nosuid - proc proc rw
102 101 0:51 /sys /proc/sys ro,nosuid - proc proc rw
103 100 0:52 / /sys ro,nosuid - sysfs sysfs ro
104 100 0:53 / /dev rw,nosuid - tmpfs tmpfs rw,mode=755
105 104 0:54 / /dev/shm rw - tmpfs tmpfs rw
106 100 0:55 / /run rw,nosuid - tmpfs tmpfs rw
107 100 8:1 /nodes/edpm-compute-0/containers /var/lib/containers rw,relatime - ext4 /dev/sda1 rw
108 100 8:1 /images/store /var/lib/shared-images ro,relatime - ext4 /dev/sda1 rw
109 100 0:56 / /tmp rw - tmpfs tmpfs rw
110 107 0:57 / /var/lib/containers/storage/overlay/abc/merged rw - overlay overlay rw,lowerdir=/l
111 103 0:58 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw
112 100 8:1 /odd /var/lib/with\\040space ro - ext4 /dev/sda1 rw
"""


def test_pseudo_filesystems_read_only_images_and_container_views_are_skipped_disk_is_not() -> None:
    skipped = skipped_mounts(MOUNTINFO)
    assert sorted(skipped) == ["/dev", "/dev/shm", "/proc", "/proc/sys", "/sys", "/sys/fs/cgroup",
                               "/var/lib/containers/storage/overlay/abc/merged", "/var/lib/shared-images",
                               "/var/lib/with space"]
    assert skipped["/var/lib/shared-images"].startswith("read-only mount")
    assert skipped["/proc"] == "pseudo filesystem (proc)"
    # the root, /run, /tmp and podman's storage (its layers' diff directories) are read
    assert not {"/", "/run", "/tmp", "/var/lib/containers"} & set(skipped)


def test_the_walk_reads_regular_files_up_to_the_bound_and_nothing_under_a_skipped_mount(tmp_path: Path) -> None:
    (tmp_path / "var" / "log").mkdir(parents=True)
    (tmp_path / "var" / "log" / "small").write_bytes(b"x" * 10)
    (tmp_path / "var" / "log" / "big").write_bytes(b"x" * 101)
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "layer").write_text("image")
    (tmp_path / "imagesx").mkdir()  # a sibling whose name starts like a skipped one is read
    (tmp_path / "imagesx" / "f").write_text("f")
    os.symlink(tmp_path / "var" / "log" / "small", tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    found = [p for p, _ in files_to_read([str(tmp_path)], [str(tmp_path / "images")], max_bytes=100)]
    assert found == [str(tmp_path / "imagesx" / "f"), str(tmp_path / "var" / "log" / "small")]


def test_a_needle_across_two_chunks_of_the_journal_is_found() -> None:
    needles = [b"secret-one", b"other"]
    assert holding_in_stream([b"...secr", b"et-one..."], needles) == [0]
    assert holding_in_stream([b"oth", b"e", b"r"], needles) == [1]
    assert holding_in_stream([b"secret-on", b"x"], needles) == []


def test_a_file_may_hold_a_secret_only_at_an_allowed_path_with_its_mode_and_owner() -> None:
    allow = [("/var/lib/openstack/nova/01-nova.conf", 0o600, 0), (CONTAINER_LAYERS + "/etc/x", 0o600, 42436)]
    assert allowed("/var/lib/openstack/nova/01-nova.conf", 0o100600, 0, allow)
    assert not allowed("/var/lib/openstack/nova/01-nova.conf", 0o100644, 0, allow)  # others can read
    assert not allowed("/var/lib/openstack/nova/01-nova.conf", 0o100600, 42436, allow)  # not root's
    assert not allowed("/var/lib/openstack/nova/01-nova.conf.bak", 0o100600, 0, allow)
    assert allowed("/var/lib/containers/storage/overlay/abc/diff/etc/x", 0o100600, 42436, allow)
    assert not allowed("/root/.ansible/tmp/ansible-tmp-1/01-nova.conf", 0o100600, 0, allow)
    assert not allowed("/anything", 0o100600, 0, [])


def test_the_allowed_files_are_the_roles_secret_files_and_kolla_s_copies_of_them() -> None:
    allow = allowed_files({"nova": ["01-nova.conf", "ssh-privatekey", "25-nova-extra.conf"],
                           "neutron-metadata": ["05-nova-metadata.conf"], "libvirt": ["auth.conf"]})
    layer = CONTAINER_LAYERS
    assert sorted(allow) == sorted([
        ("/var/lib/openstack/nova/01-nova.conf", 0o600, 0),
        ("/var/lib/openstack/nova/ssh-privatekey", 0o600, 0),
        ("/var/lib/openstack/nova/25-nova-extra.conf", 0o600, 0),
        # kolla's copies in nova_compute, as nova (the images' uid): its config in the container's
        # layer, the migration key in /var/lib/nova, a volume of the node
        (f"{layer}/etc/nova/nova.conf.d/01-nova.conf", 0o600, 42436),
        (f"{layer}/etc/nova/nova.conf.d/25-nova-extra.conf", 0o600, 42436),
        ("/var/lib/nova/.ssh/ssh-privatekey", 0o600, 42436),
        ("/var/lib/openstack/neutron-ovn-metadata-agent/05-nova-metadata.conf", 0o600, 0),
        ("/etc/libvirt/auth.conf", 0o600, 42473),
        ("/etc/libvirt/passwd.db", 0o600, 0),
    ])


def test_no_run_no_allowed_file() -> None:
    assert allowed_files({}) == []
