#!/usr/bin/env bash
# libvirt's modular daemons (virtqemud, virtproxyd, virtsecretd, virtnodedevd,
# virtlogd, virtlockd) for the EDPM test nodes. No Debian suite ships them, so
# this builds trixie's own libvirt source package, at the version of trixie's
# binary packages, with Debian's configure flags, into a tree that is copied
# over a trixie root which has Debian's libvirt packages at that version.
#   libvirt.sh build          build (or reuse) the tree; prints its path
#   libvirt.sh dir            the tree's path for the current inputs (builds nothing)
#   libvirt.sh version        the Debian version the tree is built from; the root
#                             installs Debian's libvirt packages at exactly this one
#   libvirt.sh install ROOT   copy the tree over ROOT (building it if needed)
#   libvirt.sh check [ROOT]   boot ROOT, or a throw-away trixie root with the tree,
#                             on an overlay and ask each daemon (ROOT is not changed)
# The build (devenv/hosts/libvirt/tree.sh and compile.sh) is cached under
# $CACHE/hosts/libvirt-<hash of those two files>; the downloads (trixie's index,
# the source, .debs: 261 MB) stay in $CACHE/hosts/libvirt-downloads.
# Measured at 7dc9b3a on the reference machine (2 cores, one of them running
# the unit tests' mutants): the cold build, downloads included, took 7 min
# 29 s, nearly all of it the compile (649 steps); at 3e8078f, under a load of
# 8-10, 18 min 44 s. A second call answers in 0.04 s. The tree is 17 MB (371
# files). check takes 1 min 24 s with a throw-away root made from cold
# downloads, 12 s on a given root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=devenv/lib.sh
. "$here/../lib.sh"
# shellcheck source=devenv/hosts/libvirt/tree.sh
. "$here/libvirt/tree.sh"

# The cold build on the reference machine (above): the console's "usually".
BUILD_SECONDS=449
# The nodes install Debian's libvirt at the tree's version; the tree replaces
# these packages' libvirt files.
RUNTIME_PACKAGES=(libvirt-daemon-system libvirt-daemon-driver-qemu libvirt-clients libvirt0)
# The daemons the program's libvirt service runs (each with its sockets), and
# virtlockd, which the build makes alongside them.
DAEMONS=(virtqemud virtproxyd virtsecretd virtnodedevd virtlogd virtlockd)

# The Debian version of package PKG in ROOT ('' when it is not installed).
root_version() { # root pkg
  { dpkg-query --admindir="$1/var/lib/dpkg" -W -f '${db:Status-Abbrev} ${Version}' "$2" 2>/dev/null || true; } |
    awk '$1 == "ii" { print $2 }'
}

require_debian_libvirt() { # root
  local root=$1 pkg v
  [ -d "$root/var/lib/dpkg" ] || die "$root is not a Debian root (no var/lib/dpkg)"
  for pkg in "${RUNTIME_PACKAGES[@]}"; do
    v=$(root_version "$root" "$pkg")
    [ "$v" = "$LIBVIRT_DEB_VERSION" ] ||
      die "$root has $pkg ${v:-not installed}; the tree is built from $LIBVIRT_DEB_VERSION: install Debian's $pkg=$LIBVIRT_DEB_VERSION first"
  done
}

# Copy the tree over ROOT. Directories that exist keep their owner and mode
# (Debian's maintainer scripts set them, e.g. /var/lib/libvirt/qemu), and so do
# config files under /etc that Debian's packages installed already (the same
# source's defaults); everything else, libraries and driver modules included, is
# the tree's.
install_tree() { # root
  local root=$1 tree
  require_debian_libvirt "$root"
  require_root
  tree=$(build)
  (cd "$tree" && tar -cf - --exclude=./etc .) | tar -C "$root" -xpf - --no-overwrite-dir
  etc_missing "$tree" "$root" | (cd "$tree" && tar --null --no-recursion -T - -cf -) | tar -C "$root" -xpf -
  chroot "$root" /sbin/ldconfig
}

# The tree's paths under /etc that ROOT does not have yet (NUL-separated, parents first).
etc_missing() { # tree root
  local p
  (cd "$1" && find ./etc -print0) | while IFS= read -r -d '' p; do
    [ -e "$2/$p" ] || [ -L "$2/$p" ] || printf '%s\0' "$p"
  done
}

