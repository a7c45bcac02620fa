#!/usr/bin/env bash
# A real kube-apiserver and etcd on loopback, run the way envtest runs them:
# objects are real, but there is no kubelet and no controller.
# Usage: apiserver.sh start|stop|status
# Binaries come from $TOOLCHAIN_BIN; state, logs and kubeconfig from $ENV_DIR/kube.
# Optional fixed ports: KUBE_APISERVER_PORT, ETCD_PORT.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=devenv/lib.sh
. "$here/lib.sh"

KUBE_DIR=$ENV_DIR/kube
PORTS=$KUBE_DIR/ports.env
KUBECONFIG_FILE=$KUBE_DIR/kubeconfig
READY_TIMEOUT=${READY_TIMEOUT:-60}
# Arguments only our processes carry: how we recognise them in /proc.
ETCD_MARK="--data-dir=$KUBE_DIR/etcd"
API_MARK="--cert-dir=$KUBE_DIR/certs"

need_bin() {
  [ -n "${TOOLCHAIN_BIN:-}" ] || die "TOOLCHAIN_BIN is not set: run 'make toolchain' and point TOOLCHAIN_BIN at its bin directory"
  [ -x "$TOOLCHAIN_BIN/$1" ] || die "$1 is missing from $TOOLCHAIN_BIN: run 'make toolchain'"
}

port_of() { # key: value recorded in ports.env, or nothing
  [ -f "$PORTS" ] && sed -n "s/^$1=\([0-9]*\)$/\1/p" "$PORTS"
  return 0
}

# An explicit port must be free; otherwise keep last run's port when we can,
# so the kubeconfig (and Pulumi's provider inputs) stay the same.
pick_port() { # variable-name taken-port...
  local var=$1 fixed=${!1:-} prev; shift
  if [ -n "$fixed" ]; then
    [[ $fixed =~ ^[0-9]+$ ]] || die "$var=$fixed is not a port number"
    port_free "$fixed" || die "port $fixed is in use ($var); free it or unset the variable"
    echo "$fixed"; return
  fi
  prev=$(port_of "$var")
  if [ -n "$prev" ] && [[ " $* " != *" $prev "* ]] && port_free "$prev"; then
    echo "$prev"; return
  fi
  local p
  while p=$(free_port); [[ " $* " == *" $p "* ]]; do :; done
  echo "$p"
}

