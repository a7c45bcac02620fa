#!/usr/bin/env bash
# Run a command as root on an EDPM test node, with our key and our known_hosts
# (host keys are verified, never ignored). The exit status is the command's.
# Usage: ssh.sh NODE [CMD...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=devenv/lib.sh
. "$here/lib.sh"

NODES_JSON=$ENV_DIR/nodes/nodes.json
SSH_DIR=$ENV_DIR/ssh

# Prints NODE's address, or nothing; nodes.sh writes this file.
node_ip() {
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], {}).get("ip", ""))' "$NODES_JSON" "$1"
}
known_nodes() {
  python3 -c 'import json, sys; print(" ".join(sorted(json.load(open(sys.argv[1])))))' "$NODES_JSON"
}

[ $# -ge 1 ] || die "usage: $PROG NODE [CMD...]"
node=$1; shift
[ -f "$NODES_JSON" ] || die "no EDPM nodes are running: run devenv/nodes.sh start"
ip=$(node_ip "$node")
[ -n "$ip" ] || die "unknown node '$node'; known nodes: $(known_nodes)"

# -F none: a user's ~/.ssh/config must not change how we connect.
exec ssh -F none -i "$SSH_DIR/id_ed25519" \
  -o UserKnownHostsFile="$SSH_DIR/known_hosts" -o GlobalKnownHostsFile=/dev/null \
  -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes -o BatchMode=yes \
  -o ConnectTimeout=10 "root@$ip" "$@"
