#!/usr/bin/env bash
# Stops everything the local environment started. With --forget also removes
# its data (etcd, images, node files, Pulumi state), so the next `make up` starts clean.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=devenv/lib.sh
. "$here/lib.sh"
require_root
"$here/nodes.sh" stop
# kubectl and ctr let the cluster delete its pods first; without them it still stops.
TOOLCHAIN_BIN=$("$here/toolchain.sh" bindir 2>/dev/null) || TOOLCHAIN_BIN=""
export TOOLCHAIN_BIN
"$here/cluster.sh" stop
if [ "${1:-}" = "--forget" ]; then
  rm -rf "$ENV_DIR"
  echo "stop: local environment data removed"
fi
