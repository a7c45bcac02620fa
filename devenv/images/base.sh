#!/usr/bin/env bash
# Runs inside the fresh debootstrap root: the Debian packages of the image.
# /mnt holds devenv/images (read-only); /var/cache/apt/archives is a shared cache.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

cat >/etc/apt/sources.list <<'LIST'
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
LIST
# Keep downloaded packages (the archive directory is a cache shared by builds).
rm -f /etc/apt/apt.conf.d/docker-clean
echo 'Binary::apt::APT::Keep-Downloaded-Packages "true";' >/etc/apt/apt.conf.d/10keep-debs
# No documentation, man pages or translations in the image.
cat >/etc/dpkg/dpkg.cfg.d/10nodoc <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
CFG

mapfile -t packages < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' /mnt/packages.txt)
apt-get update -q
apt-get -y -q dist-upgrade
apt-get install -y -q --no-install-recommends "${packages[@]}"

# noVNC's web client (nova-novncproxy serves /usr/share/novnc), without the
# package's nodejs and numpy dependencies.
tmp=$(mktemp -d)
chown _apt "$tmp" # apt fetches as _apt
(cd "$tmp" && apt-get download -q novnc)
dpkg-deb -x "$tmp"/novnc_*.deb "$tmp/x"
cp -a "$tmp/x/usr/share/novnc" /usr/share/novnc
rm -rf "$tmp"

rm -rf /var/lib/apt/lists/* /var/log/apt/* /var/log/dpkg.log /var/cache/debconf/*-old
