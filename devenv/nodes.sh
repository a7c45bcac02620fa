#!/usr/bin/env bash
# EDPM test nodes: hosts of their own. Each node boots systemd as PID 1 in a
# systemd-nspawn container, in its own network namespace, from one cached
# Debian root (devenv/hosts/rootfs.sh) under a layer of its own, with sshd,
# podman and Quadlet, libvirt, QEMU and Open vSwitch as a real compute has
# them. Ansible reaches them over real SSH.
# The nodes sit on the data plane's networks, a bridge on the host each
# (devenv/network.env): ctlplane (eth0: SSH, the default route through the
# host, the data plane's DNS) and internalapi (eth1: the control plane's
# LoadBalancer addresses). The host drops whatever they send to the cluster's
# service and pod networks (devenv/dataplane/boundary.py).
# Usage: nodes.sh start|stop|status|memory [COUNT]   (COUNT: $EDPM_NODE_COUNT or 2)
#        nodes.sh network   the bridges and the boundary alone (devenv/start.sh
#                           makes them before the cluster starts: MetalLB's
#                           speaker announces on the bridges it finds)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=devenv/lib.sh
. "$here/lib.sh"
# CTLPLANE_*, INTERNALAPI_*, DATAPLANE_DNS_IP: the address plan, shared with cluster.sh
# shellcheck source=devenv/network.env
. "$here/network.env"

NODES_DIR=$ENV_DIR/nodes
SSH_DIR=$ENV_DIR/ssh
NODES_JSON=$NODES_DIR/nodes.json
# Netns, bridge, addresses and cgroups are host-wide, so lock and owner are too.
RUN_DIR=/run/openstack-nova
OWNER=$RUN_DIR/nodes.owner
BRIDGES=("$CTLPLANE_BRIDGE" "$INTERNALAPI_BRIDGE")
# Each node's cgroup, in every hierarchy of the host, below this one.
CGROUP=openstack-nova-nodes
# How long a node may take to boot to sshd, and to power off.
BOOT_SECONDS=${EDPM_NODE_BOOT_SECONDS:-120}
POWEROFF_SECONDS=60

node_name() { echo "edpm-compute-$1"; }
node_ip() { echo "$CTLPLANE_PREFIX.$((100 + $1))"; }
node_internalapi_ip() { echo "$INTERNALAPI_PREFIX.$((100 + $1))"; }
# The host ends of the node's eth0 (ctlplane) and eth1 (internalapi); names stop at 15 chars.
veth_name() { echo "ve-edpm-$1"; }
internalapi_veth_name() { echo "vi-edpm-$1"; }
node_dir() { echo "$NODES_DIR/$(node_name "$1")"; }
nspawn_mark() { echo "--machine=$(node_name "$1")"; }