# ROOT has Debian's libvirt at the tree's version, and every ELF file that its
# libvirt packages installed is the tree's (one build: never Debian's libvirt.so
# under our daemons, or the other way round).
require_tree_installed() { # root tree
  local root=$1 tree=$2 pkg f
  local -a foreign=()
  [ -d "$root" ] || die "no root filesystem at $root"
  require_debian_libvirt "$root"
  while read -r pkg; do
    while read -r f; do
      if [ ! -f "$root$f" ] || [ -L "$root$f" ]; then continue; fi
      [ "$(head -c 4 "$root$f" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
      cmp -s "$root$f" "$tree$f" || foreign+=("$f ($pkg)")
    done < <(dpkg-query --admindir="$root/var/lib/dpkg" -L "$pkg")
  done < <(dpkg-query --admindir="$root/var/lib/dpkg" -W -f '${db:Status-Abbrev} ${Package} ${source:Package}\n' |
    awk '$1 == "ii" && $3 == "libvirt" { print $2 }')
  [ ${#foreign[@]} -eq 0 ] ||
    die "these files of $root are not the tree's (run 'libvirt.sh install $root'): ${foreign[*]}"
  for f in "${DAEMONS[@]}"; do
    [ -x "$root/usr/sbin/$f" ] || die "$root has no /usr/sbin/$f (run 'libvirt.sh install $root')"
  done
}

# A throw-away trixie root with Debian's libvirt and qemu, for check.
make_check_root() { # dir log
  local dir=$1 log=$2 include pkg
  include=systemd,systemd-sysv,dbus,qemu-system-x86,libxml2-utils
  for pkg in "${RUNTIME_PACKAGES[@]}"; do include+=",$pkg=$LIBVIRT_DEB_VERSION"; done
  make_root "$dir" "$log" --variant=apt --include="$include"
}

check() { # [root]
  local root=${1:-} tree scratch rc=0
  tree=$(build)
  [ -z "$root" ] || require_tree_installed "$root" "$tree"
  require_root
  ensure_tools
  mkdir -p "$HOSTS_CACHE"
  scratch=$(mktemp -d "$HOSTS_CACHE/libvirt-check.XXXXXX")
  # shellcheck disable=SC2064  # the path is fixed now
  trap "rm -rf $(shq "$scratch")" EXIT
  if [ -z "$root" ]; then
    note "making a throw-away trixie root with Debian's libvirt $LIBVIRT_DEB_VERSION and the tree (log: $scratch/root.log)"
    make_check_root "$scratch/root" "$scratch/root.log"
    install_tree "$scratch/root"
    root=$scratch/root
    require_tree_installed "$root" "$tree"
  fi
  note "booting $root on an overlay (log: $scratch/boot.log)"
  unshare --mount --propagation private -- "$0" _boot "$root" "$scratch" || rc=$?
  if [ "$rc" -ne 0 ]; then
    # The scratch directory goes: its console log stays for a post-mortem.
    cp "$scratch/boot.log" "$HOSTS_CACHE/libvirt-check-console.log"
    die "the check failed (the node's console: $HOSTS_CACHE/libvirt-check-console.log)"
  fi
  note "ok: each daemon answered, socket-activated, in $root"
}

# --- the booted check (runs in a mount namespace of its own) ---

# The node's own cgroup under ours, in every hierarchy of the host (v1 and the
# unified tree, which nspawn takes its place from); the cpuset hierarchy needs
# its cpus and mems before a task can join.
join_own_cgroup() { # name
  local name=$1 ctrl path mnt dir
  while IFS=: read -r _ ctrl path; do
    if [ -z "$ctrl" ]; then mnt=/sys/fs/cgroup/unified
    else mnt=/sys/fs/cgroup/${ctrl#name=}; fi
    [ -d "$mnt" ] || continue
    dir=$mnt${path%/}/$name
    mkdir -p "$dir"
    if [ "$ctrl" = cpuset ]; then
      cat "$mnt${path%/}/cpuset.cpus" >"$dir/cpuset.cpus"
      cat "$mnt${path%/}/cpuset.mems" >"$dir/cpuset.mems"
    fi
    echo "$BASHPID" >"$dir/cgroup.procs"
  done </proc/self/cgroup
}

# Remove the node's cgroups depth-first (nspawn leaves payload/ and supervisor/).
leave_own_cgroup() { # name
  local name=$1 ctrl path mnt
  while IFS=: read -r _ ctrl path; do
    if [ -z "$ctrl" ]; then mnt=/sys/fs/cgroup/unified
    else mnt=/sys/fs/cgroup/${ctrl#name=}; fi
    [ -d "$mnt${path%/}/$name" ] || continue
    find "$mnt${path%/}/$name" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done </proc/self/cgroup
}

# The host PID of the container's PID 1: nspawn's descendant that is PID 1 in its own namespace.
container_init() { # nspawn-pid
  local p
  local -a todo=("$1") kids
  while [ ${#todo[@]} -gt 0 ]; do
    p=${todo[0]}; todo=("${todo[@]:1}")
    if awk '$1 == "NSpid:" && NF == 3 && $3 == 1 { found = 1 } END { exit !found }' "/proc/$p/status" 2>/dev/null; then
      echo "$p"; return 0
    fi
    read -ra kids <<<"$(cat "/proc/$p/task/"*/children 2>/dev/null | tr '\n' ' ')"
    todo+=("${kids[@]}")
  done
  return 1
}

in_container() { # pid1 cmd...
  local pid=$1; shift
  nsenter -t "$pid" -m -u -i -n -p -C -r -w -- /usr/bin/env -i PATH="$ROOT_PATH" LANG=C.UTF-8 TERM=dumb "$@"
}

boot_check() { # root scratch
  local root=$1 scratch=$2 merged=$2/merged machine=libvirt-check-$$ nspawn pid1 i rc=0 d
  mkdir -p "$scratch/upper" "$scratch/work" "$merged"
  mount -t overlay overlay -o "lowerdir=$root,upperdir=$scratch/upper,workdir=$scratch/work" "$merged"
  # As on a node of the program's libvirt service: libvirtd masked, each daemon's
  # sockets enabled; the daemons themselves not (Debian enables virtlogd's), so
  # that each starts when its socket is first used.
  systemctl --root="$merged" --quiet mask libvirtd.service libvirtd.socket libvirtd-ro.socket libvirtd-admin.socket \
    libvirtd-tcp.socket libvirtd-tls.socket
  for d in "${DAEMONS[@]}"; do systemctl --root="$merged" --quiet disable "$d.service"; done
  for d in "${DAEMONS[@]}"; do
    [ "$d" = virtlockd ] && continue
    systemctl --root="$merged" --quiet enable "$d.socket" "$d-admin.socket"
    [ "$d" = virtlogd ] || systemctl --root="$merged" --quiet enable "$d-ro.socket"
  done
  # The settings of a test node (devenv/hosts): a unified cgroup tree of its own
  # cgroup, no machined on the host, crun's keyrings and bpf allowed.
  (
    join_own_cgroup "$machine"
    SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 exec systemd-nspawn --boot --directory="$merged" --machine="$machine" \
      --keep-unit --register=no --private-users=no --private-network --resolv-conf=off --timezone=off \
      --link-journal=no --console=read-only --system-call-filter='@keyring bpf' </dev/null
  ) >"$scratch/boot.log" 2>&1 &
  nspawn=$!
  for ((i = 0; i < 300; i++)); do
    pid1=$(container_init "$nspawn") && break
    kill -0 "$nspawn" 2>/dev/null || break
    sleep 0.1
  done
  if [ -n "${pid1:-}" ]; then
    in_container "$pid1" /bin/bash -s -- "$LIBVIRT_DEB_VERSION" <"$TREE_INPUTS/probe.sh" || rc=$?
    # A clean poweroff.
    kill -RTMIN+4 "$pid1" 2>/dev/null || true
  else
    echo "the node did not boot" >&2; rc=1
  fi
  for ((i = 0; i < 300; i++)); do kill -0 "$nspawn" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$nspawn" 2>/dev/null && { kill -KILL "$nspawn" 2>/dev/null || true; }
  wait "$nspawn" 2>/dev/null || true
  leave_own_cgroup "$machine"
  umount "$merged" 2>/dev/null || umount -l "$merged"
  return "$rc"
}

case "${1:-}" in
  build) build ;;
  dir) printf '%s/tree\n' "$(build_dir)" ;;
  version) printf '%s\n' "$LIBVIRT_DEB_VERSION" ;;
  install) [ -n "${2:-}" ] || die "usage: $PROG install ROOT"; install_tree "$2" ;;
  check) check "${2:-}" ;;
  _boot) boot_check "$2" "$3" ;;
  *) die "usage: $PROG build|dir|version|install ROOT|check [ROOT]" ;;
esac
