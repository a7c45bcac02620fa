#!/usr/bin/env bash
# Runs inside a copy of the base root: Python packages, kolla's start-up,
# service users and directories, the CentOS-style httpd layout, clean-up.
# /mnt holds devenv/images (read-only); the argument is the directory of the
# pins under it: `.` for today's image, releases/<nova release> for an older
# nova's (nova alone: the neighbours' services are today's image's).
set -euo pipefail
# set_configs.py comes from this kolla release (the one requirements-dev.txt pins).
KOLLA_VERSION=23.0.0
SRC=/mnt
PYTHON_SITE=/usr/local/lib/python3.11/dist-packages

# --- Python packages -------------------------------------------------------
# Every pinned package is kept as a wheel in the shared cache: a rebuild
# installs offline, and only a changed pin goes to PyPI.
WHEELS=/var/cache/pip/wheelhouse
PIP_OPTS=(--break-system-packages --root-user-action=ignore --no-warn-script-location)
PINS_DIR=$SRC/${1:-.}
PINS=(-c "$PINS_DIR/constraints.txt" -r "$PINS_DIR/requirements.txt")
# Debian packages present only while wheels are built: the compiler and headers
# for a C extension that has no wheel for Python 3.11 on PyPI at a release's pin.
BUILD_PACKAGES=$PINS_DIR/build-packages.txt
pip_offline() { pip install -q --no-index --find-links "$WHEELS" "${PIP_OPTS[@]}" "${PINS[@]}"; }
python_packages() {
  mkdir -p "$WHEELS"
  # pip resolves everything before it installs anything: a missing wheel
  # fails the first attempt with nothing changed.
  if ! pip_offline 2>/dev/null; then
    build_packages install
    pip wheel -q --wheel-dir "$WHEELS" --find-links "$WHEELS" "${PINS[@]}"
    build_packages purge
    pip_offline
  fi
  pip check
  [ -d "$PYTHON_SITE/nova" ] || { echo "nova is not in $PYTHON_SITE" >&2; exit 1; }
}

