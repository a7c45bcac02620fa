#!/usr/bin/env bash
# A real single-node Kubernetes: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, containerd with runc, kubelet, kube-proxy, a CNI bridge, and
# CoreDNS as a Deployment behind the kube-dns Service. Each daemon runs under
# devenv/supervise.py, which starts it again when it exits (as systemd would).
# Usage: cluster.sh start|stop|status|restart DAEMON
# Binaries come from $TOOLCHAIN_BIN (its images/ holds the pause, CoreDNS and
# MetalLB images, imported at start; devenv/dataplane runs MetalLB); state, logs
# and kubeconfig from $ENV_DIR/kube. The node's address, interfaces, cgroups and
# nft tables are host-wide: one environment at a time runs a cluster. Optional
# fixed ports: KUBE_APISERVER_PORT, ETCD_PORT, ...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=devenv/lib.sh
. "$here/lib.sh"
# shellcheck source=devenv/versions.env
. "$here/versions.env"
# NODE_IP, POD_CIDR, SERVICE_CIDR, API_SERVICE_IP, DNS_IP: the address plan, shared with nodes.sh
# shellcheck source=devenv/network.env
. "$here/network.env"
shopt -u patsub_replacement 2>/dev/null || true # '&' in a value stays '&' in render

KUBE_DIR=$ENV_DIR/kube
PKI=$KUBE_DIR/pki
PORTS=$KUBE_DIR/ports.env
KUBECONFIG_FILE=$KUBE_DIR/kubeconfig
CTD_DIR=$KUBE_DIR/containerd
CTD_SOCK=$CTD_DIR/containerd.sock
CNI_CONF_DIR=$KUBE_DIR/cni/net.d
CNI_IPAM_DIR=$KUBE_DIR/cni/networks
CNI_BIN_DIR=/usr/lib/cni
RUN_DIR=/run/openstack-nova
OWNER=$RUN_DIR/cluster.owner
# What the host looked like before the first start (sysctls, nft tables,
# directories we had to create): restored by stop.
HOST_ORIG=$RUN_DIR/cluster-host.orig
CREATED=$RUN_DIR/cluster-created-paths
SHIM_SOCKET_DIR=$RUN_DIR/s
READY_TIMEOUT=${READY_TIMEOUT:-60}
TOOLCHAIN_BIN=${TOOLCHAIN_BIN:-}

NODE_NAME=openstack-nova-node
NODE_IF=novak8s0
POD_BRIDGE=novapods0
CNI_NETWORK=openstack-nova
CGROUP_ROOT=openstack-nova
# Where containers made with `ctr -n k8s.io run` (not through kubelet) get their cgroups.
CTR_CGROUP=k8s.io
SA_ISSUER=https://kubernetes.default.svc.cluster.local
# The images of $TOOLCHAIN_BIN/images/ that start imports into containerd.
IMAGES=(pause coredns metallb-controller metallb-speaker)
# Start order; stop goes backwards.
DAEMONS=(etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy)
# The sysctls kubelet and the CNI bridge change on the host.
SYSCTLS=(net.ipv4.ip_forward vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes)
# Host paths that cannot be redirected into $KUBE_DIR (parents first); the
# /run/containerd ones come from `ctr run`, the client's defaults.
HOST_PATHS=(/var/lib/kubelet /var/lib/kubelet/device-plugins /var/log/containers /var/lib/cni /var/lib/cni/results
  /run/containerd /run/containerd/fifo /run/containerd/runc /run/containerd/runc/k8s.io)

# --- small helpers ------------------------------------------------------------

need_bin() {
  [ -n "$TOOLCHAIN_BIN" ] || die "TOOLCHAIN_BIN is not set: run 'make toolchain' and point TOOLCHAIN_BIN at its bin directory"
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

# Fill @NAME@ placeholders of a template under devenv/cluster.
render() { # template NAME=value...
  local text kv
  text=$(<"$here/cluster/$1"); shift
  for kv in "$@"; do text=${text//@${kv%%=*}@/${kv#*=}}; done
  [[ $text != *@[A-Z]*([A-Z_])@* ]] || die "devenv/cluster/$1 has a placeholder nobody fills"
  printf '%s\n' "$text"
}

# Write stdin to FILE (root only) if it differs; true if it changed.
put_file() { # file
  (umask 077; cat >"$1.tmp")
  if cmp -s "$1.tmp" "$1"; then rm -f "$1.tmp"; return 1; fi
  chmod 600 "$1.tmp"; mv -f "$1.tmp" "$1"
}

kubectl_admin() { "$TOOLCHAIN_BIN/kubectl" --kubeconfig "$KUBECONFIG_FILE" --request-timeout=10s "$@"; }
ctr_cmd() { "$TOOLCHAIN_BIN/ctr" -a "$CTD_SOCK" -n k8s.io "$@"; }

# --- daemons ------------------------------------------------------------------

# The daemon's own pid: its supervisor (devenv/supervise.py) writes it after every start.
pid_of() { cat "$KUBE_DIR/$1.pid" 2>/dev/null || true; }
# An argument only our process carries: how we recognise it in /proc.
marker_of() {
  case $1 in
    etcd) echo "--data-dir=$KUBE_DIR/etcd" ;;
    kube-apiserver) echo "--tls-cert-file=$PKI/apiserver.crt" ;;
    containerd) echo "--config=$CTD_DIR/config.toml" ;;
    kubelet) echo "--root-dir=$KUBE_DIR/kubelet" ;;
    kube-proxy) echo "--config=$KUBE_DIR/kube-proxy.yaml" ;;
    *) echo "--kubeconfig=$KUBE_DIR/$1.kubeconfig" ;;
  esac
}
daemon_up() { pid_is "$(pid_of "$1")" "$(marker_of "$1")"; }
# Each daemon runs under a supervisor that starts it again when it exits, as systemd's Restart=always
# would (kube-scheduler exits on purpose when its cache is corrupt). The supervisor's argv carries
# the daemon's whole command line, marker included, and the daemon's pid file: the latter is
# how we tell the supervisor from the daemon.
supervisor_marker() { echo "--pidfile=$KUBE_DIR/$1.pid"; }
supervisor_pid() { cat "$KUBE_DIR/$1.supervisor.pid" 2>/dev/null || true; }
supervisor_up() { pid_is "$(supervisor_pid "$1")" "$(supervisor_marker "$1")"; }
# The daemon that runs is the child of its supervisor (not one left from a run without).
supervised() { # name
  supervisor_up "$1" && daemon_up "$1" &&
    [ "$(sed 's/.*) //' "/proc/$(pid_of "$1")/stat" 2>/dev/null | cut -d' ' -f2)" = "$(supervisor_pid "$1")" ]
}
stale_left() {
  [ -e "$KUBE_DIR/$1.pid" ] || [ -e "$KUBE_DIR/$1.supervisor.pid" ] || [ -n "$(pids_matching "$(marker_of "$1")")" ]
}
# Running with exactly the arguments in ARGV.
daemon_current() { # name
  daemon_up "$1" && [ "$(tr '\0' '\n' <"/proc/$(pid_of "$1")/cmdline")" = "$(printf '%s\n' "${ARGV[@]}")" ]
}

