#!/usr/bin/env bash
# The `pulumi up` of `make up` (devenv/up.sh), shown before and while it changes:
#   refresh   what the nodes and the cluster are now (a node that restarted shows as drift)
#   preview   with the policy pack; a summary per node set, node and service (tools/up)
#   ask       on a terminal, unless YES is set (make up YES=1); elsewhere it goes on
#   up        with the same policy pack; each playbook run's progress lines as they come
#   table     per node: each service changed, unchanged or failed, in sync; the endpoints
# Nothing to change: says so and applies nothing. Runs `pulumi` and `python` from PATH
# (devenv/env.sh puts the toolchain's and the venv's there).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=devenv/lib.sh
. "$here/lib.sh"
PROG=up
stack=${1:?usage: apply.sh STACK}
cd "$root"
mkdir -p "$LOG_DIR"
umask 077 # the logs name every resource and input: the owner's only
log=$LOG_DIR/up-$stack.log
preview=$LOG_DIR/preview-$stack.json
events=$LOG_DIR/up-$stack.json
outputs=$LOG_DIR/outputs-$stack.json
progress=$LOG_DIR/progress-$stack.log

# The table and the endpoints, from the stack's outputs and (after an up) its events.
table() { # [events]
  pulumi stack output --json -s "$stack" >"$outputs" 2>>"$log" || : >"$outputs"
  python -m tools.up report --outputs "$outputs" ${1:+--events "$1" --preview "$preview"}
}

phase refresh "$log" "what the nodes and the cluster of stack $stack are now" "a check-mode run per node and service"
pulumi refresh --yes --skip-preview --non-interactive -s "$stack" >>"$log" 2>&1 ||
  log_failed "$log" "pulumi refresh -s $stack"

phase_line preview "what pulumi up would change in stack $stack, with the policy pack in policy/" \
  "the program runs, nothing changes" "events: $preview"
rc=0
PULUMI_ENABLE_STREAMING_JSON_PREVIEW=true pulumi preview --json --non-interactive --policy-pack policy \
  -s "$stack" >"$preview" 2>>"$log" || rc=$?
summary=0
python -m tools.up preview --stack "$stack" "$preview" || summary=$?
if [ "$rc" -ne 0 ] || [ "$summary" -eq 1 ]; then
  die "the preview of stack $stack failed (above; full log: $log): nothing was changed"
fi
if [ "$summary" -eq 3 ]; then
  note "nothing to change in stack $stack: nothing applied"
  table
  exit 0
fi
[ "$summary" -eq 0 ] || die "could not read the preview of stack $stack ($preview)"

if [ -t 0 ] && [ -z "${YES:-}" ]; then
  read -r -p "Apply these changes to stack $stack? [y/N] " answer
  case $answer in
    y | Y | yes | YES) ;;
    *) die "not applied: nothing was changed (make up YES=1 applies without asking)" ;;
  esac
fi

# --parallel: room for as many playbook runs at once as the dynamic-provider plugin's pool
# (OPENSTACK_NOVA_MAX_RUNS, default 16), which the CLI's default (8 on 2 cores) would cap;
# PULUMI_PARALLEL, when set, instead (lib.sh up_parallel).
parallel=$(up_parallel 2>&1) || die "$parallel"
phase_line "pulumi up" "stack $stack, --parallel $parallel, with the policy pack in policy/" \
  "each playbook run's progress below" "log: $log, events: $events"
# Each playbook run's progress as it goes (node, service, each play and task and how long
# it took), which the runs append to this file (components/ansible_runner/events.py).
: >"$progress"
tail -n +1 -F --pid=$$ "$progress" >&2 2>/dev/null &
shown=$!
rc=0
OPENSTACK_NOVA_PROGRESS=$progress pulumi up --json --yes --skip-preview --non-interactive \
  --policy-pack policy --parallel "$parallel" -s "$stack" >"$events" 2>>"$log" || rc=$?
sleep 0.2 # the last lines of the runs that just ended
kill "$shown" 2>/dev/null || true
wait "$shown" 2>/dev/null || true
table "$events"
[ "$rc" -eq 0 ] || die "pulumi up -s $stack failed (the errors are above the table; events: $events, log: $log)"
echo "== pulumi up -s $stack: done"
