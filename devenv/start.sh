#!/usr/bin/env bash
# Starts (or recovers) the local environment: API server and EDPM test nodes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=devenv/lib.sh
. "$here/lib.sh"
require_root
mkdir -p "$ENV_DIR"; chmod 700 "$ENV_DIR"
# The example stacks in stacks/ are encrypted for this local passphrase; a real
# environment brings its own PULUMI_CONFIG_PASSPHRASE(_FILE) or KMS provider.
if [ ! -s "$ENV_DIR/passphrase" ]; then
  (umask 077; printf '%s' "$LOCAL_PASSPHRASE" > "$ENV_DIR/passphrase")
fi
TOOLCHAIN_BIN=$("$here/toolchain.sh" bindir)
export TOOLCHAIN_BIN
"$here/apiserver.sh" start
"$here/nodes.sh" start