# The supervisor first, also one left from an earlier run: it passes SIGTERM on and waits up to
# 10 s for the daemon (then KILLs it), and restarts nothing after. Then whatever still carries the
# daemon's marker (a daemon of a run without supervisor, or one whose supervisor was KILLed).
stop_daemon() { # name
  local pids
  pids=$(pids_matching "$(supervisor_marker "$1")")
  # shellcheck disable=SC2086  # a list of pids
  kill_pids_after 150 $pids
  pids=$(pids_matching "$(marker_of "$1")")
  # shellcheck disable=SC2086  # a list of pids
  kill_pids $pids
  rm -f "$KUBE_DIR/$1.pid" "$KUBE_DIR/$1.supervisor.pid"
}

# Start ARGV under its supervisor, detached; the daemon's output and the supervisor's lines (each
# exit and restart) go to LOG.
start_daemon() { # name log
  spawn "$KUBE_DIR/$1.supervisor.pid" "$2" python3 "$here/supervise.py" "--name=$1" \
    "$(supervisor_marker "$1")" "--log=$2" -- "${ARGV[@]}"
}

healthy() { # name
  case $1 in
    etcd) curl -sf --max-time 2 "http://127.0.0.1:$(port_of ETCD_PORT)/health" 2>/dev/null | grep -q '"health":"true"' ;;
    kube-apiserver) [ "$(curl -sf --max-time 2 --cacert "$PKI/ca.crt" "https://$NODE_IP:$(port_of KUBE_APISERVER_PORT)/readyz" 2>/dev/null)" = ok ] ;;
    kube-controller-manager) [ "$(curl -ksf --max-time 2 "https://127.0.0.1:$(port_of KUBE_CONTROLLER_MANAGER_PORT)/healthz" 2>/dev/null)" = ok ] ;;
    kube-scheduler) [ "$(curl -ksf --max-time 2 "https://127.0.0.1:$(port_of KUBE_SCHEDULER_PORT)/healthz" 2>/dev/null)" = ok ] ;;
    containerd) ctr_cmd version >/dev/null 2>&1 ;;
    kubelet) [ "$(curl -sf --max-time 2 "http://127.0.0.1:$(port_of KUBELET_HEALTHZ_PORT)/healthz" 2>/dev/null)" = ok ] ;;
    kube-proxy) curl -sf --max-time 2 -o /dev/null "http://127.0.0.1:$(port_of KUBE_PROXY_HEALTHZ_PORT)/healthz" ;;
  esac
}
wait_healthy() { # name seconds
  local i
  for ((i = 0; i < $2 * 4; i++)); do
    healthy "$1" && return 0
    [ $i -gt 8 ] && ! daemon_up "$1" && return 1
    sleep 0.25
  done
  return 1
}

# One line, then the log tail that explains it.
explain_log() { # log message
  printf '%s: %s; last lines of %s:\n' "$PROG" "$2" "$1" >&2
  tail -n 15 "$1" 2>/dev/null | sed 's/^/  /' >&2
}
# The same, and leave nothing half-started.
fail_with_log() { # log message
  explain_log "$@"
  teardown >/dev/null 2>&1 || true
  exit 1
}

