#!/usr/bin/env bash
# Stops everything the local environment started. With --forget also removes
# its data (etcd, node files, Pulumi state), so the next `make up` starts clean.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=devenv/lib.sh
. "$here/lib.sh"
require_root
"$here/nodes.sh" stop
"$here/apiserver.sh" stop
if [ "${1:-}" = "--forget" ]; then
  rm -rf "$ENV_DIR"
  echo "stop: local environment data removed"
fi
