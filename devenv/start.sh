#!/usr/bin/env bash
# Starts (or recovers) the local environment: the single-node Kubernetes, the
# data plane's networks, load balancer and DNS, and the EDPM test nodes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=devenv/lib.sh
. "$here/lib.sh"
require_root
# The passphrase of the example stacks in stacks/ (local environments only).
LOCAL_PASSPHRASE=openstack-nova-local
# The unit tests meet a real sshd on this host (tests/unit/sshnode.py).
if [ ! -x /usr/sbin/sshd ]; then
  echo "start: installing openssh-server (for the unit tests)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 openssh-server; } \
    >/dev/null 2>&1 || die "could not install openssh-server with apt-get; install it and run again"
fi
mkdir -p /run/sshd
mkdir -p "$ENV_DIR/state"; chmod 700 "$ENV_DIR"
# A real environment brings its own PULUMI_CONFIG_PASSPHRASE(_FILE) or KMS provider.
if [ ! -s "$ENV_DIR/passphrase" ]; then
  (umask 077; printf '%s' "$LOCAL_PASSPHRASE" > "$ENV_DIR/passphrase")
fi
TOOLCHAIN_BIN=$("$here/toolchain.sh" bindir)
export TOOLCHAIN_BIN
# The data plane's networks (the nodes' bridges) and the host's boundary between them and the
# cluster's networks, before the cluster: MetalLB's speaker announces on the bridges it finds.
"$here/nodes.sh" network
"$here/cluster.sh" start
# The one OpenStack image every pod of the environment runs, built here and imported.
"$here/images.sh" import
# MetalLB and the data plane's DNS, which the nodes' resolv.conf names.
"$here/dataplane.sh" start
"$here/nodes.sh" start
python3 "$here/clear-stale-locks.py" "$ENV_DIR/state"