# The command line of each daemon, in ARGV. Controller-manager and scheduler
# serve only /healthz (always allowed), so they need no delegated authentication.
argv_of() { # name
  case $1 in
    etcd)
      local peer client
      peer=http://127.0.0.1:$(port_of ETCD_PEER_PORT); client=http://127.0.0.1:$(port_of ETCD_PORT)
      ARGV=("$TOOLCHAIN_BIN/etcd" --name=openstack-nova "$(marker_of etcd)"
        "--listen-client-urls=$client" "--advertise-client-urls=$client"
        "--listen-peer-urls=$peer" "--initial-advertise-peer-urls=$peer"
        "--initial-cluster=openstack-nova=$peer" --unsafe-no-fsync=true) ;;
    kube-apiserver)
      ARGV=("$TOOLCHAIN_BIN/kube-apiserver" "$(marker_of kube-apiserver)" "--tls-private-key-file=$PKI/apiserver.key"
        "--etcd-servers=http://127.0.0.1:$(port_of ETCD_PORT)"
        "--bind-address=$NODE_IP" "--advertise-address=$NODE_IP" "--secure-port=$(port_of KUBE_APISERVER_PORT)"
        "--client-ca-file=$PKI/ca.crt" "--token-auth-file=$KUBE_DIR/tokens.csv"
        '--authorization-mode=Node,RBAC' --enable-admission-plugins=NodeRestriction
        "--service-account-key-file=$KUBE_DIR/sa.key" "--service-account-signing-key-file=$KUBE_DIR/sa.key"
        "--service-account-issuer=$SA_ISSUER" "--service-cluster-ip-range=$SERVICE_CIDR"
        "--kubelet-client-certificate=$PKI/apiserver-kubelet-client.crt" "--kubelet-client-key=$PKI/apiserver-kubelet-client.key"
        "--kubelet-certificate-authority=$PKI/ca.crt" --kubelet-preferred-address-types=InternalIP
        --allow-privileged=true) ;;
    kube-controller-manager)
      ARGV=("$TOOLCHAIN_BIN/kube-controller-manager" "$(marker_of "$1")"
        --bind-address=127.0.0.1 "--secure-port=$(port_of KUBE_CONTROLLER_MANAGER_PORT)" --leader-elect=false
        '--controllers=*,-nodeipam' "--root-ca-file=$PKI/ca.crt" "--service-account-private-key-file=$KUBE_DIR/sa.key"
        --use-service-account-credentials=true "--flex-volume-plugin-dir=$KUBE_DIR/volume-plugins"
        "--cluster-signing-cert-file=$PKI/ca.crt" "--cluster-signing-key-file=$PKI/ca.key"
        "--service-cluster-ip-range=$SERVICE_CIDR" --cluster-name=openstack-nova) ;;
    kube-scheduler)
      ARGV=("$TOOLCHAIN_BIN/kube-scheduler" "$(marker_of "$1")"
        --bind-address=127.0.0.1 "--secure-port=$(port_of KUBE_SCHEDULER_PORT)" --leader-elect=false) ;;
    containerd)
      ARGV=("$TOOLCHAIN_BIN/containerd" "$(marker_of containerd)") ;;
    kubelet)
      ARGV=("$TOOLCHAIN_BIN/kubelet" "$(marker_of kubelet)" "--config=$KUBE_DIR/kubelet.yaml"
        "--kubeconfig=$KUBE_DIR/kubelet.kubeconfig" "--cert-dir=$KUBE_DIR/kubelet/pki"
        "--hostname-override=$NODE_NAME" "--node-ip=$NODE_IP") ;;
    kube-proxy)
      ARGV=("$TOOLCHAIN_BIN/kube-proxy" "$(marker_of kube-proxy)") ;;
  esac
}

# Start NAME unless it already runs with the same arguments and files; a
# dead or unhealthy one is replaced. Names of daemons whose files changed are
# in CHANGED.
ensure_daemon() { # name
  local name=$1 log=$KUBE_DIR/$1.log
  argv_of "$name"
  if daemon_current "$name" && supervised "$name" && [[ " $CHANGED " != *" $name "* ]] && wait_healthy "$name" 30; then
    return 0
  fi
  if daemon_up "$name"; then
    if daemon_current "$name" && [[ " $CHANGED " != *" $name "* ]] && ! supervised "$name"; then
      # Once per daemon, on the first start since the supervisors came in (or after one was killed).
      note "starting $name again under its supervisor: it runs without one"
    elif daemon_current "$name" && [[ " $CHANGED " != *" $name "* ]]; then
      note "recovered stale $name state (it runs but is not healthy); starting it again"
    else
      note "restarting $name: its configuration changed"
    fi
  elif stale_left "$name"; then
    note "recovered stale $name state (a previous run was killed or unhealthy); starting it again"
  fi
  stop_daemon "$name"
  rotate_log "$log"
  [ "$name" = kubelet ] && KUBELET_STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  start_daemon "$name" "$log"
  STARTED+=" $name"
  wait_healthy "$name" "$READY_TIMEOUT" || {
    daemon_up "$name" || fail_with_log "$log" "$name exited during start"
    fail_with_log "$log" "$name not healthy after $READY_TIMEOUT s"
  }
}

# --- credentials and configuration --------------------------------------------

# A client or serving certificate from the CA, made again only when its
# subject or names change.
issue_cert() { # name subject extended-key-usage [subjectAltName]
  local name=$1 spec="$2|$3|${4:-}"
  [ -s "$PKI/$name.crt" ] && [ "$(cat "$PKI/$name.spec" 2>/dev/null)" = "$spec" ] && return 0
  local ext="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=$3"
  [ -n "${4:-}" ] && ext+=$'\n'"subjectAltName=$4"
  (umask 077
   openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$PKI/$name.key" -subj "$2" 2>/dev/null |
     openssl x509 -req -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial -days 3650 \
       -extfile <(printf '%s\n' "$ext") -out "$PKI/$name.crt" 2>/dev/null) || die "openssl could not issue the $name certificate"
  printf '%s' "$spec" >"$PKI/$name.spec"
  CHANGED+=" certs"
}

