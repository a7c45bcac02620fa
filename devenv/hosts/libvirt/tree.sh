# shellcheck shell=bash
# The build of devenv/hosts/libvirt.sh (sourced): trixie's libvirt source
# package compiled in a trixie build root (compile.sh) into a tree cached under
# $CACHE/hosts/libvirt-<hash>. The hash covers this file and compile.sh, all
# that decides what the tree holds; the check (probe.sh) is not part of it.

SUITE=trixie
MIRROR=http://deb.debian.org/debian
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
# trixie's libvirt, source and binaries (bump it when trixie's point release
# does: the archive keeps only the current version).
LIBVIRT_DEB_VERSION=11.3.0-3+deb13u3

TREE_INPUTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HOSTS_CACHE=$CACHE/hosts
DOWNLOADS=$HOSTS_CACHE/libvirt-downloads
DEBS=$DOWNLOADS/debs
SOURCES=$DOWNLOADS/source
ROOT_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# Content hash of the build's own files (names and bytes).
inputs_hash() {
  (cd "$TREE_INPUTS" && sha256sum tree.sh compile.sh) | sha256sum | cut -c1-16
}
build_dir() { printf '%s/libvirt-%s' "$HOSTS_CACHE" "$(inputs_hash)"; }

# apt on the host, with trixie's indexes in directories of our own (the host's
# sources, lists and package state stay untouched).
host_apt() { # apt-get|apt-cache args...
  local cmd=$1; shift
  "$cmd" -o Dir::Etc::SourceList="$DOWNLOADS/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null \
    -o Dir::State="$DOWNLOADS/apt/state" -o Dir::State::status=/dev/null \
    -o Dir::Cache="$DOWNLOADS/apt/cache" -o Debug::NoLocking=true "$@"
}

# The source package's tarballs. Debian's mirror does not always serve the
# .dsc: the tarballs' checksums come from trixie's Sources index (apt checks
# its signature), and apt's own downloader checks each tarball against them.
fetch_source() { # log -> prints the directory holding the tarballs
  local log=$1 dir=$SOURCES/$LIBVIRT_DEB_VERSION stanza pool hash _size name
  if [ -f "$dir/.done" ]; then printf '%s\n' "$dir"; return 0; fi
  mkdir -p "$DOWNLOADS/apt/state/lists/partial" "$DOWNLOADS/apt/cache/archives/partial" "$dir"
  printf 'deb-src [signed-by=%s] %s %s main\n' "$KEYRING" "$MIRROR" "$SUITE" >"$DOWNLOADS/apt/sources.list"
  logged "$log" host_apt apt-get update
  stanza=$(host_apt apt-cache showsrc --only-source libvirt 2>>"$log" |
    awk -v v="Version: $LIBVIRT_DEB_VERSION" 'BEGIN { RS = "" } index($0 "\n", "\n" v "\n") { print; exit }')
  if [ -z "$stanza" ]; then
    die "trixie's Sources index has no libvirt $LIBVIRT_DEB_VERSION (it has: $(host_apt apt-cache showsrc --only-source libvirt 2>/dev/null |
      sed -n 's/^Version: //p' | tr '\n' ' ')): set LIBVIRT_DEB_VERSION in devenv/hosts/libvirt/tree.sh to trixie's current one"
  fi
  pool=$(sed -n 's/^Directory: //p' <<<"$stanza")
  while read -r hash _size name; do
    case "$name" in *.asc) continue ;; *.orig.tar.* | *.debian.tar.*) ;; *) continue ;; esac
    logged "$log" /usr/lib/apt/apt-helper download-file "$MIRROR/$pool/$name" "$dir/$name" "SHA256:$hash"
  done < <(sed -n '/^Checksums-Sha256:/,/^[^ ]/{/^ /p}' <<<"$stanza")
  if [ -z "$(find "$dir" -name '*.orig.tar.*')" ] || [ -z "$(find "$dir" -name '*.debian.tar.*')" ]; then
    die "trixie's Sources index lists no orig and debian tarballs for libvirt $LIBVIRT_DEB_VERSION (log: $log)"
  fi
  touch "$dir/.done"
  printf '%s\n' "$dir"
}

