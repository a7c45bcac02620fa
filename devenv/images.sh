#!/usr/bin/env bash
# The one container image every OpenStack pod of the local environment runs,
# built from Debian packages and PyPI (no registry is reachable).
#   images.sh build     build (or reuse) it; prints the OCI tarball's path
#   images.sh import    build if needed, then import it into the cluster's containerd
#   images.sh selftest  start the servers of the image once in its root, then stop them
#   images.sh build|import|selftest RELEASE
#                       the same for the nova images of an older nova RELEASE
#                       (devenv/images/releases/RELEASE: its pins and tag)
#   images.sh releases  the tarball of each older release built for today's
#                       inputs, one per line (builds nothing): the test nodes'
#                       image store holds those too (devenv/nodes.sh)
# The build is cached under $CACHE/images/<hash of devenv/images and IMAGE_TAG>,
# a release's under $CACHE/images/nova-RELEASE-<hash of its inputs>.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=devenv/lib.sh
. "$here/lib.sh"
IMAGES_SRC=$here/images
# shellcheck source=devenv/images/rootfs.sh
. "$IMAGES_SRC/rootfs.sh"

# shellcheck disable=SC1091  # versions.env holds plain assignments
. "$here/versions.env"
IMAGE_TAG=${IMAGE_TAG:-2026.2-1}
# Every name the image is imported under (one image, many pods).
IMAGE_NAMES=(nova-api nova-scheduler nova-conductor nova-novncproxy nova-compute
  neutron-metadata-agent neutron-server keystone placement glance-api mariadb rabbitmq memcached
  ovn-nb-db-server ovn-sb-db-server ovn-northd openstackclient dnsmasq)
IMAGES_CACHE=$CACHE/images
APT_CACHE=$IMAGES_CACHE/apt-archives
PIP_CACHE=$IMAGES_CACHE/pip
DEBOOTSTRAP_CACHE=$IMAGES_CACHE/debootstrap

# A release's image set: the nova images a stack's `images` names, of the
# release's nova; the neighbours stay today's (their tag is IMAGE_TAG above).
RELEASE=""
RELEASE_IMAGE_NAMES=(nova-api nova-scheduler nova-conductor nova-novncproxy nova-compute)
use_release() { # release
  RELEASE=$1
  [[ $RELEASE =~ ^[0-9]+(\.[0-9]+)+$ ]] || die "'$RELEASE' is not a nova version like 27.5.1"
  local dir=$IMAGES_SRC/releases/$RELEASE
  [ -f "$dir/release.env" ] || die "no image set for nova $RELEASE: $dir/release.env is missing"
  IMAGE_TAG=""
  # shellcheck disable=SC1090,SC1091  # plain assignments: IMAGE_TAG
  . "$dir/release.env"
  [ -n "$IMAGE_TAG" ] || die "$dir/release.env sets no IMAGE_TAG"
  IMAGE_NAMES=("${RELEASE_IMAGE_NAMES[@]}")
}

image_refs() {
  local n
  for n in "${IMAGE_NAMES[@]}"; do printf 'localhost/openstack-nova/%s:%s\n' "$n" "$IMAGE_TAG"; done
}

# Content hash of FILES (names and bytes) plus any extra words.
inputs_hash() { # extra -- file...
  local extra=$1; shift 2
  { printf '%s\n' "$extra"; (cd "$IMAGES_SRC" && sha256sum -- "$@"); } | sha256sum | cut -c1-16
}
# Today's image: every file but the releases'; a release's: its own files and
# the common ones (not today's pins).
all_inputs() {
  if [ -z "$RELEASE" ]; then
    (cd "$IMAGES_SRC" && find . -path ./releases -prune -o -type f -print | LC_ALL=C sort)
  else
    (cd "$IMAGES_SRC" && { find . -path ./releases -prune -o -type f -not -name requirements.txt \
      -not -name constraints.txt -print; find "./releases/$RELEASE" -type f; } | LC_ALL=C sort)
  fi
}

base_dir() { printf '%s/base-%s' "$IMAGES_CACHE" "$(inputs_hash base -- ./packages.txt ./base.sh ./rootfs.sh)"; }
image_dir() {
  local -a files
  mapfile -t files < <(all_inputs)
  printf '%s/%s%s' "$IMAGES_CACHE" "${RELEASE:+nova-$RELEASE-}" "$(inputs_hash "$IMAGE_TAG" -- "${files[@]}")"
}

