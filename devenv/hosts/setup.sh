#!/usr/bin/env bash
# Runs once inside the fresh Debian root of the EDPM test nodes (mmdebstrap's
# customize hook): what every node shares. What one node owns (machine id,
# host name, SSH host keys, authorized keys) devenv/nodes.sh writes into the
# node's own layer at each start.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

# A node is a host of its own: no identity comes with the shared root.
rm -f /etc/ssh/ssh_host_*
: >/etc/machine-id
rm -f /var/lib/dbus/machine-id
rm -f /etc/hostname

# sshd: keys only; the one host key each node gets.
cat >/etc/ssh/sshd_config.d/10-openstack-nova.conf <<'EOF'
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
EOF

# A non-root user Ansible may log in as, escalating with sudo (as on
# upstream's nodes); its authorized key is the node's own.
useradd --uid 42480 --user-group --create-home --shell /bin/bash cloud-admin
echo 'cloud-admin ALL=(ALL) NOPASSWD: ALL' >/etc/sudoers.d/cloud-admin
chmod 440 /etc/sudoers.d/cloud-admin

# podman inside systemd-nspawn: no pids controller in the node's cgroup tree,
# and /proc/sys is read-only (no per-container sysctls); host networking only.
mkdir -p /etc/containers
cat >/etc/containers/containers.conf <<'EOF'
[containers]
pids_limit = 0
default_sysctls = []
EOF
# The images the environment built, loaded once into a store every node reads
# (no registry is reachable); each node's own storage is /var/lib/containers,
# on the host's filesystem (podman's overlay driver cannot stack on the node's
# overlay root).
cat >/etc/containers/storage.conf <<'EOF'
[storage]
driver = "overlay"
runroot = "/run/containers/storage"
graphroot = "/var/lib/containers/storage"

[storage.options]
additionalimagestores = ["/var/lib/shared-images"]
EOF
mkdir -p /var/lib/shared-images /var/lib/containers

# Open vSwitch under the name RHEL's units use (the metadata agent's unit
# requires openvswitch.service, as upstream writes it).
ln -s /usr/lib/systemd/system/openvswitch-switch.service /etc/systemd/system/openvswitch.service

# nova_compute mounts /lib/modules; the node has no kernel of its own.
mkdir -p /lib/modules

# Nothing periodic that a test node does not need (each wakes every node).
systemctl mask apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer \
  fstrim.timer man-db.timer >/dev/null 2>&1 || true

apt-get clean
rm -rf /var/lib/apt/lists/* /var/log/apt/* /var/log/dpkg.log /var/cache/debconf/*-old
