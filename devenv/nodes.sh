#!/usr/bin/env bash
# EDPM test nodes: per node a network namespace on a bridge, and an sshd in a
# private mount namespace where the directories nova-compute uses are bound
# to per-node directories. Ansible reaches them over real SSH.
# Usage: nodes.sh start|stop|status [COUNT]   (COUNT: $EDPM_NODE_COUNT or 2)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=devenv/lib.sh
. "$here/lib.sh"

NODES_DIR=$ENV_DIR/nodes
SSH_DIR=$ENV_DIR/ssh
NODES_JSON=$NODES_DIR/nodes.json
# Mount points we had to create on the host; only these are removed on stop.
CREATED=$NODES_DIR/created-mountpoints
# Netns, bridge and addresses are host-wide, so lock and owner are too.
RUN_DIR=/run/openstack-nova
OWNER=$RUN_DIR/nodes.owner
BRIDGE=novaedpm0
NET=192.168.122
GATEWAY=$NET.1
NOVA_ID=42436
LIBVIRT_ID=42473
# A non-root user Ansible may log in as, escalating with sudo (as on upstream's nodes).
ADMIN_USER=cloud-admin
ADMIN_ID=42480
# Names resolve through the cluster's DNS (reached through the host), as in a pod.
CLUSTER_DNS=10.96.0.10
DNS_NAMESPACE=${EDPM_DNS_NAMESPACE:-openstack}
# Directories that belong to each node alone (bound over the host's).
PRIVATE_DIRS=(/var/lib/openstack /var/lib/kolla /etc/nova /var/lib/nova /etc/containers
  /etc/kolla /etc/neutron /var/lib/neutron /home/nova /run/node-private /var/log/nova /etc/ssh
  /etc/libvirt /etc/sasl2 /var/log/libvirt /etc/sudoers.d /home/cloud-admin /var/lib/edpm-config)
# Directories a node sees as the host's plus its own changes (an overlay): what
# the roles change there stays on the node, e.g. nova added to the libvirt
# group (usermod renames /etc/group), /etc/ceph laid out by kolla, the
# iscsiadm wrapper kolla installs in /usr/sbin.
OVERLAY_DIRS=(/etc /usr/sbin)

node_name() { echo "edpm-compute-$1"; }
node_ip() { echo "$NET.$((100 + $1))"; }
veth_name() { echo "ve-edpm-$1"; } # host end; interface names stop at 15 chars
node_dir() { echo "$NODES_DIR/$(node_name "$1")"; }
overlay_dir() { echo "$(node_dir "$1")/overlay$2"; } # index dir: holds upper/ and work/
sshd_mark() { echo "-f $(node_dir "$1")/sshd_config"; }

