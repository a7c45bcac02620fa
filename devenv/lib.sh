# shellcheck shell=bash
# Shared by the devenv scripts (sourced, never run). State lives outside the
# checkout so that every clone and `make down` finds the same environment.

# shellcheck disable=SC2034  # used by the scripts that source this file
CACHE=${OPENSTACK_NOVA_CACHE:-$HOME/.cache/openstack-nova}
# shellcheck disable=SC2034
ENV_DIR=${OPENSTACK_NOVA_ENV:-$CACHE/env}
PROG=$(basename "$0")

# One line on stderr, so a failing `make up` says what to do in one glance.
die() { printf '%s: %s\n' "$PROG" "$*" >&2; exit 1; }
note() { printf '%s: %s\n' "$PROG" "$*"; }

# The slow phases of a first `make up` show one line each on the console; what
# Go, pip and pulumi print goes to the phase's log here (the image keeps its
# build logs beside each build), shown when a step fails.
# shellcheck disable=SC2034
LOG_DIR=$CACHE/logs

# The phase's one line, on stderr (`make env` output is eval'ed): what it does,
# how long it usually takes, where its output goes.
phase_line() { # name what how-long where
  printf '== %s: %s (%s; %s)\n' "$1" "$2" "$3" "$4" >&2
}
# A phase with a log of its own, started afresh.
phase() { # name log what how-long
  mkdir -p "$(dirname "$2")"
  printf '%s %s: %s\n' "$(date -u +%FT%TZ)" "$1" "$3" >"$2"
  phase_line "$1" "$3" "$4" "log: $2"
}

# How long a step usually takes, from the SECONDS it took on the reference
# machine with cold caches (warm download caches save about a third).
usually() { # seconds
  local hi=$((($1 + 59) / 60)) lo=$((($1 * 7 / 10 + 30) / 60))
  if [ "$1" -lt 60 ]; then echo "usually under a minute"
  elif [ "$lo" -ge "$hi" ]; then echo "usually about $hi min"
  else echo "usually $lo-$hi min"; fi
}

# Run CMD with its output appended to LOG; when it fails, say so (log_failed).
logged() { # log cmd...
  local log=$1; shift
  mkdir -p "$(dirname "$log")"
  "$@" >>"$log" 2>&1 || log_failed "$log" "'$*'"
}

# A step that wrote to LOG failed: the log's last lines and its path, then exit.
log_failed() { # log what
  tail -n 30 "$1" 2>/dev/null | sed 's/^/  | /' >&2
  die "$2 failed (the last lines of its log are above; full log: $1)"
}

require_root() {
  [ "$(id -u)" -eq 0 ] || die "must run as root: network namespaces and mounts need it"
}

# Single-quote a string for sh -c scripts (POSIX sh has no printf %q).
shq() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# True if nothing listens on 127.0.0.1:PORT. SO_REUSEADDR ignores TIME_WAIT
# leftovers, which would otherwise look like a busy port after a restart.
port_free() {
  python3 - "$1" <<'EOF'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
EOF
}

# Wait until HOST:PORT accepts a TCP connection (there is no ping here).
wait_tcp() { # host port seconds
  python3 - "$@" <<'EOF'
import socket, sys, time
host, port, deadline = sys.argv[1], int(sys.argv[2]), time.time() + float(sys.argv[3])
while True:
    try:
        socket.create_connection((host, port), timeout=1).close()
        sys.exit(0)
    except OSError:
        if time.time() > deadline:
            sys.exit(1)
        time.sleep(0.2)
EOF
}

# PIDs whose command line contains MARKER. Matching on a path of ours (not on
# a program name) keeps us away from other people's etcd or sshd processes.
pids_matching() {
  # The marker goes in through the environment, so this scan never finds itself.
  MARKER=$1 python3 - <<'EOF'
import os
marker = os.environ["MARKER"].encode()
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ")
    except OSError:
        continue
    if marker in cmd:
        print(pid)
EOF
}

# True if PID is alive and still the process we started (PIDs get reused).
pid_is() { # pid marker
  [ -n "$1" ] && [ -d "/proc/$1" ] || return 1
  case "$(tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline")" in *"$2"*) return 0 ;; esac
  return 1
}