# mmdebstrap, and nspawn for the check at the host's own systemd version (never
# an upgrade of the host's systemd).
ensure_tools() {
  local -a missing=()
  command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
  command -v systemd-nspawn >/dev/null || missing+=("systemd-container=$(dpkg-query -W -f '${Version}' systemd)")
  [ ${#missing[@]} -eq 0 ] && return 0
  { apt-get -o DPkg::Lock::Timeout=600 update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}"; } \
    >/dev/null 2>&1 || die "could not install ${missing[*]} with apt-get; install them and run again"
}

# A trixie root made by mmdebstrap, its .debs taken from and kept in $DEBS: the
# cache is bound over the root's apt archive for the run only (before
# mmdebstrap's clean-up empties the archive), in a mount namespace of its own,
# so that nothing stays mounted after a crash.
make_root() { # dir log mmdebstrap-args...
  local dir=$1 log=$2; shift 2
  mkdir -p "$DEBS/partial"
  # shellcheck disable=SC2016  # $1 is the hook's argument (the root)
  logged "$log" unshare --mount --propagation private -- \
    mmdebstrap --mode=root --skip=essential/unlink \
    --setup-hook='mkdir -p "$1/var/cache/apt/archives"' \
    --setup-hook="mount --bind $(shq "$DEBS") \"\$1/var/cache/apt/archives\"" \
    --customize-hook='umount "$1/var/cache/apt/archives"' \
    "$@" "$SUITE" "$dir" "deb [signed-by=$KEYRING] $MIRROR $SUITE main"
}

# Run CMD in ROOT (its own mount, PID and UTS namespaces) with /proc, /dev, the
# .deb cache at apt's archive and this directory read-only at /mnt; with NET
# "none", no network either.
in_root() { # root net cmd...
  local root=$1 net=$2; shift 2
  local -a ns=(--mount --propagation private --pid --fork --kill-child --uts)
  [ "$net" = none ] && ns+=(--net)
  # shellcheck disable=SC2016  # expanded by the inner bash
  unshare "${ns[@]}" -- /bin/bash -euo pipefail -c '
    r=$1 debs=$2 inputs=$3 path=$4; shift 4
    hostname libvirt-build
    mount -t proc proc "$r/proc"
    mount --rbind /dev "$r/dev"
    mount --bind "$debs" "$r/var/cache/apt/archives"
    mount --bind "$inputs" "$r/mnt"
    mount -o remount,bind,ro "$r/mnt"
    exec chroot "$r" /usr/bin/env -i PATH="$path" HOME=/root LANG=C.UTF-8 TERM=dumb \
      DEBIAN_FRONTEND=noninteractive "$@"
  ' in_root "$root" "$DEBS" "$TREE_INPUTS" "$ROOT_PATH" "$@"
}

# Drop the trees of older inputs (the downloads stay).
prune() { # keep-dir
  local d
  for d in "$HOSTS_CACHE"/libvirt-*; do
    [[ $(basename "$d") =~ ^libvirt-[0-9a-f]{16}$ ]] || continue
    [ "$d" = "$1" ] || rm -rf "$d"
  done
}

# The tree for the current inputs, built unless cached; prints its path. The
# console's estimate is BUILD_SECONDS (libvirt.sh: the time it was measured at).
build() {
  local dir log src root
  dir=$(build_dir)
  if [ -f "$dir/.done" ]; then printf '%s\n' "$dir/tree"; return 0; fi
  require_root
  mkdir -p "$HOSTS_CACHE"
  take_lock "$HOSTS_CACHE/.libvirt.lock"
  # Another build may have finished while we waited for the lock.
  if [ -f "$dir/.done" ]; then printf '%s\n' "$dir/tree"; return 0; fi
  rm -rf "$dir"; mkdir -p "$dir"
  log=$dir/build.log
  phase libvirt "$log" "building libvirt $LIBVIRT_DEB_VERSION with its modular daemons from Debian's source package" \
    "$(usually "$BUILD_SECONDS") on 2 cores"
  ensure_tools
  src=$(fetch_source "$log")
  # The build root: trixie's buildd set and the source package's build-deps.
  root=$dir/root
  make_root "$root" "$log" --variant=buildd --skip=cleanup/apt/lists
  mkdir -p "$root/build/src"
  tar -C "$root/build/src" --strip-components=1 -xf "$(find "$src" -name '*.orig.tar.*' | head -n 1)"
  tar -C "$root/build/src" -xf "$(find "$src" -name '*.debian.tar.*' | head -n 1)"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  logged "$log" in_root "$root" net apt-get build-dep -y --no-install-recommends /build/src
  # The compile has no network, and yields to the other work on the machine.
  logged "$log" in_root "$root" none nice -n 10 /bin/bash /mnt/compile.sh "$LIBVIRT_DEB_VERSION" /build/src /build/destdir
  mv "$root/build/destdir" "$dir/tree"
  rm -rf "$root"
  touch "$dir/.done"
  prune "$dir"
  printf '%s\n' "$dir/tree"
}