pid_of() { cat "$KUBE_DIR/$1.pid" 2>/dev/null || true; }
etcd_up() { pid_is "$(pid_of etcd)" "$ETCD_MARK"; }
api_up() { pid_is "$(pid_of kube-apiserver)" "$API_MARK"; }
etcd_healthy() { curl -sf --max-time 2 "http://127.0.0.1:$1/health" 2>/dev/null | grep -q '"health":"true"'; }
api_ready() { [ "$(curl -ksf --max-time 2 "https://127.0.0.1:$1/readyz" 2>/dev/null)" = ok ]; }

healthy() {
  local e a
  e=$(port_of ETCD_PORT); a=$(port_of KUBE_APISERVER_PORT)
  [ -n "$e" ] && [ -n "$a" ] && etcd_up && api_up && etcd_healthy "$e" && api_ready "$a"
}

# Kill ours (by pid file and by marker, in case a pid file got lost).
kill_all() {
  local pids
  pids=$(pids_matching "$API_MARK")
  # shellcheck disable=SC2086  # word splitting wanted: a list of pids
  kill_pids $pids
  pids=$(pids_matching "$ETCD_MARK")
  # shellcheck disable=SC2086
  kill_pids $pids
  rm -f "$KUBE_DIR/etcd.pid" "$KUBE_DIR/kube-apiserver.pid"
}

# Token, token file and service-account key are made once and kept, so a
# restart keeps every kubeconfig that was handed out valid.
ensure_credentials() {
  [ -s "$KUBE_DIR/token" ] || openssl rand -hex 32 | write_private "$KUBE_DIR/token"
  printf '%s,admin,admin,"system:masters"\n' "$(cat "$KUBE_DIR/token")" | write_private "$KUBE_DIR/tokens.csv"
  if [ ! -s "$KUBE_DIR/sa.key" ]; then
    (umask 077; openssl genrsa -out "$KUBE_DIR/sa.key" 2048 2>/dev/null) || die "openssl genrsa failed"
  fi
  chmod 600 "$KUBE_DIR/token" "$KUBE_DIR/sa.key"
}

write_kubeconfig() { # apiserver-port
  write_private "$KUBECONFIG_FILE" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: openstack-nova
  cluster:
    server: https://127.0.0.1:$1
    insecure-skip-tls-verify: true
users:
- name: openstack-nova
  user:
    token: $(cat "$KUBE_DIR/token")
contexts:
- name: openstack-nova
  context:
    cluster: openstack-nova
    user: openstack-nova
current-context: openstack-nova
EOF
}

# One line, then the log tail that explains it; leave nothing half-started.
fail_with_log() { # log message
  printf '%s: %s; last lines of %s:\n' "$PROG" "$2" "$1" >&2
  tail -n 15 "$1" 2>/dev/null | sed 's/^/  /' >&2
  kill_all
  exit 1
}

start_etcd() { # client-port peer-port
  local peer=http://127.0.0.1:$2 log=$KUBE_DIR/etcd.log i
  rotate_log "$log"
  spawn "$KUBE_DIR/etcd.pid" "$log" "$TOOLCHAIN_BIN/etcd" \
    --name=openstack-nova "$ETCD_MARK" \
    --listen-client-urls="http://127.0.0.1:$1" --advertise-client-urls="http://127.0.0.1:$1" \
    --listen-peer-urls="$peer" --initial-advertise-peer-urls="$peer" \
    --initial-cluster="openstack-nova=$peer" --unsafe-no-fsync=true
  for ((i = 0; i < 150; i++)); do
    etcd_healthy "$1" && return 0
    [ $i -gt 5 ] && ! etcd_up && fail_with_log "$log" "etcd exited during start"
    sleep 0.2
  done
  fail_with_log "$log" "etcd not healthy on port $1 after 30 s"
}

start_apiserver() { # port etcd-port
  local log=$KUBE_DIR/kube-apiserver.log i
  rotate_log "$log"
  mkdir -p "$KUBE_DIR/certs"
  spawn "$KUBE_DIR/kube-apiserver.pid" "$log" "$TOOLCHAIN_BIN/kube-apiserver" \
    "--etcd-servers=http://127.0.0.1:$2" "$API_MARK" \
    --bind-address=127.0.0.1 "--secure-port=$1" --advertise-address=127.0.0.1 \
    "--token-auth-file=$KUBE_DIR/tokens.csv" \
    "--service-account-key-file=$KUBE_DIR/sa.key" "--service-account-signing-key-file=$KUBE_DIR/sa.key" \
    "--service-account-issuer=https://127.0.0.1:$1/" \
    --authorization-mode=RBAC --allow-privileged=true \
    --service-cluster-ip-range=10.0.0.0/24 \
    --disable-admission-plugins=ServiceAccount
  for ((i = 0; i < READY_TIMEOUT * 2; i++)); do
    api_ready "$1" && return 0
    [ $i -gt 4 ] && ! api_up && fail_with_log "$log" "kube-apiserver exited during start"
    sleep 0.5
  done
  fail_with_log "$log" "kube-apiserver not ready on port $1 after $READY_TIMEOUT s"
}

cmd_start() {
  need_bin etcd; need_bin kube-apiserver; need_bin kubectl
  mkdir -p "$KUBE_DIR"; chmod 700 "$KUBE_DIR"
  take_lock "$KUBE_DIR/lock"
  if healthy; then
    note "already running on https://127.0.0.1:$(port_of KUBE_APISERVER_PORT)"
    return 0
  fi
  # A killed earlier run leaves pid files or a lone process behind.
  if [ -e "$KUBE_DIR/etcd.pid" ] || [ -e "$KUBE_DIR/kube-apiserver.pid" ] ||
     [ -n "$(pids_matching "$ETCD_MARK")$(pids_matching "$API_MARK")" ]; then
    kill_all
    note "recovered stale apiserver state (a previous run was killed or unhealthy); starting fresh"
  fi
  local etcd_port peer_port api_port
  etcd_port=$(pick_port ETCD_PORT)
  api_port=$(pick_port KUBE_APISERVER_PORT "$etcd_port")
  peer_port=$(pick_port ETCD_PEER_PORT "$etcd_port" "$api_port")
  printf 'ETCD_PORT=%s\nETCD_PEER_PORT=%s\nKUBE_APISERVER_PORT=%s\n' "$etcd_port" "$peer_port" "$api_port" >"$PORTS"
  ensure_credentials
  write_kubeconfig "$api_port"
  start_etcd "$etcd_port" "$peer_port"
  start_apiserver "$api_port" "$etcd_port"
  note "running: https://127.0.0.1:$api_port (etcd 127.0.0.1:$etcd_port); KUBECONFIG=$KUBECONFIG_FILE"
}

cmd_stop() {
  mkdir -p "$KUBE_DIR"
  take_lock "$KUBE_DIR/lock"
  kill_all
  note "stopped"
}

cmd_status() {
  if healthy; then
    note "running: kube-apiserver https://127.0.0.1:$(port_of KUBE_APISERVER_PORT) (pid $(pid_of kube-apiserver)), etcd http://127.0.0.1:$(port_of ETCD_PORT) (pid $(pid_of etcd))"
    return 0
  fi
  if etcd_up || api_up; then
    note "not healthy: etcd $(etcd_up && echo up || echo down), kube-apiserver $(api_up && echo up || echo down); see $KUBE_DIR/*.log"
  else
    note "stopped"
  fi
  return 3
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  *) die "usage: $PROG start|stop|status" ;;
esac