ensure_pki() {
  mkdir -p "$PKI"; chmod 700 "$PKI"
  if [ ! -s "$PKI/ca.crt" ]; then
    (umask 077; openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
      -subj /CN=openstack-nova-ca -keyout "$PKI/ca.key" -out "$PKI/ca.crt" 2>/dev/null) || die "openssl could not make the CA"
    rm -f "$PKI"/*.spec
  fi
  issue_cert apiserver /CN=kube-apiserver serverAuth \
    "IP:$NODE_IP,IP:$API_SERVICE_IP,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost"
  issue_cert apiserver-kubelet-client /O=system:masters/CN=kube-apiserver-kubelet-client clientAuth
  issue_cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" serverAuth "IP:$NODE_IP,DNS:$NODE_NAME"
  if [ ! -s "$KUBE_DIR/sa.key" ]; then
    (umask 077; openssl genrsa -out "$KUBE_DIR/sa.key" 2048 2>/dev/null) || die "openssl genrsa failed"
  fi
  chmod 600 "$KUBE_DIR/sa.key"
}

# One token per identity, made once and kept, so every kubeconfig handed out
# stays valid across restarts. The admin's is $KUBE_DIR/token.
token_of() { # identity
  local f=$KUBE_DIR/tokens/$1
  [ "$1" = admin ] && f=$KUBE_DIR/token
  [ -s "$f" ] || openssl rand -hex 32 | write_private "$f"
  cat "$f"
}

kubeconfig_for() { # identity user
  cat <<EOF
apiVersion: v1
kind: Config
clusters:
- name: openstack-nova
  cluster:
    server: https://$NODE_IP:$(port_of KUBE_APISERVER_PORT)
    certificate-authority-data: $(base64 -w0 <"$PKI/ca.crt")
users:
- name: $2
  user:
    token: $(token_of "$1")
contexts:
- name: openstack-nova
  context:
    cluster: openstack-nova
    user: $2
current-context: openstack-nova
EOF
}

ensure_credentials() {
  mkdir -p "$KUBE_DIR/tokens"; chmod 700 "$KUBE_DIR/tokens"
  local id user
  {
    printf '%s,admin,admin,"system:masters"\n' "$(token_of admin)"
    printf '%s,system:node:%s,kubelet,"system:nodes"\n' "$(token_of kubelet)" "$NODE_NAME"
    for id in kube-controller-manager kube-scheduler kube-proxy; do
      printf '%s,system:%s,%s\n' "$(token_of "$id")" "$id" "$id"
    done
  } | put_file "$KUBE_DIR/tokens.csv" && CHANGED+=" kube-apiserver"
  kubeconfig_for admin admin | put_file "$KUBECONFIG_FILE" || true
  for id in kubelet kube-controller-manager kube-scheduler kube-proxy; do
    user=system:$id; [ "$id" = kubelet ] && user=system:node:$NODE_NAME
    kubeconfig_for "$id" "$user" | put_file "$KUBE_DIR/$id.kubeconfig" && CHANGED+=" $id"
  done
  return 0
}

ensure_configs() {
  local common=("KUBE_DIR=$KUBE_DIR" "PKI=$PKI" "CTD_DIR=$CTD_DIR" "CTD_SOCK=$CTD_SOCK" "NODE_IP=$NODE_IP"
    "NODE_NAME=$NODE_NAME" "POD_CIDR=$POD_CIDR" "DNS_IP=$DNS_IP")
  mkdir -p "$CTD_DIR" "$CNI_CONF_DIR" "$CNI_IPAM_DIR" "$KUBE_DIR/kubelet/pki" "$KUBE_DIR/pod-logs" "$KUBE_DIR/volume-plugins"
  render containerd.toml "${common[@]}" "PAUSE_IMAGE=$PAUSE_IMAGE" "RUNC=$(command -v runc)" \
    "CNI_BIN_DIR=$CNI_BIN_DIR" "CNI_CONF_DIR=$CNI_CONF_DIR" "SHIM_SOCKET_DIR=$SHIM_SOCKET_DIR" |
    put_file "$CTD_DIR/config.toml" && CHANGED+=" containerd"
  render 10-openstack-nova.conflist "${common[@]}" "CNI_NETWORK=$CNI_NETWORK" "POD_BRIDGE=$POD_BRIDGE" \
    "CNI_IPAM_DIR=$CNI_IPAM_DIR" | put_file "$CNI_CONF_DIR/10-openstack-nova.conflist" || true
  render kubelet.yaml "${common[@]}" "CGROUP_ROOT=$CGROUP_ROOT" "KUBELET_PORT=$(port_of KUBELET_PORT)" \
    "KUBELET_HEALTHZ_PORT=$(port_of KUBELET_HEALTHZ_PORT)" | put_file "$KUBE_DIR/kubelet.yaml" && CHANGED+=" kubelet"
  render kube-proxy.yaml "${common[@]}" "KUBE_PROXY_HEALTHZ_PORT=$(port_of KUBE_PROXY_HEALTHZ_PORT)" \
    "KUBE_PROXY_METRICS_PORT=$(port_of KUBE_PROXY_METRICS_PORT)" | put_file "$KUBE_DIR/kube-proxy.yaml" && CHANGED+=" kube-proxy"
  # New certificates: every daemon that serves or checks one reads them at start.
  [[ " $CHANGED " == *" certs "* ]] && CHANGED+=" kube-apiserver kubelet kube-controller-manager"
  return 0
}

# Keep each running daemon's port; pick the others (kept from the last run when free).
ensure_ports() {
  local pairs=(etcd:ETCD_PORT etcd:ETCD_PEER_PORT kube-apiserver:KUBE_APISERVER_PORT
    kube-controller-manager:KUBE_CONTROLLER_MANAGER_PORT kube-scheduler:KUBE_SCHEDULER_PORT
    kubelet:KUBELET_PORT kubelet:KUBELET_HEALTHZ_PORT kube-proxy:KUBE_PROXY_HEALTHZ_PORT kube-proxy:KUBE_PROXY_METRICS_PORT)
  local pair var port taken=() out=""
  for pair in "${pairs[@]}"; do
    var=${pair#*:}
    if daemon_up "${pair%%:*}" && [ -n "$(port_of "$var")" ]; then
      port=$(port_of "$var")
    else
      port=$(pick_port "$var" "${taken[@]}")
    fi
    taken+=("$port"); out+="$var=$port"$'\n'
  done
  printf '%s' "$out" >"$PORTS.tmp"; mv -f "$PORTS.tmp" "$PORTS"
}

# --- host ---------------------------------------------------------------------

ensure_packages() {
  local missing=() p
  command -v runc >/dev/null || missing+=(runc)
  [ -x "$CNI_BIN_DIR/bridge" ] || missing+=(containernetworking-plugins)
  command -v nft >/dev/null || missing+=(nftables)
  command -v iptables >/dev/null || missing+=(iptables)
  command -v conntrack >/dev/null || missing+=(conntrack)
  [ ${#missing[@]} -eq 0 ] && return 0
  note "installing ${missing[*]} (the node's runtime and network)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >/dev/null 2>&1 ||
    die "could not install ${missing[*]} with apt-get; install them and run again"
  for p in runc nft iptables conntrack; do command -v "$p" >/dev/null || die "$p is still missing after apt-get"; done
}

# The first start records what it is about to change; stop puts it back.
record_host() {
  [ -f "$HOST_ORIG" ] && return 0
  local s p
  {
    for s in "${SYSCTLS[@]}"; do echo "sysctl $s $(sysctl -n "$s")"; done
    nft list tables 2>/dev/null | sed 's/^table /nft /'
    if [ -d "/sys/fs/cgroup/memory/$CTR_CGROUP" ]; then echo "cgroup $CTR_CGROUP"; fi
  } >"$HOST_ORIG.tmp"
  mv -f "$HOST_ORIG.tmp" "$HOST_ORIG"
  for p in "${HOST_PATHS[@]}"; do
    [ -e "$p" ] || grep -qxF "$p" "$CREATED" 2>/dev/null || echo "$p" >>"$CREATED"
  done
}

cgroup_mounts() { awk '$3 == "cgroup" || $3 == "cgroup2" {print $2}' /proc/self/mounts; }

# kubelet wants its cgroup root in every v1 hierarchy; cpuset needs its CPUs
# and memory nodes copied from the parent before anything can join it.
ensure_cgroups() {
  local m d
  for m in $(cgroup_mounts); do
    d=$m/$CGROUP_ROOT
    [ -d "$d" ] || mkdir "$d"
    if [ -f "$m/cpuset.cpus" ]; then
      [ -n "$(cat "$d/cpuset.cpus")" ] || cat "$m/cpuset.cpus" >"$d/cpuset.cpus"
      [ -n "$(cat "$d/cpuset.mems")" ] || cat "$m/cpuset.mems" >"$d/cpuset.mems"
    fi
  done
}

ensure_network() {
  local other
  if ! ip link show "$NODE_IF" >/dev/null 2>&1; then
    other=$(ip -o -4 addr show to "$NODE_IP/32" | awk '{print $2}' | sort -u | tr '\n' ' ')
    [ -z "$other" ] || die "$NODE_IP is already used by ${other% }; remove it (or stop what owns it) first"
    # A bridge without ports holds the address (this kernel has no dummy driver).
    ip link add "$NODE_IF" type bridge
  fi
  ip -o -4 addr show dev "$NODE_IF" | grep -q " $NODE_IP/32 " || ip addr add "$NODE_IP/32" dev "$NODE_IF"
  ip link set "$NODE_IF" up
  # Pods reach Services through the host, and the EDPM nodes the LoadBalancer addresses.
  sysctl -qw net.ipv4.ip_forward=1
}

# Another environment's cluster uses the same address, interfaces and cgroups.
check_owner() {
  local other
  other=$(cat "$OWNER" 2>/dev/null || true)
  if [ -n "$other" ] && [ "$other" != "$ENV_DIR" ] && ip link show "$NODE_IF" >/dev/null 2>&1; then
    die "the cluster of another environment is running ($other); stop it with OPENSTACK_NOVA_ENV=$other $here/stop.sh"
  fi
}

# --- workloads ----------------------------------------------------------------

node_ready() {
  [ "$(kubectl_admin get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}
# Ready, and said so by the kubelet running now (the Node keeps an older
# kubelet's status until the controller-manager notices it is gone).
node_ready_since() { # RFC 3339 time, or nothing
  local status
  status=$(kubectl_admin get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].lastHeartbeatTime}' 2>/dev/null) || return 1
  [ "${status%% *}" = True ] && { [ -z "$1" ] || [[ ! ${status#* } < $1 ]]; }
}

wait_node_ready() { # kubelet start time, or nothing
  local i
  for ((i = 0; i < READY_TIMEOUT * 2; i++)); do
    node_ready_since "$1" && break
    daemon_up kubelet || fail_with_log "$KUBE_DIR/kubelet.log" "kubelet exited"
    sleep 0.5
  done
  node_ready_since "$1" || fail_with_log "$KUBE_DIR/kubelet.log" "node $NODE_NAME not Ready after $READY_TIMEOUT s"
  # An unknown field in the kubelet's config is only logged.
  if grep -q 'unknown field' "$KUBE_DIR/kubelet.log"; then
    fail_with_log "$KUBE_DIR/kubelet.log" "kubelet.yaml has a field this kubelet does not know: $(grep -o 'unknown field[^,]*' "$KUBE_DIR/kubelet.log" | head -1)"
  fi
}

# The cluster DNS answers for the API's Service, asked from the host: CoreDNS,
# kube-proxy, the pod network and the API all work.
dns_answers() {
  python3 - "$DNS_IP" "$API_SERVICE_IP" <<'PY'
import socket, struct, sys
server, expected = sys.argv[1], socket.inet_aton(sys.argv[2])
name = b"".join(bytes([len(p)]) + p.encode() for p in "kubernetes.default.svc.cluster.local".split(".")) + b"\0"
query = struct.pack(">HHHHHH", 0x4e4f, 0x0100, 1, 0, 0, 0) + name + struct.pack(">HH", 1, 1)
with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
    s.settimeout(1)
    try:
        s.sendto(query, (server, 53))
        reply = s.recv(512)
    except OSError:
        sys.exit(1)
ok = reply[:2] == query[:2] and reply[3] & 0x0F == 0 and struct.unpack(">H", reply[6:8])[0] > 0 and expected in reply[len(query):]
sys.exit(0 if ok else 1)
PY
}

coredns_available() {
  [ "$(kubectl_admin -n kube-system get deployment coredns -o 'jsonpath={.status.conditions[?(@.type=="Available")].status}' 2>/dev/null)" = True ]
}

# Applied again when the manifest changes (or the Deployment is gone); then
# the DNS must answer.
ensure_coredns() {
  local manifest sum i
  manifest=$(render coredns.yaml "COREDNS_IMAGE=$COREDNS_IMAGE" "DNS_IP=$DNS_IP")
  sum=$(sha256sum <<<"$manifest" | cut -c1-16)
  if [ "$(cat "$KUBE_DIR/coredns.applied" 2>/dev/null)" != "$sum" ] || ! kubectl_admin -n kube-system get deployment coredns >/dev/null 2>&1; then
    kubectl_admin apply -f - <<<"$manifest" >/dev/null || die "kubectl apply of CoreDNS failed"
    echo "$sum" >"$KUBE_DIR/coredns.applied"
    kubectl_admin -n kube-system rollout status deployment/coredns --timeout="${READY_TIMEOUT}s" >/dev/null 2>&1 ||
      fail_with_log "$KUBE_DIR/kubelet.log" "CoreDNS not available after $READY_TIMEOUT s ($(kubectl_admin -n kube-system get pods -l k8s-app=kube-dns --no-headers 2>&1 | head -1))"
  fi
  for ((i = 0; i < READY_TIMEOUT * 2; i++)); do
    dns_answers && return 0
    sleep 0.5
  done
  fail_with_log "$KUBE_DIR/kube-proxy.log" "the cluster DNS at $DNS_IP does not answer after $READY_TIMEOUT s ($(kubectl_admin -n kube-system get pods -l k8s-app=kube-dns --no-headers 2>&1 | head -1))"
}

# --- teardown -------------------------------------------------------------------

# Delete every pod while kubelet and containerd still run, so each sandbox's
# CNI DEL happens; controller-manager and scheduler go first so that nothing
# comes back.
drain_pods() {
  [ -x "$TOOLCHAIN_BIN/kubectl" ] && daemon_up kube-apiserver && daemon_up kubelet && daemon_up containerd || return 0
  stop_daemon kube-controller-manager; stop_daemon kube-scheduler
  kubectl_admin delete pods --all --all-namespaces --grace-period=5 --wait=false >/dev/null 2>&1 || return 0
  local i
  for ((i = 0; i < 120; i++)); do
    [ -z "$(kubectl_admin get pods --all-namespaces -o name 2>/dev/null)" ] &&
      ! compgen -G "/var/lib/cni/results/$CNI_NETWORK-*" >/dev/null && return 0
    sleep 0.5
  done
}

# Mounts under DIR, deepest first.
mounts_under() { # dir
  awk -v d="$1" '{ gsub(/\\040/, " ", $5); if ($5 == d || index($5, d "/") == 1) print $5 }' /proc/self/mountinfo |
    awk '{ print length($0) "\t" $0 }' | sort -rn | cut -f2-
}
unmount_all() {
  local m pass
  for pass in 1 2 3; do
    while read -r m; do
      [ -n "$m" ] && { umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; }
    done < <(mounts_under "$KUBE_DIR")
    [ -z "$(mounts_under "$KUBE_DIR")" ] && return 0
    : "$pass"
  done
}

# Whatever still runs in the node's cgroups (containers whose shim died) is
# killed; then the cgroups go, children first, in every hierarchy. The ctr
# containers' cgroup goes too when the first start found none.
remove_cgroups() {
  local names=("$CGROUP_ROOT") m pids i name
  [ -f "$HOST_ORIG" ] && ! grep -qxF "cgroup $CTR_CGROUP" "$HOST_ORIG" && names+=("$CTR_CGROUP")
  for ((i = 0; i < 30; i++)); do
    pids=$(for m in $(cgroup_mounts); do
      for name in "${names[@]}"; do
        if [ -d "$m/$name" ]; then find "$m/$name" -name cgroup.procs -exec cat {} + 2>/dev/null; fi
      done
    done | sort -u)
    [ -z "$pids" ] && break
    # shellcheck disable=SC2086  # a list of pids
    kill -KILL $pids 2>/dev/null || true
    sleep 0.2
  done
  for m in $(cgroup_mounts); do
    for name in "${names[@]}"; do
      [ -d "$m/$name" ] || continue
      find "$m/$name" -depth -type d -exec rmdir {} + 2>/dev/null || true
      [ -d "$m/$name" ] && note "left cgroup $m/$name: $(find "$m/$name" -name cgroup.procs -exec cat {} + 2>/dev/null | wc -l) processes still in it"
    done
  done
  return 0
}

# iptables rules the CNI plugins and kubelet leave (chains CNI-*, KUBE-*):
# rules that jump to them go, then the chains; one iptables-restore per table.
clean_iptables() {
  local cmd t saved
  local -a chains
  for cmd in iptables ip6tables; do
    command -v "$cmd-save" >/dev/null || continue
    for t in nat filter mangle; do
      saved=$("$cmd-save" -t "$t" 2>/dev/null) || continue
      mapfile -t chains < <(sed -n 's/^:\(\(CNI\|KUBE\)-[^ ]*\) .*/\1/p' <<<"$saved")
      [ ${#chains[@]} -gt 0 ] || continue
      {
        echo "*$t"
        grep -E -- '^-A .* -j (CNI|KUBE)-' <<<"$saved" | sed 's/^-A /-D /'
        printf -- '-F %s\n' "${chains[@]}"
        printf -- '-X %s\n' "${chains[@]}"
        echo COMMIT
      } | "$cmd-restore" --noflush 2>/dev/null || note "could not remove the $t chains of $cmd: ${chains[*]}"
    done
  done
}

# nft tables: kube-proxy's, then those that iptables-nft created for us and
# left empty.
clean_nft() {
  command -v nft >/dev/null || return 0
  local family name
  nft delete table ip kube-proxy 2>/dev/null || true
  nft delete table ip6 kube-proxy 2>/dev/null || true
  [ -f "$HOST_ORIG" ] || return 0
  while read -r family name; do
    grep -qxF "nft $family $name" "$HOST_ORIG" && continue
    # Rules and set elements sit two tabs deep; chain headers start with "type".
    nft list table "$family" "$name" 2>/dev/null | awk -F'\t' 'NF > 2 && $3 !~ /^type / {found = 1} END {exit !found}' && continue
    nft delete table "$family" "$name" 2>/dev/null || true
  done < <(nft list tables 2>/dev/null | sed -n 's/^table \([a-z0-9]*\) \(.*\)$/\1 \2/p')
}

clean_network() {
  local v
  for v in $(ip -o link show master "$POD_BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
    ip link del "$v" 2>/dev/null || true
  done
  ip link del "$POD_BRIDGE" 2>/dev/null || true
  ip link del "$NODE_IF" 2>/dev/null || true
  clean_iptables
  clean_nft
}

restore_host() {
  [ -f "$HOST_ORIG" ] || return 0
  local kind name value
  while read -r kind name value; do
    [ "$kind" = sysctl ] && { sysctl -qw "$name=$value" 2>/dev/null || true; }
  done <"$HOST_ORIG"
  rm -f "$HOST_ORIG"
}

clean_host_paths() {
  local l p kept=()
  local r id
  for r in /var/lib/cni/results/"$CNI_NETWORK"-*; do
    [ -e "$r" ] || continue
    id=${r#*/"$CNI_NETWORK"-}; id=${id%-*}
    rm -f "$r" "/var/lib/cni/results/cni-loopback-$id-lo"
  done
  rm -f /var/lib/kubelet/device-plugins/kubelet.sock
  for l in /var/log/containers/*.log; do
    [ -L "$l" ] && [[ $(readlink "$l") == "$KUBE_DIR/"* ]] && rm -f "$l"
  done
  rm -rf "$SHIM_SOCKET_DIR"
  [ -f "$CREATED" ] || return 0
  # ctr's fifos and runc state of `ctr run` containers, all gone by now.
  if grep -qxF /run/containerd "$CREATED"; then rm -rf /run/containerd; fi
  # Children before parents: the list is in creation order, so go backwards.
  while read -r p; do
    [ -n "$p" ] || continue
    if [ -d "$p" ] && ! rmdir "$p" 2>/dev/null; then kept+=("$p"); fi
  done < <(tac "$CREATED")
  if [ ${#kept[@]} -gt 0 ]; then printf '%s\n' "${kept[@]}" | tac >"$CREATED"; else rm -f "$CREATED"; fi
}

# Stop everything this environment's cluster runs and undo what it did to the host.
teardown() {
  local i shims
  drain_pods
  for ((i = ${#DAEMONS[@]} - 1; i >= 0; i--)); do stop_daemon "${DAEMONS[i]}"; done
  # Shims outlive containerd (they hold the containers): ours name our socket.
  shims=$(pids_matching "-address $CTD_SOCK")
  # shellcheck disable=SC2086  # a list of pids
  kill_pids $shims
  remove_cgroups
  unmount_all
  # Like /run: meaningless once the containers are gone.
  rm -rf "$CTD_DIR/state" "$CTD_DIR/runc" "$CNI_IPAM_DIR"
  clean_network
  clean_host_paths
  restore_host
  rm -f "$OWNER"
}

# --- commands -----------------------------------------------------------------

cmd_start() {
  require_root
  local b
  for b in etcd kube-apiserver kubectl kube-controller-manager kube-scheduler kubelet kube-proxy containerd ctr containerd-shim-runc-v2; do
    need_bin "$b"
  done
  local img
  for img in "${IMAGES[@]}"; do
    [ -f "$TOOLCHAIN_BIN/images/$img.tar" ] || die "the $img image is missing from $TOOLCHAIN_BIN/images: run 'make toolchain'"
  done
  export PATH="$TOOLCHAIN_BIN:/usr/local/sbin:/usr/sbin:/sbin:$PATH" # the shim, runc, nft, iptables
  mkdir -p "$KUBE_DIR" "$RUN_DIR"; chmod 700 "$KUBE_DIR"
  take_lock "$RUN_DIR/cluster.lock"
  ensure_ports
  check_owner
  ensure_packages
  record_host
  echo "$ENV_DIR" >"$OWNER"
  CHANGED="" STARTED="" KUBELET_STARTED=""
  ensure_network
  ensure_cgroups
  ensure_pki
  ensure_credentials
  ensure_configs
  local d
  for d in "${DAEMONS[@]}"; do
    ensure_daemon "$d"
    if [ "$d" = containerd ]; then
      for img in "${IMAGES[@]}"; do import_image "$TOOLCHAIN_BIN/ctr" "$CTD_SOCK" "$TOOLCHAIN_BIN/images/$img.tar"; done
    fi
  done
  wait_node_ready "$KUBELET_STARTED"
  ensure_coredns
  if [ -z "$STARTED" ]; then
    note "already running: https://$NODE_IP:$(port_of KUBE_APISERVER_PORT), node $NODE_NAME Ready"
  else
    note "running: https://$NODE_IP:$(port_of KUBE_APISERVER_PORT), node $NODE_NAME Ready, DNS $DNS_IP (started:$STARTED); KUBECONFIG=$KUBECONFIG_FILE"
  fi
}

cmd_stop() {
  require_root
  mkdir -p "$KUBE_DIR" "$RUN_DIR"
  take_lock "$RUN_DIR/cluster.lock"
  check_owner
  export PATH="${TOOLCHAIN_BIN:+$TOOLCHAIN_BIN:}/usr/local/sbin:/usr/sbin:/sbin:$PATH"
  teardown
  note "stopped"
}

# Stop one daemon of the running cluster and start it again with the same
# arguments, as a crash and a supervisor's restart would (what the tests of a
# restart in the middle of a `pulumi up` do); wait until it is healthy again,
# and for kubelet until it reports the node Ready. The other daemons run on.
# A daemon that does not come back is left as it is, with its log's tail.
cmd_restart() { # name
  local name=${1:-} d known="" log started i
  for d in "${DAEMONS[@]}"; do [ "$d" = "$name" ] && known=1; done
  [ -n "$known" ] || die "usage: $PROG restart DAEMON, one of: ${DAEMONS[*]}"
  require_root
  need_bin "$name"
  export PATH="$TOOLCHAIN_BIN:/usr/local/sbin:/usr/sbin:/sbin:$PATH" # the shim, runc, nft, iptables
  mkdir -p "$KUBE_DIR" "$RUN_DIR"
  take_lock "$RUN_DIR/cluster.lock"
  check_owner
  # Between two starts by its supervisor the daemon is down, but the supervisor is not.
  daemon_up "$name" || supervisor_up "$name" || die "$name is not running: start the environment first (make environment)"
  log=$KUBE_DIR/$name.log
  argv_of "$name"
  stop_daemon "$name"
  rotate_log "$log"
  started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  start_daemon "$name" "$log"
  if ! wait_healthy "$name" "$READY_TIMEOUT"; then
    if daemon_up "$name"; then explain_log "$log" "$name not healthy after $READY_TIMEOUT s"
    else explain_log "$log" "$name exited during start"; fi
    exit 1
  fi
  if [ "$name" = kubelet ]; then
    for ((i = 0; i < READY_TIMEOUT * 2; i++)); do
      node_ready_since "$started" && break
      sleep 0.5
    done
    node_ready_since "$started" || { explain_log "$log" "node $NODE_NAME not Ready after $READY_TIMEOUT s"; exit 1; }
  fi
  note "restarted $name (pid $(pid_of "$name"))"
}

cmd_status() {
  local d rc=0 state
  for d in "${DAEMONS[@]}"; do
    if daemon_up "$d"; then
      if healthy "$d"; then state="running (pid $(pid_of "$d"))"; else state="unhealthy (pid $(pid_of "$d")); see $KUBE_DIR/$d.log"; rc=3; fi
      supervised "$d" || state+="; no supervisor restarts it (the next make environment starts it under one)"
    elif supervisor_up "$d"; then
      state="exited; its supervisor (pid $(supervisor_pid "$d")) starts it again, see $KUBE_DIR/$d.log"; rc=3
    else
      state=stopped; rc=3
    fi
    printf '%-24s %s\n' "$d" "$state"
  done
  if [ $rc -eq 0 ] && [ -x "$TOOLCHAIN_BIN/kubectl" ]; then
    if node_ready; then state=Ready; else state="not Ready"; rc=3; fi
    printf '%-24s %s\n' "node $NODE_NAME" "$state"
    if coredns_available; then state=Available; else state="not Available"; rc=3; fi
    printf '%-24s %s\n' "coredns" "$state"
    if dns_answers; then state=answers; else state="no answer"; rc=3; fi
    printf '%-24s %s\n' "dns $DNS_IP" "$state"
  fi
  [ $rc -eq 0 ] && note "running: https://$NODE_IP:$(port_of KUBE_APISERVER_PORT); KUBECONFIG=$KUBECONFIG_FILE"
  return $rc
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  restart) cmd_restart "${2:-}" ;;
  *) die "usage: $PROG start|stop|status|restart DAEMON" ;;
esac