# Node indexes that exist in any form (netns, veth, node process): what stop cleans.
our_netns() { ip netns list | awk '{print $1}' | sed -n 's/^edpm-compute-\([0-9]\{1,3\}\)$/\1/p'; }
our_veths() { ip -o link show type veth | sed -n 's/^[0-9]*: v[ei]-edpm-\([0-9]\{1,3\}\)[@:].*/\1/p' | sort -un; }
our_node_dirs() {
  local d
  for d in "$NODES_DIR"/edpm-compute-*; do
    [[ -d $d && ${d##*-} =~ ^[0-9]+$ ]] && echo "${d##*-}"
  done
  return 0
}
our_nspawns() { pids_matching "systemd-nspawn --boot --directory=$NODES_DIR/edpm-compute-"; }
bridge_exists() { ip link show "$1" >/dev/null 2>&1; }
# Nodes, or parts of them (the network stays between node starts).
anything_left() { [ -n "$(our_netns)$(our_veths)$(our_nspawns)" ]; }
network_left() {
  local b
  for b in "${BRIDGES[@]}"; do bridge_exists "$b" && return 0; done
  return 1
}

nspawn_pid() { cat "$(node_dir "$1")/nspawn.pid" 2>/dev/null || true; }
node_up() { # index: netns there, the node's nspawn alive, its sshd answering
  ip netns list | grep -q "^$(node_name "$1")\( \|$\)" &&
    pid_is "$(nspawn_pid "$1")" "$(nspawn_mark "$1") " &&
    wait_tcp "$(node_ip "$1")" 22 1
}
# What a running node was started with; nodes started otherwise are restarted.
layout_id() { # rootfs store
  { printf '%s\n' "$@"
    declare -f write_identity setup_netns boot_node; } | sha256sum | cut -c1-16
}
layout_current() { [ "$(cat "$NODES_DIR/layout" 2>/dev/null)" = "$1" ]; }
recorded_count() { [ -f "$NODES_JSON" ] && python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$NODES_JSON" || echo 0; }
all_up() { # count
  local i
  [ "$(recorded_count)" -eq "$1" ] || return 1
  for ((i = 0; i < $1; i++)); do node_up "$i" || return 1; done
}

# Nodes of another ENV_DIR use the same names and addresses: never touch them.
check_owner() {
  local other
  other=$(cat "$OWNER" 2>/dev/null || true)
  if [ -n "$other" ] && [ "$other" != "$ENV_DIR" ] && [ -n "$(our_netns)" ]; then
    die "EDPM nodes of another environment are running ($other); stop them with OPENSTACK_NOVA_ENV=$other $0 stop"
  fi
}

cgroup_mounts() { awk '$3 == "cgroup" || $3 == "cgroup2" {print $2}' /proc/self/mounts; }

# --- teardown ---------------------------------------------------------------

# The node's cgroups, children first (nspawn leaves payload/ and supervisor/).
remove_node_cgroups() { # name
  local m
  for m in $(cgroup_mounts); do
    if [ -d "$m/$CGROUP/$1" ]; then find "$m/$CGROUP/$1" -depth -type d -exec rmdir {} + 2>/dev/null || true; fi
  done
  return 0
}

# A clean poweroff (nspawn passes SIGTERM on to systemd as a halt), then KILL.
stop_node() { # index
  local n d pid i; n=$(node_name "$1"); d=$(node_dir "$1")
  pid=$(nspawn_pid "$1")
  if pid_is "$pid" "$(nspawn_mark "$1") "; then
    kill -TERM "$pid" 2>/dev/null || true
    if ! wait_gone $((POWEROFF_SECONDS * 10)) "$pid"; then
      note "$n did not power off in ${POWEROFF_SECONDS}s: killed"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  # shellcheck disable=SC2046  # a list of pids
  kill_pids $(pids_matching "$(nspawn_mark "$1") ")
  if ip netns list | grep -q "^$n\( \|$\)"; then
    # shellcheck disable=SC2046
    kill_pids $(ip netns pids "$n")
    ip netns del "$n"
  fi
  for i in 1 2 3; do mountpoint -q "$d/root" || break; umount "$d/root" 2>/dev/null || sleep 1; done
  if mountpoint -q "$d/root"; then umount -l "$d/root"; fi
  remove_node_cgroups "$n"
  rm -f "$d/nspawn.pid"
}

# Nodes of an earlier layout (sshd in a namespace, no init) bound directories
# they created on the host: those, if still empty, go with them.
remove_earlier_mountpoints() {
  local list=$NODES_DIR/created-mountpoints d
  [ -f "$list" ] || return 0
  while read -r d; do
    if [ -f "$d" ] && [ ! -s "$d" ]; then rm -f "$d"; elif [ -d "$d" ]; then rmdir "$d" 2>/dev/null || true; fi
  done <"$list"
  rm -f "$list"
}

# The nodes and their veths; the network stays (MetalLB announces on its bridges).
teardown_nodes() {
  local i m
  for i in $( (our_netns; our_veths; our_node_dirs) | sort -un); do
    stop_node "$i"
  done
  # shellcheck disable=SC2046  # nodes whose node dir vanished
  kill_pids $(our_nspawns)
  for i in $(our_veths); do
    ip link del "$(veth_name "$i")" 2>/dev/null || true
    ip link del "$(internalapi_veth_name "$i")" 2>/dev/null || true
  done
  for m in $(cgroup_mounts); do rmdir "$m/$CGROUP" 2>/dev/null || true; done
  remove_earlier_mountpoints
  rm -f "$NODES_JSON" "$OWNER"
}

# Everything: the nodes, the bridges and the host's boundary.
teardown() {
  local b
  teardown_nodes
  for b in "${BRIDGES[@]}"; do
    if bridge_exists "$b"; then ip link del "$b"; fi
  done
  if command -v nft >/dev/null; then dataplane boundary --delete | nft -f - 2>/dev/null || true; fi
}

# --- setup ------------------------------------------------------------------

check_subnet_free() { # prefix bridge
  local other
  other=$(ip -o -4 addr show to "$1.0/24" | awk -v br="$2" '$2 != br {print $2}' | sort -u | tr '\n' ' ')
  [ -z "$other" ] || die "$1.0/24 is already used by ${other% }; remove it (or stop what owns it) first"
}

ensure_client_key() {
  mkdir -p "$SSH_DIR"; chmod 700 "$SSH_DIR"
  [ -f "$SSH_DIR/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C "openstack-nova-devenv" -f "$SSH_DIR/id_ed25519"
  chmod 600 "$SSH_DIR/id_ed25519"
}

# systemd-nspawn of the host's own systemd release (bookworm's 252), so that
# apt never upgrades the host's systemd for it.
ensure_nspawn() {
  command -v systemd-nspawn >/dev/null && return 0
  local v
  v=$(dpkg-query -W -f '${Version}' systemd 2>/dev/null) ||
    die "systemd-nspawn is missing and the host has no systemd package to match; install systemd-container"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 \
      "systemd-container=$v"; } >/dev/null 2>&1 ||
    die "could not install systemd-container=$v with apt-get; install it and run again"
}

# The data plane's side of devenv/dataplane (python3 -m devenv.dataplane, from the checkout).
dataplane() { (cd "$here/.." && python3 -m devenv.dataplane "$@"); }

ensure_nft() {
  command -v nft >/dev/null && return 0
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 nftables; } \
    >/dev/null 2>&1 || die "nft is missing and apt-get could not install nftables; install it and run again"
}

ensure_bridge() { # name address/24
  bridge_exists "$1" || ip link add "$1" type bridge
  ip -o -4 addr show dev "$1" | grep -q " $2 " || ip addr add "$2" dev "$1"
  ip link set "$1" up
}

# The bridges with the host's address on each, and the host's boundary (replaced whole).
ensure_network() {
  local rules
  ensure_nft
  check_subnet_free "$CTLPLANE_PREFIX" "$CTLPLANE_BRIDGE"
  check_subnet_free "$INTERNALAPI_PREFIX" "$INTERNALAPI_BRIDGE"
  ensure_bridge "$CTLPLANE_BRIDGE" "$CTLPLANE_HOST_IP/24"
  ensure_bridge "$INTERNALAPI_BRIDGE" "$INTERNALAPI_HOST_IP/24"
  rules=$(dataplane boundary) || die "could not render the host's boundary (devenv/dataplane/boundary.py)"
  nft -f - <<<"$rules" || die "nft refused the host's boundary (python3 -m devenv.dataplane boundary shows it)"
}

# A node's layer starts empty when its root or image store changed (a host
# installed afresh); its identity (machine id, SSH host key) stays.
prepare_node_dir() { # index rootfs store
  local d; d=$(node_dir "$1")
  mkdir -p "$d"; chmod 700 "$d"
  if [ "$(cat "$d/installed-from" 2>/dev/null)" != "$2 $3" ]; then
    mountpoint -q "$d/root" && die "$d/root is still mounted; run $PROG stop first"
    rm -rf "$d/upper" "$d/work" "$d/containers" "$d/root"
    echo "$2 $3" >"$d/installed-from"
  fi
  # nova's state (compute_id, instances) outlives a new root, as a compute's
  # data disk outlives a reinstall: nova refuses a host whose compute_id changed
  mkdir -p "$d/upper" "$d/work" "$d/root" "$d/containers" "$d/nova-state"
  [ -f "$d/ssh_host_ed25519_key" ] || ssh-keygen -q -t ed25519 -N '' -C "root@$(node_name "$1")" -f "$d/ssh_host_ed25519_key"
  [ -s "$d/machine-id" ] || od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$d/machine-id"
}

# What makes the node itself, written into its layer at every start. Every node's
# name resolves on every node, as the data-plane network's DNS answers for them
# upstream (nova migrates to a compute by its host name).
write_identity() { # index root count
  local n r=$2 k i; n=$(node_name "$1")
  echo "$n" >"$r/etc/hostname"
  { cat "$(node_dir "$1")/machine-id"; echo; } >"$r/etc/machine-id"
  {
    printf '127.0.0.1 localhost\n::1 localhost\n'
    for ((i = 0; i < $3; i++)); do printf '%s %s\n' "$(node_ip "$i")" "$(node_name "$i")"; done
  } >"$r/etc/hosts"
  # The data plane's DNS alone (its LoadBalancer address on ctlplane), no search domain:
  # the control plane's names it answers are <service>.<namespace>.svc, as upstream's.
  printf 'nameserver %s\n' "$DATAPLANE_DNS_IP" >"$r/etc/resolv.conf"
  install -m 600 "$(node_dir "$1")/ssh_host_ed25519_key" "$r/etc/ssh/ssh_host_ed25519_key"
  install -m 644 "$(node_dir "$1")/ssh_host_ed25519_key.pub" "$r/etc/ssh/ssh_host_ed25519_key.pub"
  for k in /root /home/cloud-admin; do
    install -d -m 700 "$r$k/.ssh"
    install -m 600 "$SSH_DIR/id_ed25519.pub" "$r$k/.ssh/authorized_keys"
  done
  chown -R --reference="$r/home/cloud-admin" "$r/home/cloud-admin/.ssh"
}

# eth0 on ctlplane with the default route, eth1 on internalapi (its own subnet only).
setup_netns() { # index
  local n v w; n=$(node_name "$1"); v=$(veth_name "$1"); w=$(internalapi_veth_name "$1")
  ip netns add "$n"
  ip link add "$v" type veth peer name eth0 netns "$n"
  ip link set "$v" master "$CTLPLANE_BRIDGE" up
  ip link add "$w" type veth peer name eth1 netns "$n"
  ip link set "$w" master "$INTERNALAPI_BRIDGE" up
  ip -n "$n" link set lo up
  ip -n "$n" addr add "$(node_ip "$1")/24" dev eth0
  ip -n "$n" link set eth0 up
  ip -n "$n" addr add "$(node_internalapi_ip "$1")/24" dev eth1
  ip -n "$n" link set eth1 up
  ip -n "$n" route add default via "$CTLPLANE_HOST_IP"
}

# Mount the node's root (its layer over the shared one) and boot it: systemd
# as PID 1 with a unified cgroup tree of its own (podman and libvirt need it;
# the host's controllers stay on its v1 hierarchies), started from a cgroup of
# its own in every hierarchy (nspawn takes its place from there). A host's root
# manages its network (podman's per-container namespaces, Open vSwitch's ports)
# and locks memory (ovs-vswitchd --mlockall): nspawn grants neither by itself.
boot_node() { # index rootfs store count
  local n d r m procs=(); n=$(node_name "$1"); d=$(node_dir "$1"); r=$d/root
  mountpoint -q "$r" || mount -t overlay overlay -o "lowerdir=$2,upperdir=$d/upper,workdir=$d/work" "$r"
  write_identity "$1" "$r" "$4"
  for m in $(cgroup_mounts); do
    mkdir -p "$m/$CGROUP/$n"
    if [ -f "$m/cpuset.cpus" ]; then
      cat "$m/cpuset.cpus" >"$m/$CGROUP/cpuset.cpus"; cat "$m/cpuset.mems" >"$m/$CGROUP/cpuset.mems"
      cat "$m/cpuset.cpus" >"$m/$CGROUP/$n/cpuset.cpus"; cat "$m/cpuset.mems" >"$m/$CGROUP/$n/cpuset.mems"
    fi
    procs+=("$m/$CGROUP/$n/cgroup.procs")
  done
  : >"$d/console.log"
  # QEMU's post-copy migration (nova's live_migration_permit_post_copy, on as upstream has it)
  # needs userfaultfd: unprivileged QEMU gets it from /dev/userfaultfd, as on a RHEL 9 host
  local devices=(--bind=/dev/net/tun)
  if [ -c /dev/userfaultfd ]; then devices+=(--bind=/dev/userfaultfd); fi
  # shellcheck disable=SC2016  # $$ and $@ are for the inner sh
  SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 setsid nohup sh -c '
    pidfile=$1; shift
    while [ "$1" != -- ]; do echo $$ >"$1"; shift; done; shift
    echo $$ >"$pidfile"; exec "$@"' sh "$d/nspawn.pid" "${procs[@]}" -- \
    systemd-nspawn --boot "--directory=$r" "$(nspawn_mark "$1")" "--hostname=$n" \
      --private-users=no --resolv-conf=off --timezone=off --link-journal=no --console=read-only \
      "--network-namespace-path=/run/netns/$n" --keep-unit --register=no \
      "--system-call-filter=@keyring bpf" --capability=CAP_NET_ADMIN,CAP_IPC_LOCK \
      "--bind=$d/containers:/var/lib/containers" "--bind-ro=$3:/var/lib/shared-images" \
      "--bind=$d/nova-state:/var/lib/nova" \
      "${devices[@]}" \
    </dev/null >>"$d/console.log" 2>&1 9>&- &
}

write_known_hosts() { # count
  local i
  for ((i = 0; i < $1; i++)); do
    printf '%s,%s %s\n' "$(node_ip "$i")" "$(node_name "$i")" \
      "$(cut -d' ' -f1,2 "$(node_dir "$i")/ssh_host_ed25519_key.pub")"
  done >"$SSH_DIR/known_hosts.tmp"
  mv -f "$SSH_DIR/known_hosts.tmp" "$SSH_DIR/known_hosts"
}

# Each node's ctlplane address ("ip", where SSH reaches it) and internalapi address.
write_nodes_json() { # count
  local i args=()
  for ((i = 0; i < $1; i++)); do
    args+=("$(node_name "$i")" "$(node_ip "$i")" "$(node_internalapi_ip "$i")" "$(nspawn_pid "$i")")
  done
  python3 - "$NODES_JSON" "${args[@]}" <<'EOF'
import json, sys
out, rest = sys.argv[1], sys.argv[2:]
nodes = {rest[i]: {"ip": rest[i + 1], "internalapi": rest[i + 2], "pid": int(rest[i + 3])}
         for i in range(0, len(rest), 4)}
with open(out + ".tmp", "w") as f:
    json.dump(nodes, f, indent=2)
    f.write("\n")
EOF
  mv -f "$NODES_JSON.tmp" "$NODES_JSON"
}

# --- commands ---------------------------------------------------------------

parse_count() {
  local c=${1:-${EDPM_NODE_COUNT:-2}}
  if ! [[ $c =~ ^[0-9]+$ ]] || [ "$c" -lt 1 ] || [ "$c" -gt 150 ]; then
    die "node count '$c' must be a number from 1 to 150"
  fi
  echo "$c"
}

on_exit_start() { # status
  [ "$1" -eq 0 ] || teardown_nodes >/dev/null 2>&1 || true
}

# The root every node boots and the store of the images their podman runs:
# today's image and each older release's built for today's inputs
# (`devenv/images.sh build RELEASE`; never built here). A new store restarts
# the nodes (cmd_start compares the layout).
node_inputs() {
  local rootfs tar built store
  local -a releases=()
  rootfs=$("$here/hosts/rootfs.sh" build) || exit 1
  tar=$("$here/images.sh" build) || exit 1
  built=$("$here/images.sh" releases) || exit 1
  [ -z "$built" ] || mapfile -t releases <<<"$built"
  store=$("$here/hosts/rootfs.sh" images "$tar" "${releases[@]}") || exit 1
  echo "$rootfs" "$store"
}

cmd_start() {
  local count i prev rootfs store layout
  count=$(parse_count "${1:-}")
  require_root
  ensure_nspawn
  read -r rootfs store < <(node_inputs)
  [ -n "$store" ] || die "the nodes' root or image store could not be built"
  layout=$(layout_id "$rootfs" "$store")
  mkdir -p "$RUN_DIR" "$NODES_DIR"
  take_lock "$RUN_DIR/nodes.lock"
  check_owner
  ensure_network
  if all_up "$count" && layout_current "$layout"; then note "already running: $count nodes"; return 0; fi
  if anything_left; then
    prev=$(recorded_count)
    teardown_nodes
    if [ "$prev" -eq "$count" ] && ! layout_current "$layout"; then
      note "the nodes' root, images or layout changed: restarting the nodes"
    elif [ "$prev" -ne "$count" ] && [ "$prev" -gt 0 ]; then
      note "node count changes from $prev to $count: restarting the nodes"
    else
      note "recovered stale node state (netns, veth or node of an earlier run); starting fresh"
    fi
  fi
  # A start that fails half-way leaves nothing running (logs stay for a look).
  trap 'on_exit_start $?' EXIT
  ensure_client_key
  echo "$ENV_DIR" >"$OWNER"
  for ((i = 0; i < count; i++)); do
    prepare_node_dir "$i" "$rootfs" "$store"
    setup_netns "$i"
    boot_node "$i" "$rootfs" "$store" "$count"
  done
  write_known_hosts "$count"
  for ((i = 0; i < count; i++)); do
    wait_tcp "$(node_ip "$i")" 22 "$BOOT_SECONDS" ||
      die "$(node_name "$i") did not boot to sshd on $(node_ip "$i"):22 in ${BOOT_SECONDS}s; see $(node_dir "$i")/console.log"
  done
  write_nodes_json "$count"
  echo "$layout" >"$NODES_DIR/layout"
  trap - EXIT
  note "running: $count node$([ "$count" -eq 1 ] || echo s) ($(node_ip 0)..$(node_ip $((count - 1))), internalapi $(node_internalapi_ip 0)..$(node_internalapi_ip $((count - 1)))); try: devenv/ssh.sh $(node_name 0) systemctl is-system-running"
}

cmd_network() {
  require_root
  mkdir -p "$RUN_DIR"
  take_lock "$RUN_DIR/nodes.lock"
  check_owner
  ensure_network
  note "network: $CTLPLANE_BRIDGE $CTLPLANE_HOST_IP/24, $INTERNALAPI_BRIDGE $INTERNALAPI_HOST_IP/24, the host's boundary in place"
}

cmd_stop() {
  require_root
  mkdir -p "$RUN_DIR"
  take_lock "$RUN_DIR/nodes.lock"
  check_owner
  teardown
  note "stopped"
}

cmd_status() {
  local count i state rc=0
  count=$(recorded_count)
  if [ "$count" -eq 0 ]; then
    if anything_left; then note "not running, but netns, veths or nodes of an earlier run are left; start or stop cleans them up"
    elif network_left; then note "no nodes (the network is up: ${BRIDGES[*]})"
    else note "stopped"; fi
    return 3
  fi
  for ((i = 0; i < count; i++)); do
    if node_up "$i"; then state=up; else state=down; rc=3; fi
    printf '%-16s %-16s %-16s %s\n' "$(node_name "$i")" "$(node_ip "$i")" "$(node_internalapi_ip "$i")" "$state"
  done
  return $rc
}

# Each node's memory as the host accounts it: its processes' resident memory
# and the page cache charged to it (what the README's figure is).
cmd_memory() {
  local count i n d
  count=$(recorded_count)
  [ "$count" -gt 0 ] || die "no nodes are running"
  printf '%-16s %10s %10s\n' NODE RSS_MIB CACHE_MIB
  for ((i = 0; i < count; i++)); do
    n=$(node_name "$i") d=/sys/fs/cgroup/memory/$CGROUP/$n
    if [ -f "$d/memory.stat" ]; then
      awk -v n="$n" '$1 == "total_rss" {r = $2} $1 == "total_cache" {c = $2}
        END {printf "%-16s %10d %10d\n", n, r / 1048576, c / 1048576}' "$d/memory.stat"
    else
      d=/sys/fs/cgroup/unified/$CGROUP/$n
      [ -f "$d/memory.stat" ] || die "no memory accounting for $n (no memory controller on $d)"
      awk -v n="$n" '$1 == "anon" {r = $2} $1 == "file" {c = $2}
        END {printf "%-16s %10d %10d\n", n, r / 1048576, c / 1048576}' "$d/memory.stat"
    fi
  done
}

main() {
  case "${1:-}" in
    start) cmd_start "${2:-}" ;;
    network) cmd_network ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    memory) cmd_memory ;;
    *) die "usage: $PROG start|network|stop|status|memory [COUNT]" ;;
  esac
}

# Sourced (the unit tests), it only defines the functions.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then main "$@"; fi
