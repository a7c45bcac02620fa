#!/usr/bin/env bash
# `pulumi up` of one stack against the local environment, then a short summary.
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
# The services nova needs and does not own (databases, buses, OVN's databases,
# Keystone, Placement, Glance); 42-47 s from nothing on the reference machine for
# the first five, measured at b659684 (docs/local-environment.md).
phase_line neighbours "MariaDB, RabbitMQ, memcached, OVN's databases, Keystone, Placement and Glance for stack $stack" \
  "$(usually 45) the first time, seconds after" "their steps below"
"$here/neighbours.sh" "$stack"
log=$LOG_DIR/up-$stack.log
# --parallel: room for as many playbook runs at once as the dynamic-provider plugin's pool
# (OPENSTACK_NOVA_MAX_RUNS, default 16), which the CLI's default (8 on 2 cores) would cap;
# PULUMI_PARALLEL, when set, instead (lib.sh up_parallel).
parallel=$(up_parallel 2>&1) || die "$parallel"
# 1 min 23 s from nothing on the reference machine, under a minute when little changed: measured at
# b659684 (62 resources), before libvirt, ssh-known-hosts, the db purge CronJobs and the cleanup Job
# existed (docs/local-environment.md, "How long it takes").
phase "pulumi up" "$log" "stack $stack, --parallel $parallel" "$(usually 83) from nothing, less when little changed"
# Each playbook run's progress as it goes (node, service, each play and task and how long
# it took), which the runs append to this file (components/ansible_runner/events.py).
progress=$LOG_DIR/progress-$stack.log
: >"$progress"
tail -n +1 -F --pid=$$ "$progress" >&2 2>/dev/null &
shown=$!
# --refresh: a test node that restarted (make down, a new session) runs nothing;
# refresh sees that as drift and up starts its services again.
if ! OPENSTACK_NOVA_PROGRESS=$progress pulumi up --yes --non-interactive --skip-preview --suppress-progress \
    --refresh --parallel "$parallel" -s "$stack" >>"$log" 2>&1; then
  kill "$shown" 2>/dev/null || true
  # pulumi's own account of what failed is its diagnostics, at the end and sometimes long
  if grep -q '^Diagnostics:' "$log"; then sed -n '/^Diagnostics:/,$p' "$log" >&2; else tail -n 30 "$log" >&2; fi
  die "pulumi up -s $stack failed (full log: $log)"
fi
kill "$shown" 2>/dev/null || true
echo "== pulumi up -s $stack: done"
sed -n '/^Resources:/,/^Duration:/p' "$log"
pulumi stack output -s "$stack" 2>/dev/null | sed -n '1,40p'