# Drop the builds of older inputs (each is a root of several hundred MB):
# today's image prunes its own and the bases, a release's image its own; the
# download caches stay.
prune() { # keep-dir...
  local d k keep pattern='^(base-)?[0-9a-f]{16}$'
  [ -z "$RELEASE" ] || pattern="^nova-${RELEASE//./\\.}-[0-9a-f]{16}\$"
  for d in "$IMAGES_CACHE"/*; do
    [[ $(basename "$d") =~ $pattern ]] || continue
    keep=0
    for k in "$@"; do [ "$d" = "$k" ] && keep=1; done
    [ "$keep" = 1 ] || rm -rf "$d"
  done
}

# No entrypoint: pods give the command (kolla_start when they give none).
write_tarball() { # dir
  local dir=$1 oci=$here/oci.py ref
  [ -f "$oci" ] || die "devenv/oci.py (the OCI tarball writer) is missing"
  local -a args=(--rootfs "$dir/rootfs" --out "$dir/image.tar" --cmd kolla_start
    --env "PATH=$IMAGE_PATH" --env LANG=C.UTF-8)
  while read -r ref; do args+=(--name "$ref"); done < <(image_refs)
  python3 "$oci" "${args[@]}" >"$dir/oci.log" 2>&1 || { cat "$dir/oci.log" >&2; die "writing the OCI tarball failed"; }
}

build() {
  local base dir fresh_base=0
  base=$(base_dir); dir=$(image_dir)
  if [ ! -f "$dir/.done" ]; then
    mkdir -p "$APT_CACHE" "$PIP_CACHE"
    # Each step keeps its log in its build directory (devenv/images/rootfs.sh),
    # and shows the log's last lines when it fails.
    if [ ! -f "$base/.done" ]; then
      # the base is today's image's too: built under its lock
      if [ -n "$RELEASE" ]; then exec 8>"$IMAGES_CACHE/.lock"; flock -w 300 8 || die "another $PROG is still running"; fi
      # 3 min 43 s for both steps from empty apt and pip caches on the reference machine (7dc9b3a)
      phase_line image "building the OpenStack image from Debian $SUITE and PyPI" \
        "$(usually 223) on empty apt and pip caches" "logs: $base/*.log, $dir/*.log"
      # pigz is optional: oci.py compresses with it when present, twice as fast
      if ! command -v debootstrap >/dev/null || ! command -v pigz >/dev/null; then
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap pigz; } >/dev/null 2>&1 \
          || die "could not install debootstrap and pigz with apt-get; install them and run again"
      fi
      make_base "$base"
      fresh_base=1
    fi
    if [ -n "$RELEASE" ]; then
      # 5 min on an empty pip cache (netifaces compiled), 2 with its wheels kept: measured at 81ceda8, under load
      phase_line image "building the nova $RELEASE images ($IMAGE_TAG) on today's Debian base" \
        "$(usually 300) on an empty pip cache" "logs: $dir/*.log"
    elif [ "$fresh_base" = 0 ]; then
      phase_line image "building the OpenStack image's Python packages and start-up on its Debian base" \
        "$(usually 90)" "logs: $dir/*.log"
    fi
    make_rootfs "$base" "$dir" "${RELEASE:+releases/$RELEASE}"
    write_tarball "$dir"
    touch "$dir/.done"
    prune "$base" "$dir"
  fi
  printf '%s\n' "$dir/image.tar"
}

# containerd's socket: the local cluster keeps it under its own directory.
containerd_sock() {
  local s=${CONTAINERD_SOCK:-$ENV_DIR/kube/containerd/containerd.sock}
  [ -S "$s" ] || die "no containerd socket at $s (is the cluster up? or set CONTAINERD_SOCK)"
  printf '%s\n' "$s"
}

import_cmd() {
  local tar sock bin
  tar=$(build)
  sock=$(containerd_sock)
  bin=${TOOLCHAIN_BIN:-$("$here/toolchain.sh" bindir)}
  [ -x "$bin/ctr" ] || die "no ctr in $bin: run 'make toolchain'"
  # lib.sh's import_image skips the import when every name is there already.
  import_image "$bin/ctr" "$sock" "$tar"
}

selftest() {
  local dir scratch rc=0
  build >/dev/null
  dir=$(image_dir)
  scratch=$(mktemp -d "$IMAGES_CACHE/selftest.XXXXXX")
  in_root_overlay "$dir/rootfs" "$scratch" /bin/bash /mnt/selftest.sh ${RELEASE:+releases/$RELEASE} || rc=$?
  rm -rf "$scratch"
  return "$rc"
}

# The tarballs of the older releases whose build for the current inputs is
# done; an older build of a release (other inputs) is not one.
built_releases() {
  local dir release
  for dir in "$IMAGES_SRC"/releases/*/; do
    release=$(basename "$dir")
    [ -f "$dir/release.env" ] || continue
    (
      use_release "$release"
      dir=$(image_dir)
      if [ -f "$dir/.done" ] && [ -f "$dir/image.tar" ]; then printf '%s\n' "$dir/image.tar"; fi
    )
  done
}

main() {
  local usage="usage: $PROG build|import|selftest [RELEASE] | releases"
  case "${1:-} $#" in
    "releases 1" | "build 1" | "import 1" | "selftest 1" | "build 2" | "import 2" | "selftest 2") ;;
    *) die "$usage" ;;
  esac
  require_root
  mkdir -p "$IMAGES_CACHE"
  if [ "$1" = releases ]; then built_releases; return 0; fi
  if [ $# -eq 2 ]; then use_release "$2"; fi
  # A release's build takes a lock of its own: today's image (the environment's)
  # is never kept waiting by it.
  take_lock "$IMAGES_CACHE/.lock${RELEASE:+-nova-$RELEASE}"
  case "$1" in
    build) build ;;
    import) import_cmd ;;
    selftest) selftest ;;
  esac
}

# Sourced (the unit tests), it only defines the functions.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then main "$@"; fi
