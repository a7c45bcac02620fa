#!/usr/bin/env bash
# `pulumi up` of one stack against the local environment, then a short summary.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
stack=${1:-dev}
eval "$("$here/env.sh")"
cd "$root"
[ -f "stacks/Pulumi.$stack.yaml" ] || { echo "up: no stack config stacks/Pulumi.$stack.yaml" >&2; exit 1; }
pulumi stack select --create "$stack" >/dev/null
# The services nova needs and does not own (databases, buses, Keystone, Placement).
echo "up: neighbours of $stack: MariaDB, RabbitMQ, memcached, Keystone, Placement (about 1 min the first time)"
"$here/neighbours.sh" "$stack"
log=$(mktemp); trap 'rm -f "$log"' EXIT
# --refresh: a test node that restarted (make down, a new session) runs nothing;
# refresh sees that as drift and up starts its services again.
echo "up: pulumi up -s $stack (about 1.5 min from nothing, under 1 min when little changed)"
if ! pulumi up --yes --non-interactive --skip-preview --suppress-progress --refresh -s "$stack" >"$log" 2>&1; then
  cat "$log"; exit 1
fi
echo "== pulumi up -s $stack"
sed -n '/^Resources:/,/^Duration:/p' "$log"
pulumi stack output -s "$stack" 2>/dev/null | sed -n '1,40p'