# TERM, then KILL whatever is left after a few seconds. Zombies count as gone.
kill_pids() { # pid...
  kill_pids_after 50 "$@"
}
kill_pids_after() { # tenths-of-a-second-before-KILL pid...
  local tenths=$1; shift
  [ $# -gt 0 ] || return 0
  kill -TERM "$@" 2>/dev/null || true
  wait_gone "$tenths" "$@" && return 0
  kill -KILL "$@" 2>/dev/null || true
  wait_gone 20 "$@" || true
}
alive_pids() { # pid...: those still running (not zombies)
  local p
  for p in "$@"; do
    [ -d "/proc/$p" ] || continue
    grep -q '^State:[[:space:]]*Z' "/proc/$p/status" 2>/dev/null || echo "$p"
  done
}
wait_gone() { # tenths-of-a-second pid...
  local n=$1 i; shift
  for ((i = 0; i < n; i++)); do
    [ -z "$(alive_pids "$@")" ] && return 0
    sleep 0.1
  done
  return 1
}

# Start CMD detached from our session (survives the shell and make), with its
# own PID in PIDFILE even if setsid has to fork. fd 9 is our lock: not passed on.
# The log is appended to: a supervised daemon writes to it through fds of its own.
spawn() { # pidfile log cmd...
  local pidfile=$1 log=$2; shift 2
  # shellcheck disable=SC2016  # $$ and $@ are for the inner sh
  setsid nohup sh -c 'echo $$ >"$1"; shift; exec "$@"' sh "$pidfile" "$@" \
    </dev/null >>"$log" 2>&1 9>&- &
}

# Keep the previous log of a (possibly crashed) run for a post-mortem.
rotate_log() { [ -f "$1" ] && mv -f "$1" "$1.prev"; return 0; }

# Write stdin to FILE readable by root only (tokens, kubeconfigs).
write_private() { (umask 077; cat >"$1.tmp") && chmod 600 "$1.tmp" && mv -f "$1.tmp" "$1"; }

# Serialise concurrent runs of one script on fd 9.
take_lock() { # lockfile
  exec 9>"$1"
  flock -w 300 9 || die "another $PROG is still running (lock $1)"
}

# Import an OCI image tarball (devenv/oci.py writes them) into containerd's
# k8s.io namespace, unless every name it carries is there at its digest
# already. Imported images are pinned: kubelet's image GC never removes them
# (nothing could pull them back).
import_image() { # ctr socket tarball
  local ctr=$1 sock=$2 tar=$3 have name digest
  local -a names=() missing=()
  [[ $sock == /* ]] || sock=$PWD/$sock # ctr takes a socket path only if absolute
  have=$("$ctr" -a "$sock" -n k8s.io images ls 2>/dev/null | awk 'NR > 1 {print $1, $3}')
  while read -r name digest; do
    names+=("$name")
    grep -qxF "$name $digest" <<<"$have" || missing+=("$name")
  done < <(python3 "$(dirname "${BASH_SOURCE[0]}")/oci.py" --index "$tar")
  [ ${#names[@]} -gt 0 ] || die "$tar names no image"
  [ ${#missing[@]} -eq 0 ] && return 0
  # ctr warns about cgroup v1 on every call: its output only matters on failure.
  local out
  out=$("$ctr" -a "$sock" -n k8s.io images import "$tar" 2>&1) || die "ctr could not import $tar: $(tail -n 1 <<<"$out")"
  for name in "${names[@]}"; do
    out=$("$ctr" -a "$sock" -n k8s.io images label "$name" io.cri-containerd.pinned=pinned 2>&1) ||
      die "ctr could not pin $name: $(tail -n 1 <<<"$out")"
  done
}

# `pulumi up --parallel` for `make up`: PULUMI_PARALLEL when set (the CLI's own setting), else
# as many steps at once as the dynamic-provider plugin's pool runs playbooks, never fewer than
# the CLI's default (up_parallel in devenv/dynamic_provider.py, the one place the pool is sized).
up_parallel() {
  if [ -n "${PULUMI_PARALLEL:-}" ]; then echo "$PULUMI_PARALLEL"; return 0; fi
  python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import dynamic_provider as p; sys.exit(p.print_up_parallel())' \
    "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
}
