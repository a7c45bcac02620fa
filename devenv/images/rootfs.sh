# shellcheck shell=bash
# Root filesystem steps of devenv/images.sh (sourced). Every command that
# touches the root runs in its own mount and PID namespaces: the mounts and
# any daemon a package script starts vanish with it, even after a crash.

# Debian suite and mirror of the image.
SUITE=bookworm
MIRROR=http://deb.debian.org/debian
# The image's PATH (also what the build's chroot commands see).
IMAGE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# What runs between unshare and chroot: mounts, then CMD in the root.
# shellcheck disable=SC2016  # expanded by the inner bash
ENTER_ROOT='
  r=$1 mode=$2 src=$3 apt=$4 pip=$5 scratch=$6 path=$7; shift 7
  hostname openstack-nova-image
  if [ "$mode" = test ]; then
    # The test sees the root through an overlay: the image stays as built.
    mkdir -p "$scratch/upper" "$scratch/work" "$scratch/merged"
    mount -t overlay overlay -o "lowerdir=$r,upperdir=$scratch/upper,workdir=$scratch/work" "$scratch/merged"
    r=$scratch/merged
    ip link set lo up
  fi
  mount -t proc proc "$r/proc"
  mount -t sysfs -o ro sysfs "$r/sys"
  mount --rbind /dev "$r/dev"
  mount --bind "$src" "$r/mnt"
  mount -o remount,bind,ro "$r/mnt"
  if [ "$mode" = build ]; then
    mount --bind "$apt" "$r/var/cache/apt/archives"
    mount --bind "$pip" "$r/var/cache/pip"
    # Downloads in the build trust what the host trusts (a TLS proxy, say);
    # the image keeps Debian'"'"'s own bundle.
    ca=/etc/ssl/certs/ca-certificates.crt
    if [ -f "$ca" ] && [ -f "$r$ca" ]; then mount --bind "$ca" "$r$ca"; fi
  fi
  exec chroot "$r" /usr/bin/env -i PATH="$path" HOME=/root LANG=C.UTF-8 TERM=dumb \
    PIP_CACHE_DIR=/var/cache/pip DEBIAN_FRONTEND=noninteractive "$@"
'

# Run CMD in ROOT with devenv/images read-only at /mnt and the shared apt and
# pip caches at their usual places (for the build).
in_root() { # root cmd...
  local root=$1; shift
  mkdir -p "$root/var/cache/pip"
  unshare --mount --propagation private --uts --pid --kill-child -- \
    /bin/bash -euo pipefail -c "$ENTER_ROOT" in_root \
    "$root" build "$IMAGES_SRC" "$APT_CACHE" "$PIP_CACHE" "" "$IMAGE_PATH" "$@"
}

# Run CMD on an overlay of ROOT (changes go to SCRATCH), with a network
# namespace of its own (loopback only): servers can listen on their usual ports.
in_root_overlay() { # root scratch cmd...
  local root=$1 scratch=$2; shift 2
  unshare --mount --propagation private --uts --pid --net --kill-child -- \
    /bin/bash -euo pipefail -c "$ENTER_ROOT" in_root \
    "$root" test "$IMAGES_SRC" "" "" "$scratch" "$IMAGE_PATH" "$@"
}

# debootstrap minbase plus the Debian packages: the part that changes least.
make_base() { # dir
  local dir=$1 root=$1/rootfs
  rm -rf "$dir"; mkdir -p "$dir" "$DEBOOTSTRAP_CACHE"
  # debootstrap mounts /proc and /sys in the target itself: keep them private.
  unshare --mount --propagation private -- \
    debootstrap --variant=minbase --cache-dir="$DEBOOTSTRAP_CACHE" "$SUITE" "$root" "$MIRROR" \
    >"$dir/debootstrap.log" 2>&1 || { tail -20 "$dir/debootstrap.log" >&2; die "debootstrap failed (log: $dir/debootstrap.log)"; }
  # debootstrap leaves its packages in the root (they stay in its cache).
  find "$root/var/cache/apt/archives" -name '*.deb' -delete
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  # Package scripts must not start services in the build.
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod 755 "$root/usr/sbin/policy-rc.d"
  in_root "$root" /bin/bash /mnt/base.sh >"$dir/base.log" 2>&1 \
    || { tail -20 "$dir/base.log" >&2; die "Debian packages failed (log: $dir/base.log)"; }
  touch "$dir/.done"
}

# The Python packages, users, directories and start-up scripts, on a copy of
# the base root; PINS is the directory of the pins under devenv/images (today's
# when empty).
make_rootfs() { # base-dir dir [pins]
  local base=$1 dir=$2 root=$2/rootfs pins=${3:-.}
  rm -rf "$root"; mkdir -p "$dir"
  cp -a --reflink=auto "$base/rootfs" "$root"
  in_root "$root" /bin/bash /mnt/setup.sh "$pins" >"$dir/setup.log" 2>&1 \
    || { tail -30 "$dir/setup.log" >&2; die "image setup failed (log: $dir/setup.log)"; }
  rmdir "$root/var/cache/pip"
  rm -f "$root/usr/sbin/policy-rc.d"
  : >"$root/etc/resolv.conf"
}
