#!/usr/bin/env bash
# Runs kolla's command (/run_command, written by set_configs) as the nova user
# and starts it again whenever it exits: on nodes without a container engine,
# this stands in for the container and its restart policy.
#
#   nova-compute-supervisor.sh start PIDFILE LOGFILE BINDIR [CAPS]
#       prints "started PID" or "running PID"
#   nova-compute-supervisor.sh stop PIDFILE      prints "stopped PID" or "not running"
#   nova-compute-supervisor.sh status PIDFILE    "running PID" (exit 0) or "not running" (exit 3)
#
# BINDIR comes first in the command's PATH (where `nova-compute` is found);
# CAPS, comma-separated, are ambient capabilities the command keeps as nova.
# The supervisor writes its pid to PIDFILE; it and the command form one
# process group, so stop reaches both.
set -euo pipefail

RUN_USER=nova
STOP_TIMEOUT=60 # seconds before the group is killed
RESTART_DELAY=5
LOG_MAX_BYTES=$((20 * 1024 * 1024)) # kept once as LOGFILE.1

log() { printf '%s nova-compute-supervisor: %s\n' "$(date -u +%FT%TZ)" "$*"; }

# The pid in PIDFILE when it is this script's loop on this node (the nodes
# share the host's pids: a node has its own network namespace).
running_pid() { # pidfile
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$0 run " || return 1
  [ "$(readlink "/proc/$pid/ns/net")" = "$(readlink /proc/self/ns/net)" ] || return 1
  echo "$pid"
}

rotate_log() { # logfile
  if [ "$(stat -c %s "$1" 2>/dev/null || echo 0)" -gt "$LOG_MAX_BYTES" ]; then
    mv -f "$1" "$1.1"
  fi
  : >>"$1"
  # debug output of a service: for its user only
  chmod 0600 "$1"
  chown "$RUN_USER:$RUN_USER" "$1"
}

child=""
stopping=""
on_term() {
  stopping=1
  if [ -n "$child" ]; then kill -TERM "$child" 2>/dev/null || true; fi
}

# The loop, started detached by `start`; its output and the command's go to LOGFILE.
run() { # pidfile logfile bindir caps
  local pidfile=$1 logfile=$2 bindir=$3 caps=$4 status cmd=() privs=()
  umask 077
  exec >>"$logfile" 2>&1
  trap on_term TERM INT
  echo $$ >"$pidfile.tmp" && mv -f "$pidfile.tmp" "$pidfile"
  cd /
  if [ -n "$caps" ]; then
    privs=(--inh-caps "+$caps" --ambient-caps "+$caps")
  fi
  while [ -z "$stopping" ]; do
    rotate_log "$logfile"
    exec >>"$logfile" 2>&1
    read -ra cmd </run_command || true
    if [ ${#cmd[@]} -eq 0 ]; then
      log "/run_command is empty: nothing to start"
    else
      log "starting ${cmd[*]} as $RUN_USER"
      # the umask of a container's process; only the log is the supervisor's own (077)
      (umask 022 && exec env -i HOME=/var/lib/nova LANG=C.UTF-8 \
        PATH="$bindir:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        setpriv --reuid "$RUN_USER" --regid "$RUN_USER" --init-groups "${privs[@]}" -- "${cmd[@]}") \
        </dev/null >>"$logfile" 2>&1 &
      child=$!
      status=0
      # a signal interrupts wait: wait again until the command has exited
      wait "$child" || status=$?
      while kill -0 "$child" 2>/dev/null; do wait "$child" || status=$?; done
      child=""
      log "${cmd[0]} exited with status $status"
    fi
    [ -z "$stopping" ] || break
    log "starting again in ${RESTART_DELAY}s"
    sleep "$RESTART_DELAY" &
    wait $! || true
  done
  rm -f "$pidfile"
  log "stopped"
}

start() { # pidfile logfile bindir [caps]
  local pidfile=$1 logfile=$2 pid i
  if pid=$(running_pid "$pidfile"); then echo "running $pid"; return 0; fi
  mkdir -p "$(dirname "$pidfile")" "$(dirname "$logfile")"
  rm -f "$pidfile"
  setsid "$0" run "$pidfile" "$logfile" "$3" "${4:-}" </dev/null >/dev/null 2>&1 &
  for ((i = 0; i < 100; i++)); do
    if pid=$(running_pid "$pidfile"); then echo "started $pid"; return 0; fi
    sleep 0.1
  done
  echo "the supervisor did not start; see $logfile" >&2
  return 1
}

stop() { # pidfile
  local pid i
  if ! pid=$(running_pid "$1"); then rm -f "$1"; echo "not running"; return 0; fi
  kill -TERM "$pid"
  for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do
    kill -0 -- "-$pid" 2>/dev/null || { rm -f "$1"; echo "stopped $pid"; return 0; }
    sleep 0.1
  done
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$1"
  echo "stopped $pid"
}

status() { # pidfile
  local pid
  if pid=$(running_pid "$1"); then echo "running $pid"; return 0; fi
  echo "not running"
  return 3
}

case "${1:-} $#" in
  "start 4" | "start 5") start "${@:2}" ;;
  "stop 2") stop "$2" ;;
  "status 2") status "$2" ;;
  "run 5") run "${@:2}" ;;
  *) echo "usage: $0 start PIDFILE LOGFILE BINDIR [CAPS] | stop PIDFILE | status PIDFILE" >&2; exit 2 ;;
esac
