#!/usr/bin/env bash
# The root filesystem every EDPM test node boots (read-only, under each node's
# own overlay layer), and the image store every node's podman reads.
#   rootfs.sh build          build (or reuse) the root; prints its path
#   rootfs.sh images TARBALL load the OCI tarball into a store (or reuse it); prints its path
# Cached under $CACHE/hosts/ by the hash of their inputs; the apt downloads are
# kept beside, so a rebuild downloads nothing that did not change.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=devenv/lib.sh
. "$here/lib.sh"
PROG=rootfs
HOSTS_SRC=$here/hosts
HOSTS_CACHE=$CACHE/hosts
APT_CACHE=$HOSTS_CACHE/apt-archives
SUITE=trixie
MIRROR=http://deb.debian.org/debian
# Upstream's ids, so that files laid out by the roles keep them: libvirt's
# group exists before the packages that would pick another gid.
LIBVIRT_GID=42473

inputs_hash() { # file...
  (cd "$HOSTS_SRC" && sha256sum -- "$@") | sha256sum | cut -c1-16
}
# The root's inputs: its packages, its setup, how it is built, and the libvirt
# tree laid over it (whose path names the tree's own inputs).
root_dir() { # libvirt-tree
  local key
  key=$( { inputs_hash packages.txt setup.sh; declare -f build_root; echo "$1"; } | sha256sum | cut -c1-16)
  printf '%s/rootfs-%s' "$HOSTS_CACHE" "$key"
}

# Drop builds of older inputs (a root is about 600 MB); the apt cache stays.
prune() { # prefix keep
  local d
  for d in "$HOSTS_CACHE/$1"-*; do
    [ -d "$d" ] && [ "$d" != "$2" ] && rm -rf "$d"
  done
  return 0
}

build_root() {
  local dir log tmp tree version p
  # libvirt's modular daemons, which no Debian suite ships (devenv/hosts/libvirt.sh)
  tree=$("$HOSTS_SRC/libvirt.sh" build) || exit 1
  version=$("$HOSTS_SRC/libvirt.sh" version)
  dir=$(root_dir "$tree")
  if [ ! -f "$dir/.done" ]; then
    log=$LOG_DIR/rootfs.log
    phase rootfs "$log" "building the test nodes' root filesystem from Debian $SUITE (systemd, podman, libvirt, QEMU, Open vSwitch)" \
      "usually 2-3 min on an empty apt cache"
    command -v mmdebstrap >/dev/null ||
      logged "$log" apt-get install -y -q -o DPkg::Lock::Timeout=600 mmdebstrap
    mkdir -p "$APT_CACHE"
    rm -rf "$dir"; mkdir -p "$dir"
    tmp=$dir/rootfs.tmp
    local -a packages
    mapfile -t packages < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$HOSTS_SRC/packages.txt")
    # Debian's libvirt at the version the tree is built from: the tree replaces their files
    for p in libvirt-daemon-system libvirt-daemon-driver-qemu libvirt-clients libvirt0; do packages+=("$p=$version"); done
    # The apt cache goes in and out by mmdebstrap's own hooks; no docs or man pages.
    # shellcheck disable=SC2016  # "$1" of a hook is mmdebstrap's (the root)
    logged "$log" mmdebstrap --variant=apt --mode=root --format=directory \
      --include="$(IFS=,; echo "${packages[*]}")" \
      --aptopt='Acquire::Languages "none"' \
      --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
      --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
      --dpkgopt='path-include=/usr/share/locale/locale.alias' \
      --skip=essential/unlink \
      --setup-hook="mkdir -p \"\$1\"/var/cache/apt/archives/" \
      --setup-hook="sync-in $APT_CACHE /var/cache/apt/archives/" \
      --essential-hook="echo libvirt:x:$LIBVIRT_GID: >>\"\$1\"/etc/group; echo 'libvirt:!::' >>\"\$1\"/etc/gshadow" \
      --customize-hook="sync-out /var/cache/apt/archives $APT_CACHE" \
      --customize-hook="copy-in $HOSTS_SRC/setup.sh /tmp" \
      --customize-hook='chroot "$1" bash /tmp/setup.sh' \
      --customize-hook='rm -f "$1"/tmp/setup.sh' \
      "$SUITE" "$tmp" "$MIRROR"
    logged "$log" "$HOSTS_SRC/libvirt.sh" install "$tmp"
    mv "$tmp" "$dir/rootfs"
    touch "$dir/.done"
    prune rootfs "$dir"
  fi
  printf '%s\n' "$dir/rootfs"
}

# podman of the nodes' own root loads the tarball into a store of its own, in
# a private mount namespace; the names are those of the tarball's manifests.
build_images() { # tarball
  local tar=$1 root dir log key
  [ -f "$tar" ] || die "no image tarball at $tar"
  root=$(build_root)
  # the store holds what podman of this version made of this tarball
  key=$( { dpkg-query --admindir="$root/var/lib/dpkg" -W podman; sha256sum <"$tar"; } | sha256sum | cut -c1-16)
  dir=$HOSTS_CACHE/images-$key
  if [ ! -f "$dir/.done" ]; then
    log=$LOG_DIR/node-images.log
    phase node-images "$log" "loading the OpenStack image into the test nodes' image store" "usually under a minute"
    rm -rf "$dir"; mkdir -p "$dir/store" "$dir/scratch"
    local -a names
    mapfile -t names < <(python3 "$here/oci.py" --index "$tar" | awk '{print $1}' | sort -u)
    [ ${#names[@]} -gt 0 ] || die "$tar names no image"
    # shellcheck disable=SC2016  # expanded by the inner bash
    logged "$log" unshare --mount --propagation private --pid --fork --kill-child -- bash -euo pipefail -c '
      root=$1 store=$2 scratch=$3 tar=$4; shift 4
      mkdir -p "$scratch/upper" "$scratch/work" "$scratch/merged"
      mount -t overlay overlay -o "lowerdir=$root,upperdir=$scratch/upper,workdir=$scratch/work" "$scratch/merged"
      r=$scratch/merged
      mount -t proc proc "$r/proc"; mount --rbind /dev "$r/dev"; mount -t tmpfs tmpfs "$r/run"
      mount --bind "$store" "$r/var/lib/shared-images"
      mkdir -p "$r/tmp/image"; mount --bind "$(dirname "$tar")" "$r/tmp/image"
      p="podman --root /var/lib/shared-images --runroot /run/containers/storage --storage-driver overlay --cgroup-manager cgroupfs --events-backend none"
      archive="oci-archive:/tmp/image/$(basename "$tar")"
      # one image under every name of the tarball: the first is pulled, the others tag it
      first=$1; shift
      export PODMAN_IGNORE_CGROUPSV1_WARNING=1
      chroot "$r" $p pull -q "$archive:$first"
      for name in "$@"; do chroot "$r" $p tag "$first" "$name"; done
      chroot "$r" $p images --format "{{.Repository}}:{{.Tag}} {{.ID}}"
    ' load "$root" "$dir/store" "$dir/scratch" "$tar" "${names[@]}"
    rm -rf "$dir/scratch"
    touch "$dir/.done"
    prune images "$dir"
  fi
  printf '%s\n' "$dir/store"
}

require_root
mkdir -p "$HOSTS_CACHE"
take_lock "$HOSTS_CACHE/.lock"
case "${1:-}" in
  build) build_root ;;
  images) build_images "${2:-}" ;;
  *) die "usage: $PROG build | images TARBALL" ;;
esac
