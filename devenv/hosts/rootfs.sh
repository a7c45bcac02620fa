#!/usr/bin/env bash
# The root filesystem every EDPM test node boots (read-only, under each node's
# own overlay layer), and the image store every node's podman reads.
#   rootfs.sh build               build (or reuse) the root; prints its path
#   rootfs.sh images TARBALL...   load the OCI tarballs into one store (or reuse it); prints its path
# Cached under $CACHE/hosts/ by the hash of their inputs; the apt downloads are
# kept beside, so a rebuild downloads nothing that did not change.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
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

# The store holds what podman of the root's version made of these tarballs.
store_key() { # root tarball...
  local root=$1 tar; shift
  { dpkg-query --admindir="$root/var/lib/dpkg" -W podman
    for tar in "$@"; do sha256sum <"$tar"; done; } | sha256sum | cut -c1-16
}

# podman of the nodes' own root loads each tarball into one store, in a private
# mount namespace; the names are those of the tarballs' manifests (today's
# image and, once built, an older release's nova images beside it).
build_images() { # tarball...
  local root dir log tar
  [ $# -gt 0 ] || die "usage: $PROG images TARBALL..."
  for tar in "$@"; do [ -f "$tar" ] || die "no image tarball at $tar"; done
  root=$(build_root)
  dir=$HOSTS_CACHE/images-$(store_key "$root" "$@")
  if [ ! -f "$dir/.done" ]; then
    log=$LOG_DIR/node-images.log
    phase node-images "$log" "loading the OpenStack images into the test nodes' image store" \
      "usually under a minute per image"
    rm -rf "$dir"; mkdir -p "$dir/store" "$dir/scratch"
    # TARBALL NAME... -- per tarball, for the loader below
    local -a names groups=()
    for tar in "$@"; do
      mapfile -t names < <(python3 "$here/oci.py" --index "$tar" | awk '{print $1}' | sort -u)
      [ ${#names[@]} -gt 0 ] || die "$tar names no image"
      groups+=("$tar" "${names[@]}" --)
    done
    # shellcheck disable=SC2016  # expanded by the inner bash
    logged "$log" unshare --mount --propagation private --pid --fork --kill-child -- bash -euo pipefail -c '
      root=$1 store=$2 scratch=$3; shift 3
      mkdir -p "$scratch/upper" "$scratch/work" "$scratch/merged"
      mount -t overlay overlay -o "lowerdir=$root,upperdir=$scratch/upper,workdir=$scratch/work" "$scratch/merged"
      r=$scratch/merged
      mount -t proc proc "$r/proc"; mount --rbind /dev "$r/dev"; mount -t tmpfs tmpfs "$r/run"
      mount --bind "$store" "$r/var/lib/shared-images"
      mkdir -p "$r/tmp/image"
      p="podman --root /var/lib/shared-images --runroot /run/containers/storage --storage-driver overlay --cgroup-manager cgroupfs --events-backend none"
      export PODMAN_IGNORE_CGROUPSV1_WARNING=1
      i=0
      while [ $# -gt 0 ]; do
        tar=$1; shift; names=()
        while [ "$1" != -- ]; do names+=("$1"); shift; done
        shift
        i=$((i + 1)); touch "$r/tmp/image/$i.tar"; mount --bind "$tar" "$r/tmp/image/$i.tar"
        # one image under every name of the tarball: the first is pulled, the others tag it
        chroot "$r" $p pull -q "oci-archive:/tmp/image/$i.tar:${names[0]}"
        for name in "${names[@]:1}"; do chroot "$r" $p tag "${names[0]}" "$name"; done
      done
      chroot "$r" $p images --format "{{.Repository}}:{{.Tag}} {{.ID}}"
    ' load "$root" "$dir/store" "$dir/scratch" "${groups[@]}"
    rm -rf "$dir/scratch"
    touch "$dir/.done"
    prune images "$dir"
  fi
  printf '%s\n' "$dir/store"
}

main() {
  require_root
  mkdir -p "$HOSTS_CACHE"
  take_lock "$HOSTS_CACHE/.lock"
  case "${1:-}" in
    build) build_root ;;
    images) shift; build_images "$@" ;;
    *) die "usage: $PROG build | images TARBALL..." ;;
  esac
}

# Sourced (the unit tests), it only defines the functions.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then main "$@"; fi
