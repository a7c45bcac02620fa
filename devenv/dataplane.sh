#!/usr/bin/env bash
# The data plane's side of the local cluster (devenv/dataplane): MetalLB, its address pools
# on the nodes' ctlplane and internalapi bridges, and the data plane's DNS.
#   dataplane.sh start    apply what changed and wait until it works (devenv/start.sh runs it
#                         once the cluster runs and its images are imported)
#   dataplane.sh status   one line each for MetalLB and the data plane's DNS
# The host python3 runs it, from the checkout, with kubectl of $TOOLCHAIN_BIN.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=devenv/lib.sh
. "$here/lib.sh"
case "${1:-}" in
  start | status) ;;
  *) die "usage: $PROG start|status" ;;
esac
TOOLCHAIN_BIN=${TOOLCHAIN_BIN:-$("$here/toolchain.sh" bindir)}
export TOOLCHAIN_BIN OPENSTACK_NOVA_ENV=$ENV_DIR
cd "$here/.."
exec python3 -m devenv.dataplane "$1"