build_packages() { # install|purge
  [ -f "$BUILD_PACKAGES" ] || return 0
  local -a packages
  mapfile -t packages < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$BUILD_PACKAGES")
  if [ "$1" = install ]; then
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${packages[@]}"
  else
    apt-get purge -y -q --autoremove "${packages[@]}"
    rm -rf /var/lib/apt/lists/*
  fi
}

# kolla's config loader, from the kolla release on PyPI.
kolla_start_scripts() {
  local whl
  whl=$(find "$WHEELS" -name "kolla-$KOLLA_VERSION-*.whl" | head -n 1)
  if [ -z "$whl" ]; then
    pip download -q --no-deps --dest "$WHEELS" "kolla==$KOLLA_VERSION"
    whl=$(find "$WHEELS" -name "kolla-$KOLLA_VERSION-*.whl" | head -n 1)
  fi
  python3 - "$whl" <<'EOF'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as whl, whl.open("kolla/docker/base/set_configs.py") as src, \
        open("/usr/local/bin/kolla_set_configs", "wb") as dst:
    shutil.copyfileobj(src, dst)
EOF
  install -m 0755 "$SRC/files/kolla_start" /usr/local/bin/kolla_start
  chmod 0755 /usr/local/bin/kolla_set_configs
  install -d -m 0755 /var/lib/kolla/config_files
  install -d -m 2775 -g kolla /var/log/kolla
  install -m 0440 "$SRC/files/sudoers-kolla" /etc/sudoers.d/kolla
  visudo -c -q
}

# --- users -----------------------------------------------------------------
# Give NAME (created by a Debian package) kolla's fixed ids, and move every
# file it owned along.
renumber() { # name uid gid
  local name=$1 uid=$2 gid=$3 old_uid old_gid
  old_uid=$(id -u "$name"); old_gid=$(getent group "$name" | cut -d: -f3)
  groupmod -g "$gid" "$name"
  usermod -u "$uid" -g "$gid" "$name"
  own_files -uid "$old_uid" -exec chown -h "$uid" {} +
  own_files -gid "$old_gid" -exec chgrp -h "$gid" {} +
}
# find over the root's own files (not the mounts of the build).
own_files() { # find-test...
  find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /mnt -o -path /var/cache/apt/archives \
    -o -path /var/cache/pip \) -prune -o "$@"
}

# A kolla service user: fixed uid/gid, member of kolla, home /var/lib/NAME.
kolla_user() { # name uid [home]
  local name=$1 id=$2 home=${3:-/var/lib/$1}
  if id -u "$name" >/dev/null 2>&1; then
    renumber "$name" "$id" "$id"
  else
    groupadd --gid "$id" "$name"
    useradd -l -M --shell /usr/sbin/nologin --uid "$id" --gid "$id" "$name"
  fi
  usermod --append --groups kolla --home "$home" "$name"
  install -d -o "$id" -g "$id" "$home"
}

users() {
  # kolla/common/users.py
  groupadd --gid 42400 kolla
  useradd -l -M --shell /usr/sbin/nologin --uid 42400 --gid 42400 kolla
  groupadd --gid 42427 qemu
  useradd -l -M --shell /usr/sbin/nologin --uid 42427 --gid 42427 qemu
  groupadd --gid 42473 libvirt
  kolla_user glance 42415
  kolla_user keystone 42425
  kolla_user mysql 42434
  kolla_user neutron 42435
  kolla_user nova 42436
  kolla_user rabbitmq 42439
  kolla_user haproxy 42454 /var/lib/haproxy
  kolla_user memcached 42457 /run/memcache
  kolla_user placement 42482
  usermod --append --groups qemu,libvirt nova
  # The CentOS httpd package's user.
  groupadd --gid 48 apache
  useradd -l -M --system --shell /usr/sbin/nologin --uid 48 --gid 48 --home-dir /usr/share/httpd apache
}

# --- service files and directories -----------------------------------------
openstack_dirs() {
  local svc
  for svc in nova keystone placement neutron glance; do
    install -d -o "$svc" -g "$svc" -m 0755 "/etc/$svc" "/var/log/$svc" "/var/lib/$svc"
  done
  install -d -o nova -g nova -m 0755 /etc/nova/nova.conf.d /var/lib/nova/instances
  # nova's packaged data files (paste pipeline, rootwrap), where nova looks.
  cp -r /usr/local/etc/nova/. /etc/nova/
  cp /usr/local/etc/pycadf/nova_api_audit_map.conf /etc/nova/
  sed -i 's|^exec_dirs=.*|exec_dirs=/sbin,/usr/sbin,/bin,/usr/bin,/usr/local/sbin,/usr/local/bin|' /etc/nova/rootwrap.conf
  chown -R nova:nova /etc/nova
  install -m 0440 "$SRC/files/sudoers-nova" /etc/sudoers.d/nova
  visudo -c -q
  # neutron's packaged files, rootwrap's owned by root: its filters where the
  # agent's rootwrap.conf looks (filters_path, as RDO packages them).
  if installed neutron; then
    install -m 0644 /usr/local/etc/neutron/api-paste.ini /usr/local/etc/neutron/rootwrap.conf /etc/neutron/
    install -d -m 0755 /usr/share/neutron/rootwrap
    install -m 0644 /usr/local/etc/neutron/rootwrap.d/*.filters /usr/share/neutron/rootwrap/
  fi
  # glance-api's paste pipeline, beside the glance-api.conf the pod brings.
  if installed glance; then
    install -o glance -g glance -m 0644 /usr/local/etc/glance/glance-api-paste.ini /etc/glance/
  fi
}

# True when the Python distribution NAME is in the image (an older nova's has nova alone).
installed() { python3 -c 'import sys; from importlib.metadata import distribution; distribution(sys.argv[1])' "$1" 2>/dev/null; }

# Upstream's images have the commands in /usr/bin: link every console script.
link_commands() {
  python3 - <<'EOF' | while read -r cmd; do [ -e "/usr/bin/$cmd" ] || ln -s "/usr/local/bin/$cmd" "/usr/bin/$cmd"; done
from importlib.metadata import PackageNotFoundError, distribution
for dist in ("nova", "keystone", "openstack-placement", "python-openstackclient", "neutron", "glance"):
    try:
        entry_points = distribution(dist).entry_points
    except PackageNotFoundError:  # an older nova's image has nova alone
        continue
    for ep in entry_points:
        if ep.group == "console_scripts":
            print(ep.name)
EOF
  # WSGI script files under the names the RDO packages give them: nova's own
  # where its release still makes them (pbr's, before nova 33), else the project's.
  local api
  for api in nova-api nova-metadata; do
    if [ -x "/usr/local/bin/$api-wsgi" ]; then
      ln -sfn "/usr/local/bin/$api-wsgi" "/usr/bin/$api-wsgi"
    else
      install -m 0755 "$SRC/files/wsgi-$api" "/usr/bin/$api-wsgi"
    fi
  done
  if installed keystone; then install -m 0755 "$SRC/files/wsgi-keystone" /usr/bin/keystone-wsgi-public; fi
  if installed openstack-placement; then install -m 0755 "$SRC/files/wsgi-placement" /usr/bin/placement-api; fi
}

neighbour_dirs() {
  install -d -o mysql -g mysql -m 0755 /run/mysqld /var/log/mysql
  # The image carries no database: the pod initialises its own data directory.
  find /var/lib/mysql -mindepth 1 -delete
  install -d -o rabbitmq -g rabbitmq -m 0755 /var/log/rabbitmq
  # Never ship an Erlang cookie: rabbitmq makes one on first start.
  rm -f /var/lib/rabbitmq/.erlang.cookie
  # Nor an OVN database: each ovsdb-server pod creates its own.
  rm -f /var/lib/ovn/*.db /etc/ovn/*.db
}

# --- httpd as on CentOS: ServerRoot /etc/httpd -----------------------------
# A LoadModule line, or a note when Debian's apache2 has the module built in.
load_module() { # name
  if [ -f "/usr/lib/apache2/modules/mod_$1.so" ]; then
    printf 'LoadModule %s_module modules/mod_%s.so\n' "$1" "$1"
  elif apache2 -l | grep -qx "  mod_$1.c"; then
    printf '# %s_module is built into apache2\n' "$1"
  else
    echo "apache2 has no module $1" >&2; exit 1
  fi
}
modules_conf() { # file module...
  local file=$1 m; shift
  { echo "# Generated at image build time for Debian's apache2."
    for m in "$@"; do load_module "$m"; done; } >"/etc/httpd/conf.modules.d/$file"
}

httpd_layout() {
  install -d -m 0755 /etc/httpd /etc/httpd/conf /etc/httpd/conf.d /etc/httpd/conf.modules.d
  install -d -m 0700 /var/log/httpd
  install -d -m 0710 -g apache /run/httpd
  install -d -m 0700 -o apache -g apache /var/lib/httpd
  install -d -m 0755 /usr/share/httpd
  ln -s /usr/lib/apache2/modules /etc/httpd/modules
  ln -s /var/log/httpd /etc/httpd/logs
  ln -s /run/httpd /etc/httpd/run
  ln -s /var/lib/httpd /etc/httpd/state
  modules_conf 00-base.conf alias authn_core authz_core authz_host deflate dir env filter headers \
    log_config logio mime remoteip rewrite setenvif socache_shmcb status unixd version
  modules_conf 00-mpm.conf mpm_event
  modules_conf 00-ssl.conf ssl
  modules_conf 10-wsgi-python3.conf wsgi
  install -m 0644 "$SRC/files/httpd.conf" /etc/httpd/conf/httpd.conf
  # `Include conf.d/*.conf` fails when nothing matches (CentOS ships files there).
  echo '# Placeholder: keeps "Include conf.d/*.conf" valid when no service file is mounted.' \
    >/etc/httpd/conf.d/00-placeholder.conf
  install -m 0755 "$SRC/files/httpd" /usr/sbin/httpd
  # Debian's own layout stays, unused; its default site would only confuse.
  rm -f /etc/apache2/sites-enabled/*
}

# --- clean-up ----------------------------------------------------------------
cleanup() {
  # The packages' own test suites (nothing imports them at run time), but
  # glance_store's: its store entry points name a module there.
  find "$PYTHON_SITE" -type d -name tests -prune -not -path "$PYTHON_SITE/glance_store/tests" -exec rm -rf {} +
  find /usr/share/doc -mindepth 1 -not -name copyright -not -type d -delete
  find /usr/share/doc -mindepth 1 -type d -empty -delete
  rm -rf /usr/share/man/* /usr/share/info/* /usr/share/lintian /var/lib/apt/lists/*
  find /usr/share/locale -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
  rm -rf /root/.cache /tmp/* /var/tmp/* /var/cache/debconf/*-old /var/log/apt/* /var/log/*.log \
    /var/cache/apt/*.bin
  : >/etc/machine-id
  # The runtime mounts its own; these are for a plain chroot (debootstrap
  # copied the build host's name).
  echo localhost >/etc/hostname
  chmod 0644 /etc/hostname
  printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >/etc/hosts
}

for step in python_packages users kolla_start_scripts openstack_dirs link_commands \
  neighbour_dirs httpd_layout cleanup; do
  SECONDS=0
  "$step"
  echo "setup: $step took ${SECONDS}s"
done
