#!/usr/bin/env bash
# What nova needs around it in the local cluster, for one stack: MariaDB,
# RabbitMQ, memcached, OVN's northbound and southbound databases with
# ovn-northd, keystone, placement, glance (with a test image), neutron's API
# and an openstackclient pod, in the stack's namespace (upstream, other
# operators provide them).
#   neighbours.sh STACK            deploy, or converge what is there, and wait until ready
#   neighbours.sh STACK --delete   remove them, their data and their generated passwords
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=devenv/lib.sh
. "$here/lib.sh"
stack=${1:-}
[ -n "$stack" ] || die "usage: $PROG STACK [--delete]"
shift
eval "$("$here/env.sh")"
cd "$root"
[ -f "stacks/Pulumi.$stack.yaml" ] || die "no stack config stacks/Pulumi.$stack.yaml"
[ -x "$root/.venv/bin/python" ] || die "no project venv: run make venv"
[ -s "$KUBECONFIG" ] || die "no cluster: $KUBECONFIG is missing (start the local environment first)"
pulumi stack select --create "$stack" >/dev/null
mkdir -p "$OPENSTACK_NOVA_ENV"
take_lock "$OPENSTACK_NOVA_ENV/neighbours.lock"
"$root/.venv/bin/python" -m devenv.neighbours.deploy "$stack" "$@"
# The test nodes are chassis of the stack's OVN (its databases are neighbours too).
if [ "${1:-}" != --delete ]; then "$here/chassis.sh" "$stack"; fi
