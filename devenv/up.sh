#!/usr/bin/env bash
# `pulumi up` of one stack against the local environment: its neighbours first, then
# devenv/apply.sh (a preview's summary, a question on a terminal, the up, a table per node).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=devenv/lib.sh
. "$here/lib.sh"
PROG=up
stack=${1:-dev}
eval "$("$here/env.sh")"
cd "$root"
[ -f "stacks/Pulumi.$stack.yaml" ] || die "no stack config stacks/Pulumi.$stack.yaml"
pulumi stack select --create "$stack" >/dev/null
# The services nova needs and does not own (databases, buses, OVN's databases and
# ovn-northd, Keystone, Placement, Glance, Neutron); 42-47 s from nothing on the
# reference machine for the first five, measured at b659684 (docs/local-environment.md).
phase_line neighbours "MariaDB, RabbitMQ, memcached, OVN, Keystone, Placement, Glance and Neutron for stack $stack" \
  "$(usually 45) the first time, seconds after" "their steps below"
"$here/neighbours.sh" "$stack"
# refresh, preview and its summary, ask (on a terminal, unless YES), up, the table per node
exec "$here/apply.sh" "$stack"