# Node indexes that exist in any form (netns, veth, sshd): what stop cleans.
our_netns() { ip netns list | awk '{print $1}' | sed -n 's/^edpm-compute-\([0-9]\{1,3\}\)$/\1/p'; }
our_veths() { ip -o link show type veth | sed -n 's/^[0-9]*: ve-edpm-\([0-9]\{1,3\}\)[@:].*/\1/p'; }
our_node_dirs() {
  local d
  for d in "$NODES_DIR"/edpm-compute-*; do
    [[ -d $d && ${d##*-} =~ ^[0-9]+$ ]] && echo "${d##*-}"
  done
  return 0
}
our_sshds() { pids_matching "/usr/sbin/sshd -f $NODES_DIR/edpm-compute-"; }
bridge_exists() { ip link show "$BRIDGE" >/dev/null 2>&1; }
anything_left() { bridge_exists || [ -n "$(our_netns)$(our_veths)$(our_sshds)" ]; }

sshd_pid() { cat "$(node_dir "$1")/sshd.pid" 2>/dev/null || true; }
node_up() { # index: netns there, our sshd alive and answering
  ip netns list | grep -q "^$(node_name "$1")\( \|$\)" &&
    pid_is "$(sshd_pid "$1")" "$(sshd_mark "$1")" &&
    wait_tcp "$(node_ip "$1")" 22 1
}
# What a running node was started with; nodes started otherwise are restarted.
layout_id() {
  { printf '%s\n' "${PRIVATE_DIRS[@]}" -- "${OVERLAY_DIRS[@]}"
    declare -f write_sshd_config write_accounts write_hosts prepare_node_dir start_sshd; } | sha256sum | cut -c1-16
}
layout_current() { [ "$(cat "$NODES_DIR/layout" 2>/dev/null)" = "$(layout_id)" ]; }
recorded_count() { [ -f "$NODES_JSON" ] && python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$NODES_JSON" || echo 0; }
all_up() { # count
  local i
  [ "$(recorded_count)" -eq "$1" ] && bridge_exists || return 1
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

# --- teardown ---------------------------------------------------------------

stop_node() { # index
  local n; n=$(node_name "$1")
  # shellcheck disable=SC2046  # a list of pids
  kill_pids $(pids_matching "$(sshd_mark "$1")")
  if ip netns list | grep -q "^$n\( \|$\)"; then
    # Whatever Ansible left running in the node dies with it.
    # shellcheck disable=SC2046
    kill_pids $(ip netns pids "$n")
    ip netns del "$n"
  fi
  rm -f "$(node_dir "$1")/sshd.pid"
}

remove_mountpoints() {
  [ -f "$CREATED" ] || return 0
  local d kept=()
  while read -r d; do
    [ -n "$d" ] || continue
    if [ -f "$d" ] && [ ! -s "$d" ]; then
      rm -f "$d"
    elif [ -d "$d" ] && ! rmdir "$d" 2>/dev/null; then
      note "left $d on the host: it is not empty"
      kept+=("$d")
    fi
  done <"$CREATED"
  if [ ${#kept[@]} -gt 0 ]; then printf '%s\n' "${kept[@]}" >"$CREATED"; else rm -f "$CREATED"; fi
}

teardown() {
  local i
  for i in $( (our_netns; our_veths; our_node_dirs) | sort -un); do
    stop_node "$i"
  done
  # shellcheck disable=SC2046  # sshds whose node dir vanished
  kill_pids $(our_sshds)
  for i in $(our_veths); do ip link del "$(veth_name "$i")" 2>/dev/null || true; done
  if bridge_exists; then ip link del "$BRIDGE"; fi
  remove_mountpoints
  rm -f "$NODES_JSON" "$OWNER"
}

# --- setup ------------------------------------------------------------------

check_subnet_free() {
  local other
  other=$(ip -o -4 addr show to "$NET.0/24" | awk -v br="$BRIDGE" '$2 != br {print $2}' | sort -u | tr '\n' ' ')
  [ -z "$other" ] || die "$NET.0/24 is already used by ${other% }; remove it (or stop what owns it) first"
}

# sshd (StrictModes) refuses authorized_keys below a directory that others
# can write to, e.g. /tmp; say so now rather than "Permission denied" later.
check_path_for_sshd() {
  local d=$NODES_DIR owner mode
  while [ "$d" != / ]; do
    if [ -e "$d" ]; then
      read -r owner mode < <(stat -c '%u %a' "$d")
      if [ "$owner" != 0 ] || (( 8#$mode & 8#022 )); then
        die "sshd refuses keys below $d (not root-only writable); set OPENSTACK_NOVA_ENV to a directory elsewhere"
      fi
    fi
    d=$(dirname "$d")
  done
}

ensure_client_key() {
  mkdir -p "$SSH_DIR"; chmod 700 "$SSH_DIR"
  [ -f "$SSH_DIR/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C "openstack-nova-devenv" -f "$SSH_DIR/id_ed25519"
  chmod 600 "$SSH_DIR/id_ed25519"
}

# Create missing mount points on the host and remember that we did.
ensure_mountpoints() {
  local d
  mkdir -p /run/sshd # sshd's privilege separation directory
  for d in "${PRIVATE_DIRS[@]}"; do
    [ -d "$d" ] && continue
    [ -e "$d" ] && die "$d exists on the host and is not a directory"
    mkdir -m 755 "$d" || die "cannot create mount point $d on the host"
    grep -qxF "$d" "$CREATED" 2>/dev/null || echo "$d" >>"$CREATED"
  done
  # kolla's set_configs writes /run_command at the root: each node gets its own.
  if [ ! -e /run_command ]; then
    : >/run_command
    grep -qxF /run_command "$CREATED" 2>/dev/null || echo /run_command >>"$CREATED"
  fi
}

setup_bridge() {
  ip link add "$BRIDGE" type bridge
  ip addr add "$GATEWAY/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
}

# The node's own passwd/group/shadow, in its /etc overlay: the host's plus nova
# and libvirt (no members), as a freshly installed node has them, and the
# cloud-admin account, so kolla can chown to nova inside the node without adding
# a user to the host. Written at every start: what the roles add (nova in
# libvirt) they add again.
write_accounts() { # etc-upper-dir
  { grep -v "^\\(nova\\|libvirt\\|$ADMIN_USER\\):" /etc/passwd; echo "nova:x:$NOVA_ID:$NOVA_ID:nova:/var/lib/nova:/bin/sh"
    echo "libvirt:x:$LIBVIRT_ID:$LIBVIRT_ID:libvirt:/var/lib/libvirt:/sbin/nologin"
    echo "$ADMIN_USER:x:$ADMIN_ID:$ADMIN_ID:$ADMIN_USER:/home/$ADMIN_USER:/bin/bash"; } >"$1/passwd"
  { grep -v "^\\(nova\\|libvirt\\|$ADMIN_USER\\):" /etc/group
    echo "nova:x:$NOVA_ID:"; echo "libvirt:x:$LIBVIRT_ID:"; echo "$ADMIN_USER:x:$ADMIN_ID:"; } >"$1/group"
  chmod 644 "$1/passwd" "$1/group"
  # sudo's PAM account check needs every user in shadow; "*": no password, yet not locked (sshd refuses locked accounts)
  awk -F: '{print $1 ":*:20000::::::"}' "$1/passwd" >"$1/shadow"
  chown root:shadow "$1/shadow"; chmod 640 "$1/shadow"
}

# The node's own name resolves locally (sudo looks it up on every call).
write_hosts() { # index
  printf '127.0.0.1 localhost\n::1 localhost\n%s %s\n' "$(node_ip "$1")" "$(node_name "$1")" >"$(node_dir "$1")/hosts"
  chmod 644 "$(node_dir "$1")/hosts"
}

write_resolv_conf() { # node-dir
  printf 'nameserver %s\nsearch %s.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n' \
    "$CLUSTER_DNS" "$DNS_NAMESPACE" >"$1/resolv.conf"
  chmod 644 "$1/resolv.conf"
}

write_sshd_config() { # index
  local d; d=$(node_dir "$1")
  cat >"$d/sshd_config" <<EOF
# sshd of EDPM test node $(node_name "$1"), written by devenv/nodes.sh
ListenAddress $(node_ip "$1")
Port 22
HostKey "$d/ssh_host_ed25519_key"
PidFile "$d/sshd.pid"
AuthorizedKeysFile "$d/authorized_keys" /home/%u/.ssh/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PrintMotd no
AcceptEnv LANG LC_*
Subsystem sftp internal-sftp
EOF
}

prepare_node_dir() { # index
  local d p; d=$(node_dir "$1")
  mkdir -p "$d"; chmod 700 "$d"
  [ -f "$d/ssh_host_ed25519_key" ] || ssh-keygen -q -t ed25519 -N '' -C "root@$(node_name "$1")" -f "$d/ssh_host_ed25519_key"
  install -m 600 "$SSH_DIR/id_ed25519.pub" "$d/authorized_keys"
  for p in "${PRIVATE_DIRS[@]}"; do mkdir -p "$d/root$p"; done
  for p in "${OVERLAY_DIRS[@]}"; do mkdir -p "$(overlay_dir "$1" "$p")/upper" "$(overlay_dir "$1" "$p")/work"; done
  # /run is empty at every boot, so is the node's.
  find "$d/root/run/node-private" -mindepth 1 -delete
  [ -f "$d/run_command" ] || : >"$d/run_command"
  chown "$NOVA_ID:$NOVA_ID" "$d/root/var/lib/nova" "$d/root/home/nova" "$d/root/var/log/nova"
  # sshd reads a user's keys as that user: cloud-admin's are in its home
  mkdir -p "$d/root/home/$ADMIN_USER/.ssh"
  install -m 600 "$SSH_DIR/id_ed25519.pub" "$d/root/home/$ADMIN_USER/.ssh/authorized_keys"
  chmod 700 "$d/root/home/$ADMIN_USER/.ssh"
  chown -R "$ADMIN_ID:$ADMIN_ID" "$d/root/home/$ADMIN_USER"
  chmod 750 "$d/root/etc/sudoers.d"
  (umask 337; echo "$ADMIN_USER ALL=(ALL) NOPASSWD: ALL" >"$d/root/etc/sudoers.d/$ADMIN_USER")
  write_accounts "$(overlay_dir "$1" /etc)/upper"
  write_resolv_conf "$d"
  write_hosts "$1"
  write_sshd_config "$1"
}

setup_netns() { # index
  local n v; n=$(node_name "$1"); v=$(veth_name "$1")
  ip netns add "$n"
  ip link add "$v" type veth peer name eth0 netns "$n"
  ip link set "$v" master "$BRIDGE" up
  ip -n "$n" link set lo up
  ip -n "$n" addr add "$(node_ip "$1")/24" dev eth0
  ip -n "$n" link set eth0 up
  ip -n "$n" route add default via "$GATEWAY"
}

# The overlays and bind mounts happen in a mount namespace of the node's own;
# sshd and every SSH session inherit it, the host never sees them. A UTS
# namespace gives each node its own hostname (nova-compute's default `host`).
start_sshd() { # index
  local d o p script i; d=$(node_dir "$1")
  script="set -e; hostname $(node_name "$1")"
  # overlays first: the private directories below /etc are bound on top of them
  for p in "${OVERLAY_DIRS[@]}"; do
    o=$(overlay_dir "$1" "$p")
    script+="; mount -t overlay overlay -o $(shq "lowerdir=$p,upperdir=$o/upper,workdir=$o/work") $(shq "$p")"
  done
  for p in "${PRIVATE_DIRS[@]}"; do
    script+="; mount --bind $(shq "$d/root$p") $(shq "$p")"
  done
  script+="; mount --bind $(shq "$d/hosts") /etc/hosts"
  script+="; mount --bind $(shq "$d/resolv.conf") /etc/resolv.conf"
  script+="; mount --bind $(shq "$d/run_command") /run_command"
  script+="; exec /usr/sbin/sshd -f $(shq "$d/sshd_config") -E $(shq "$d/sshd.log")"
  rm -f "$d/sshd.pid"; : >"$d/sshd.log"
  ip netns exec "$(node_name "$1")" unshare -m -u --propagation private sh -c "$script" \
    </dev/null >>"$d/sshd.log" 2>&1 9>&- ||
    die "sshd of $(node_name "$1") did not start: $(tail -n 1 "$d/sshd.log")"
  # sshd writes its pid file after it has gone to the background.
  for ((i = 0; i < 50; i++)); do
    pid_is "$(sshd_pid "$1")" "$(sshd_mark "$1")" && return 0
    sleep 0.1
  done
  die "sshd of $(node_name "$1") exited: $(tail -n 1 "$d/sshd.log")"
}

write_known_hosts() { # count
  local i
  for ((i = 0; i < $1; i++)); do
    printf '%s,%s %s\n' "$(node_ip "$i")" "$(node_name "$i")" \
      "$(cut -d' ' -f1,2 "$(node_dir "$i")/ssh_host_ed25519_key.pub")"
  done >"$SSH_DIR/known_hosts.tmp"
  mv -f "$SSH_DIR/known_hosts.tmp" "$SSH_DIR/known_hosts"
}

write_nodes_json() { # count
  local i args=()
  for ((i = 0; i < $1; i++)); do args+=("$(node_name "$i")" "$(node_ip "$i")" "$(sshd_pid "$i")"); done
  python3 - "$NODES_JSON" "${args[@]}" <<'EOF'
import json, sys
out, rest = sys.argv[1], sys.argv[2:]
nodes = {rest[i]: {"ip": rest[i + 1], "pid": int(rest[i + 2])} for i in range(0, len(rest), 3)}
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
  [ "$1" -eq 0 ] || teardown >/dev/null 2>&1 || true
}

cmd_start() {
  local count i prev
  count=$(parse_count "${1:-}")
  require_root
  mkdir -p "$RUN_DIR" "$NODES_DIR"
  take_lock "$RUN_DIR/nodes.lock"
  check_owner
  if all_up "$count" && layout_current; then note "already running: $count nodes"; return 0; fi
  if anything_left; then
    prev=$(recorded_count)
    teardown
    if [ "$prev" -eq "$count" ] && ! layout_current; then
      note "the nodes' layout changed (devenv/nodes.sh): restarting the nodes"
    elif [ "$prev" -ne "$count" ] && [ "$prev" -gt 0 ]; then
      note "node count changes from $prev to $count: restarting the nodes"
    else
      note "recovered stale node state (netns, bridge or sshd of an earlier run); starting fresh"
    fi
  fi
  # A start that fails half-way leaves nothing running (logs stay for a look).
  trap 'on_exit_start $?' EXIT
  check_subnet_free
  check_path_for_sshd
  ensure_client_key
  ensure_mountpoints
  echo "$ENV_DIR" >"$OWNER"
  setup_bridge
  for ((i = 0; i < count; i++)); do
    prepare_node_dir "$i"
    setup_netns "$i"
    start_sshd "$i"
  done
  write_known_hosts "$count"
  write_nodes_json "$count"
  layout_id >"$NODES_DIR/layout"
  for ((i = 0; i < count; i++)); do
    wait_tcp "$(node_ip "$i")" 22 20 || die "sshd of $(node_name "$i") does not answer on $(node_ip "$i"):22; see $(node_dir "$i")/sshd.log"
  done
  trap - EXIT
  note "running: $count node$([ "$count" -eq 1 ] || echo s) ($(node_ip 0)..$(node_ip $((count - 1)))); try: devenv/ssh.sh $(node_name 0) hostname"
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
    if anything_left; then note "not running, but netns, bridge or sshd of an earlier run are left; start or stop cleans them up"
    else note "stopped"; fi
    return 3
  fi
  for ((i = 0; i < count; i++)); do
    if node_up "$i"; then state=up; else state=down; rc=3; fi
    printf '%-16s %-16s %s\n' "$(node_name "$i")" "$(node_ip "$i")" "sshd $state"
  done
  return $rc
}

case "${1:-}" in
  start) cmd_start "${2:-}" ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  *) die "usage: $PROG start|stop|status [COUNT]" ;;
esac
