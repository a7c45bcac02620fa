#!/usr/bin/env bash
# Runs inside an overlay of the built root (own network namespace, loopback
# only): the image's commands, kolla's start-up, nova's libvirt driver against
# libvirt's test driver, httpd serving the four WSGI APIs, the neighbour
# servers (OVN's databases among them), the neutron OVN metadata agent
# registering with a southbound database, and neutron's API with ML2/OVN
# writing the northbound database, each started, asked, and stopped.
# `selftest.sh releases/<release>`: an older nova's image (nova alone): its
# commands, kolla, the libvirt driver, its databases, and its compute and
# metadata APIs under httpd from the WSGI entry points its release.env names.
set -euo pipefail
T=/tmp/selftest
mkdir -p "$T"
# Kubernetes writes /etc/hosts in a pod; MariaDB's installer needs localhost.
printf '127.0.0.1\tlocalhost\n' >/etc/hosts

pass() { printf 'selftest: ok: %s\n' "$*"; }
fail() { printf 'selftest: FAILED: %s\n' "$*" >&2; exit 1; }
# Poll CMD until it succeeds, for at most SECONDS.
wait_for() { # seconds cmd...
  local n=$1 i; shift
  for ((i = 0; i < n * 5; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  return 1
}

commands() {
  pass "nova-manage --version: $(nova-manage --version 2>/dev/null)"
  keystone-manage --help >/dev/null 2>&1 && pass "keystone-manage --help"
  placement-manage --help >/dev/null 2>&1 && pass "placement-manage --help"
  pass "openstack --version: $(openstack --version 2>&1)"
  pass "neutron-ovn-metadata-agent --version: $(neutron-ovn-metadata-agent --version 2>&1 | tail -n 1)"
  glance-manage --help >/dev/null 2>&1 && pass "glance-manage --help"
  pass "$(ovsdb-server --version | head -n 1), OVN schemas: nb $(ovsdb-tool schema-version /usr/share/ovn/ovn-nb.ovsschema), sb $(ovsdb-tool schema-version /usr/share/ovn/ovn-sb.ovsschema)"
  pass "$(/usr/sbin/haproxy -v | head -n 1)"
  pass "apache2 $(apache2 -v | sed -n 's/^Server version: //p'), python $(python3 -V)"
}

# An older release's image: nova's commands, each loading its service's modules.
nova_commands() {
  local cmd
  pass "nova-manage --version: $(nova-manage --version 2>/dev/null)"
  for cmd in nova-api nova-scheduler nova-conductor nova-novncproxy nova-compute; do
    "$cmd" --version >"$T/$cmd.version" 2>&1 || { tail -5 "$T/$cmd.version"; fail "$cmd --version"; }
  done
  pass "nova-api, -scheduler, -conductor, -novncproxy, -compute --version: $(tail -n 1 "$T/nova-compute.version")"
  pass "apache2 $(apache2 -v | sed -n 's/^Server version: //p'), python $(python3 -V)"
}

kolla() {
  echo hello >"$T/src.txt"
  cat >/var/lib/kolla/config_files/config.json <<EOF
{"command": "cat /etc/nova/copied.txt",
 "config_files": [{"source": "$T/src.txt", "dest": "/etc/nova/copied.txt", "owner": "nova", "perm": "0600"}]}
EOF
  [ "$(KOLLA_CONFIG_STRATEGY=COPY_ALWAYS kolla_start 2>/dev/null | tail -n 1)" = hello ] || fail "kolla_start as root"
  [ "$(stat -c %U:%a /etc/nova/copied.txt)" = nova:600 ] || fail "kolla_set_configs owner/mode"
  rm /etc/nova/copied.txt
  # A service user goes through sudo -E.
  [ "$(runuser -u nova -- env KOLLA_CONFIG_STRATEGY=COPY_ALWAYS kolla_start 2>/dev/null | tail -n 1)" = hello ] \
    || fail "kolla_start as nova (sudo)"
  pass "kolla_start as root and as nova: config copied, /run_command run"
  rm -f /var/lib/kolla/config_files/config.json /run_command /etc/nova/copied.txt
}

# What nova's libvirt driver loads and runs for a server with a local qcow2
# root disk: the libvirt binding (here against libvirt's built-in test driver,
# no daemon), the driver's own start-up, and qemu-img as the qcow2 backend runs it.
libvirt_driver() {
  python3 - >"$T/libvirt.log" 2>&1 <<'PY' || { tail -20 "$T/libvirt.log"; fail "nova's libvirt driver"; }
import libvirt
import libvirtmod_qemu  # noqa: F401  (nova's guest module wants it)
import nova.conf
from nova.virt.libvirt import driver

CONF = nova.conf.CONF
CONF([], project="nova", default_config_files=[])
CONF.set_override("connection_uri", "test:///default", "libvirt")
drv = driver.LibvirtDriver(virtapi=None)
conn = drv._host.get_connection()
print("nova's LibvirtDriver on test:///default: libvirt", conn.getLibVersion(),
      "python binding", libvirt.getVersion(), "domains", [d.name() for d in conn.listAllDomains()])
PY
  pass "$(tail -n 1 "$T/libvirt.log")"
  # the driver's privileged file operations, as nova-compute starts its privsep
  # daemon: the nova user, sudo, nova-rootwrap, privsep-helper
  runuser -u nova -- python3 - >"$T/privsep.log" 2>&1 <<'PY' || { tail -20 "$T/privsep.log"; fail "nova's privsep daemon"; }
import shlex

import nova.conf
import nova.privsep.path
from nova import utils
from oslo_privsep import priv_context

nova.conf.CONF([], project="nova", default_config_files=[])
priv_context.init(root_helper=shlex.split(utils.get_root_helper()))
data, _ = nova.privsep.path.last_bytes("/etc/shadow", 64)  # root's alone
assert data
print(f"nova's privsep daemon ({utils.get_root_helper()} privsep-helper) read /etc/shadow as root")
PY
  pass "$(tail -n 1 "$T/privsep.log")"
  qemu-img create -q -f raw "$T/base.raw" 4M
  qemu-img create -q -f qcow2 -o "backing_file=$T/base.raw,backing_fmt=raw" "$T/disk.qcow2" 1G
  python3 -m oslo_concurrency.prlimit --as=1073741824 --cpu=30 -- env LC_ALL=C LANG=C \
    qemu-img info --output=json "$T/disk.qcow2" >"$T/disk.json" || fail "qemu-img info under prlimit"
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["virtual-size"] == 1 << 30 and d["backing-filename-format"] == "raw"' \
    "$T/disk.json" || fail "qcow2 over a raw base: $(cat "$T/disk.json")"
  pass "qemu-img: a 1 GiB qcow2 disk over a raw base, read back under prlimit as nova does"
}

# nova's sqlite databases, made by its own migrations, for its WSGI applications.
nova_databases() {
  printf '[api]\nauth_strategy = noauth2\n[api_database]\nconnection = sqlite:///%s/nova_api.db\n[database]\nconnection = sqlite:///%s/nova.db\n' \
    "$T" "$T" >/etc/nova/nova.conf
  { nova-manage api_db sync && nova-manage db sync; } >"$T/nova-sync.log" 2>&1 \
    || { tail -20 "$T/nova-sync.log"; fail "nova-manage api_db sync, db sync"; }
  pass "nova-manage api_db sync, db sync: api $(nova-manage api_db version 2>/dev/null | tail -n 1), main $(nova-manage db version 2>/dev/null | tail -n 1)"
  chown nova "$T"/nova*.db
  chmod 1777 "$T" # sqlite writes its journal beside the database
}

# sqlite databases, so that each API's WSGI module can build its application.
api_databases() {
  nova_databases
  printf '[database]\nconnection = sqlite:///%s/keystone.db\n' "$T" >/etc/keystone/keystone.conf
  printf '[placement_database]\nconnection = sqlite:///%s/placement.db\n' "$T" >/etc/placement/placement.conf
  install -d -o glance -g glance "$T/images"
  printf '[database]\nconnection = sqlite:///%s/glance.db\n[glance_store]\nfilesystem_store_datadir = %s/images\n' \
    "$T" "$T" >/etc/glance/glance-api.conf
  { keystone-manage db_sync \
      && keystone-manage fernet_setup --keystone-user keystone --keystone-group keystone \
      && keystone-manage credential_setup --keystone-user keystone --keystone-group keystone \
      && placement-manage db sync && glance-manage --config-file /etc/glance/glance-api.conf db_sync; } \
    >"$T/sync.log" 2>&1 || { tail -20 "$T/sync.log"; fail "database sync"; }
  chown keystone "$T"/keystone.db; chown placement "$T"/placement.db
  chown glance "$T"/glance.db
  python3 -c 'import nova.wsgi.osapi_compute, nova.wsgi.metadata' >"$T/import.log" 2>&1 \
    || { tail -5 "$T/import.log"; fail "import nova.wsgi.osapi_compute, nova.wsgi.metadata"; }
  pass "python3 -c 'import nova.wsgi.osapi_compute, nova.wsgi.metadata'"
}

# httpd.conf's main part, its errors to LOG.
httpd_main() { # log
  cat <<EOF
ServerRoot "/etc/httpd"
ServerName localhost
PidFile run/httpd.pid
User apache
Group apache
TypesConfig /etc/mime.types
Include conf.modules.d/*.conf
Include conf.d/*.conf
ErrorLog $1
EOF
}

# A vhost with one mod_wsgi daemon process running SCRIPT as USER.
vhost() { # port name user script
  cat <<EOF
Listen $1
<VirtualHost *:$1>
  <IfVersion >= 2.4>
    ErrorLogFormat "%M"
  </IfVersion>
  WSGIDaemonProcess $2 processes=1 threads=1 user=$3 group=$3 display-name=$2
  WSGIProcessGroup $2
  WSGIApplicationGroup %{GLOBAL}
  WSGIPassAuthorization On
  WSGIScriptAlias / $4
  <Directory $(dirname "$4")>
    Require all granted
  </Directory>
</VirtualHost>
EOF
}

# nova's WSGI file for mod_wsgi, as the program renders it
# (components/templates/nova-wsgi.py.j2): MODULE's `application`, or what
# MODULE:FACTORY returns.
wsgi_file() { # module[:factory]
  if [[ $1 == *:* ]]; then
    printf 'from %s import %s\n\napplication = %s()\n' "${1%%:*}" "${1#*:}" "${1#*:}"
  else
    printf 'from %s import application  # noqa: F401\n' "$1"
  fi
}

# httpd serving each API of SPECS ("port name user script answer": what
# the API's root answers, a pattern), each asked once.
httpd_apis() { # spec...
  cat >"$T/hello.wsgi" <<'EOF'
import os
def application(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"hello from uid %d\n" % os.getuid()]
EOF
  local spec port name user script answer body pid
  { httpd_main "$T/httpd-error.log"
    vhost 8080 hello nova "$T/hello.wsgi"
    for spec in "$@"; do
      read -r port name user script _ <<<"$spec"
      vhost "$port" "$name" "$user" "$script"
    done
  } >/etc/httpd/conf/httpd.conf
  [ "$(httpd -t 2>&1)" = "Syntax OK" ] || fail "httpd -t: $(httpd -t 2>&1)"
  pass "httpd -t: Syntax OK"
  httpd -DFOREGROUND >"$T/httpd.out" 2>&1 &
  pid=$!
  wait_for 30 curl -sf http://127.0.0.1:8080/ || fail "httpd did not answer on 8080"
  pass "httpd -DFOREGROUND, trivial WSGI app: $(curl -s http://127.0.0.1:8080/)"
  for spec in "$@"; do
    read -r port name _ _ answer <<<"$spec"
    body=$(curl -s --max-time 60 "http://127.0.0.1:$port/") || fail "no answer on $port"
    grep -q -- "$answer" <<<"$body" || { tail -20 "$T/httpd-error.log"; fail "$name on $port: $body"; }
    pass "httpd :$port ($name) /: $(tr '\n' ' ' <<<"$body" | cut -c1-110)"
  done
  httpd -k graceful-stop
  wait "$pid" || true
  pass "httpd stopped"
}

# Today's image: nova's API and the neighbours' under httpd.
all_apis() {
  printf 'from glance.wsgi.api import application  # noqa: F401\n' >"$T/glance-api.wsgi"
  httpd_apis "8774 nova-api nova /usr/bin/nova-api-wsgi \"version" \
    "5000 keystone keystone /usr/bin/keystone-wsgi-public \"version" \
    "8778 placement-api placement /usr/bin/placement-api \"version" \
    "9292 glance-api glance $T/glance-api.wsgi \"version"
}

# An older release's image: its compute and metadata APIs from the WSGI entry
# points its release.env names (the program's for that release).
release_apis() { # pins-dir
  local NOVA_API_WSGI="" NOVA_METADATA_WSGI=""
  # shellcheck disable=SC1090  # plain assignments
  . "/mnt/$1/release.env"
  if [ -z "$NOVA_API_WSGI" ] || [ -z "$NOVA_METADATA_WSGI" ]; then fail "$1/release.env names no WSGI entry points"; fi
  wsgi_file "$NOVA_API_WSGI" >"$T/nova-api.wsgi"
  wsgi_file "$NOVA_METADATA_WSGI" >"$T/nova-metadata.wsgi"
  pass "WSGI entry points of $1: api $NOVA_API_WSGI, metadata $NOVA_METADATA_WSGI"
  # the metadata API's root lists its versions, the newest as `latest`
  httpd_apis "8774 nova-api nova $T/nova-api.wsgi \"version" "8775 nova-metadata nova $T/nova-metadata.wsgi latest"
}

mariadb() {
  mariadb-install-db --user=mysql --datadir=/var/lib/mysql --skip-test-db >"$T/mariadb-install.log" 2>&1 \
    || { tail -5 "$T/mariadb-install.log"; fail "mariadb-install-db"; }
  mysqld --user=mysql --datadir=/var/lib/mysql --bind-address=127.0.0.1 >"$T/mysqld.log" 2>&1 &
  local pid=$!
  wait_for 30 mysqladmin ping || { tail -5 "$T/mysqld.log"; fail "mysqld did not start"; }
  [ "$(mysql -N -e 'select 1')" = 1 ] || fail "mysql -e 'select 1'"
  pass "mysqld: $(mysql -N -e 'select version()'), mysql -e 'select 1' answered"
  mysqladmin shutdown
  wait "$pid"
  pass "mysqld stopped"
}

rabbitmq() {
  export HOME=/var/lib/rabbitmq RABBITMQ_NODENAME=rabbit@localhost RABBITMQ_LOGS=-
  runuser -u rabbitmq -- /usr/lib/rabbitmq/bin/rabbitmq-server >"$T/rabbitmq.log" 2>&1 &
  local pid=$!
  wait_for 120 rabbitmqctl -q await_startup || { tail -5 "$T/rabbitmq.log"; fail "rabbitmq did not start"; }
  rabbitmqctl status >"$T/rabbitmq-status" 2>&1 || fail "rabbitmqctl status"
  pass "rabbitmq-server: $(grep -m1 'RabbitMQ version' "$T/rabbitmq-status")"
  # Passwords on stdin, not in argv.
  printf '%s\n' probe-password | rabbitmqctl -q add_user probe >/dev/null || fail "add_user from stdin"
  rabbitmqctl -q authenticate_user probe probe-password >/dev/null || fail "authenticate_user"
  pass "rabbitmqctl add_user with the password on stdin"
  rabbitmqctl -q stop >/dev/null
  wait "$pid" || true
  pass "rabbitmq-server stopped"
  unset HOME RABBITMQ_NODENAME RABBITMQ_LOGS
}

memcached_server() {
  memcached -u memcache -l 127.0.0.1 -p 11211 >"$T/memcached.log" 2>&1 &
  local pid=$!
  wait_for 10 python3 -c 'import socket; socket.create_connection(("127.0.0.1", 11211))' || fail "memcached did not start"
  python3 - <<'EOF' || fail "memcached set/get"
from pymemcache.client.base import Client
c = Client(("127.0.0.1", 11211))
c.set("selftest", b"ok")
assert c.get("selftest") == b"ok"
print("selftest: ok: memcached", c.stats()[b"version"].decode(), "set/get")
EOF
  kill "$pid"; wait "$pid" || true
  pass "memcached stopped"
}

# OVN's northbound and southbound databases, created and served as the
# neighbours' pods do (devenv/neighbours/templates/ovsdb-server-start.sh),
# and asked as the integration tests ask them.
ovn_databases() {
  local db port
  install -d /run/ovn
  for db in nb:6641 sb:6642; do
    port=${db#*:} db=${db%:*}
    ovsdb-tool create "$T/ovn${db}_db.db" "/usr/share/ovn/ovn-$db.ovsschema"
    ovsdb-server "$T/ovn${db}_db.db" --remote="ptcp:$port:127.0.0.1" --remote="punix:/run/ovn/ovn${db}_db.sock" \
      --unixctl="/run/ovn/ovn${db}_db.ctl" --pidfile="/run/ovn/ovn${db}_db.pid" --detach --no-chdir \
      --log-file="$T/ovsdb-$db.log" -vconsole:off
    wait_for 10 ovsdb-client list-dbs "tcp:127.0.0.1:$port" || fail "ovsdb-server ($db) did not answer"
    pass "ovsdb-server ($db) on $port serves $(ovsdb-client list-dbs "tcp:127.0.0.1:$port" | tr '\n' ' ')"
  done
}

# The node's Open vSwitch database as the agent reads it: the tables it
# registers, with the columns it asks for (the image has no ovs-vswitchd).
OVS_SCHEMA='{"name": "Open_vSwitch", "version": "8.3.1", "tables": {
  "Open_vSwitch": {"isRoot": true, "maxRows": 1, "columns": {
    "bridges": {"type": {"key": {"type": "uuid", "refTable": "Bridge"}, "min": 0, "max": "unlimited"}},
    "external_ids": {"type": {"key": "string", "value": "string", "min": 0, "max": "unlimited"}},
    "other_config": {"type": {"key": "string", "value": "string", "min": 0, "max": "unlimited"}}}},
  "Bridge": {"isRoot": true, "columns": {"name": {"type": "string"},
    "ports": {"type": {"key": {"type": "uuid", "refTable": "Port"}, "min": 0, "max": "unlimited"}},
    "external_ids": {"type": {"key": "string", "value": "string", "min": 0, "max": "unlimited"}}}},
  "Port": {"columns": {"name": {"type": "string"},
    "interfaces": {"type": {"key": {"type": "uuid", "refTable": "Interface"}, "min": 1, "max": "unlimited"}},
    "external_ids": {"type": {"key": "string", "value": "string", "min": 0, "max": "unlimited"}}}},
  "Interface": {"columns": {"name": {"type": "string"}, "type": {"type": "string"},
    "external_ids": {"type": {"key": "string", "value": "string", "min": 0, "max": "unlimited"}}}}}}'

# The agent started as the edpm_neutron_metadata role's container starts it:
# kolla_start with the role's kolla config (rootwrap's config copied into
# place, then `neutron-ovn-metadata-agent`, which finds /etc/neutron.conf.d
# itself), as root. It is up once it has registered in the southbound
# database, which takes both OVSDBs and its privsep daemon (through rootwrap).
# It finds the southbound database by name, as the stacks name it (python's
# ovs resolves it through unbound, here from /etc/hosts).
metadata_agent() {
  local chassis=selftest-chassis sb=tcp:127.0.0.1:6642 pid ids="" _
  local sb_name=ovsdbserver-sb.selftest.svc.cluster.local
  printf '127.0.0.1\t%s\n' "$sb_name" >>/etc/hosts
  printf '%s\n' "$OVS_SCHEMA" >"$T/vswitch.ovsschema"
  ovsdb-tool create "$T/conf.db" "$T/vswitch.ovsschema"
  ovsdb-server "$T/conf.db" --remote=ptcp:6640:127.0.0.1 --unixctl="$T/ovs.ctl" --pidfile="$T/ovs.pid" \
    --detach --no-chdir --log-file="$T/ovsdb-ovs.log" -vconsole:off
  wait_for 10 ovsdb-client list-dbs tcp:127.0.0.1:6640 || fail "the Open_vSwitch ovsdb-server did not answer"
  ovsdb-client transact tcp:127.0.0.1:6640 '["Open_vSwitch", {"op": "insert", "table": "Open_vSwitch",
    "row": {"external_ids": ["map", [["system-id", "'"$chassis"'"], ["ovn-bridge", "br-int"]]]}}]' >/dev/null
  # what ovn-controller registers for its node
  ovn-sbctl --db="$sb" chassis-add "$chassis" geneve 127.0.0.1
  ovn-sbctl --db="$sb" create Chassis_Private name="$chassis" \
    chassis="$(ovn-sbctl --db="$sb" --bare --columns=_uuid find Chassis name="$chassis")" >/dev/null
  install -d -m 0755 /etc/neutron.conf.d
  cat >/etc/neutron.conf.d/01-neutron-ovn-metadata-agent.conf <<'CONF'
[DEFAULT]
state_path = /var/lib/neutron
metadata_workers = 1
[agent]
root_helper = sudo neutron-rootwrap /etc/neutron/rootwrap.conf
[ovs]
ovsdb_connection = tcp:127.0.0.1:6640
[ovn]
ovn_sb_connection = tcp:ovsdbserver-sb.selftest.svc.cluster.local:6642
CONF
  printf '[DEFAULT]\nfilters_path = /usr/share/neutron/rootwrap\nexec_dirs = /sbin,/usr/sbin,/bin,/usr/bin,/usr/local/bin,/usr/local/sbin\nuse_syslog = False\n' \
    >/etc/neutron.conf.d/01-rootwrap.conf
  cat >/var/lib/kolla/config_files/config.json <<'JSON'
{"command": "neutron-ovn-metadata-agent",
 "config_files": [{"source": "/etc/neutron.conf.d/01-rootwrap.conf", "dest": "/etc/neutron/rootwrap.conf",
                   "owner": "root:root", "perm": "0600"}],
 "permissions": [{"path": "/var/lib/neutron", "owner": "neutron:neutron", "recurse": true}]}
JSON
  setsid env KOLLA_CONFIG_STRATEGY=COPY_ALWAYS kolla_start >"$T/metadata-agent.log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do
    ids=$(ovn-sbctl --db="$sb" get Chassis_Private "$chassis" external_ids 2>/dev/null || true)
    grep -q 'neutron:ovn-metadata-id' <<<"$ids" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  grep -q 'neutron:ovn-metadata-id' <<<"$ids" || { tail -20 "$T/metadata-agent.log"; fail "the metadata agent did not register"; }
  [ -S /var/lib/neutron/metadata_proxy ] || fail "no metadata proxy socket at /var/lib/neutron/metadata_proxy"
  pass "neutron-ovn-metadata-agent (kolla_start, as root, southbound database tcp:$sb_name:6642) registered: Chassis_Private external_ids $ids"
  kill -- "-$pid"; wait "$pid" || true
  pass "neutron-ovn-metadata-agent stopped"
}

# neutron's API as the neighbour runs it (devenv/neighbours/templates/neutron.conf.j2,
# ml2_conf.ini.j2): ML2/OVN, no RPC workers and no message bus, its schema in
# MariaDB by neutron-db-manage, under httpd + mod_wsgi (neutron.wsgi.api), with
# ovn-northd between OVN's two databases (it makes the NB_Global row neutron
# reads). Without keystone here (noauth). A network and a port made through the
# API must appear in the northbound database, which the API alone writes (no
# maintenance worker), and the network in the southbound one, through ovn-northd.
neutron_api() {
  local nb=tcp:127.0.0.1:6641 sb=tcp:127.0.0.1:6642 body net port pid mysqld_pid
  printf '127.0.0.1\tovsdbserver-nb.selftest.svc.cluster.local\n' >>/etc/hosts
  # by name, as the neighbour's (OVN's clients resolve with unbound)
  ovn-northd --ovnnb-db=tcp:ovsdbserver-nb.selftest.svc.cluster.local:6641 \
    --ovnsb-db=tcp:ovsdbserver-sb.selftest.svc.cluster.local:6642 \
    --unixctl=/run/ovn/ovn-northd.ctl --pidfile=/run/ovn/ovn-northd.pid \
    --detach --no-chdir --log-file="$T/ovn-northd.log" -vconsole:off
  wait_for 10 sh -c 'ovn-appctl -t /run/ovn/ovn-northd.ctl status | grep -qx "Status: active"' \
    || fail "ovn-northd is not active: $(ovn-appctl -t /run/ovn/ovn-northd.ctl status 2>&1)"
  wait_for 10 ovn-nbctl --db="$nb" get NB_Global . name || fail "ovn-northd made no NB_Global row"
  pass "ovn-northd $(ovn-appctl -t /run/ovn/ovn-northd.ctl status): NB_Global made"
  local q='-H X-Project-Id:selftest -H X-Roles:admin -H Content-Type:application/json'
  mysqld --user=mysql --datadir=/var/lib/mysql --bind-address=127.0.0.1 >"$T/mysqld-neutron.log" 2>&1 &
  mysqld_pid=$!
  wait_for 30 mysqladmin ping || { tail -5 "$T/mysqld-neutron.log"; fail "mysqld did not start again"; }
  mysql -e "CREATE DATABASE neutron CHARACTER SET utf8; CREATE USER 'neutron'@'localhost' IDENTIFIED BY 'selftest';
            GRANT ALL PRIVILEGES ON neutron.* TO 'neutron'@'localhost';"
  install -d -m 0755 /etc/neutron/plugins/ml2
  cat >/etc/neutron/neutron.conf <<'CONF'
[DEFAULT]
core_plugin = ml2
service_plugins = ovn-router
rpc_workers = 0
dhcp_agent_notification = false
auth_strategy = noauth
[database]
connection = mysql+pymysql://neutron:selftest@localhost/neutron?charset=utf8
[oslo_concurrency]
lock_path = /var/lib/neutron/tmp
CONF
  cat >/etc/neutron/plugins/ml2/ml2_conf.ini <<'CONF'
[ml2]
mechanism_drivers = ovn
type_drivers = geneve,flat
project_network_types = geneve
extension_drivers = port_security
[ml2_type_geneve]
vni_ranges = 1:65536
max_header_size = 38
[ovn]
ovn_nb_connection = tcp:ovsdbserver-nb.selftest.svc.cluster.local:6641
ovn_sb_connection = tcp:ovsdbserver-sb.selftest.svc.cluster.local:6642
ovn_metadata_enabled = true
CONF
  chown neutron /etc/neutron/neutron.conf /etc/neutron/plugins/ml2/ml2_conf.ini
  chmod 0600 /etc/neutron/neutron.conf /etc/neutron/plugins/ml2/ml2_conf.ini
  neutron-db-manage --config-file /etc/neutron/neutron.conf --config-file /etc/neutron/plugins/ml2/ml2_conf.ini \
    upgrade heads >"$T/neutron-db-manage.log" 2>&1 || { tail -20 "$T/neutron-db-manage.log"; fail "neutron-db-manage upgrade heads"; }
  pass "neutron-db-manage upgrade heads: $(mysql -N -e 'select version_num from neutron.alembic_version' | sort | tr '\n' ' ')"
  { httpd_main "$T/httpd-neutron.log"
    vhost 9696 neutron-api neutron "$T/neutron-api.wsgi"
  } >/etc/httpd/conf/httpd.conf
  printf 'from neutron.wsgi.api import application  # noqa: F401\n' >"$T/neutron-api.wsgi"
  httpd -DFOREGROUND >"$T/httpd-neutron.out" 2>&1 &
  pid=$!
  wait_for 120 curl -sf http://127.0.0.1:9696/ || { tail -20 "$T/httpd-neutron.log"; fail "neutron's API did not answer on 9696"; }
  body=$(curl -s http://127.0.0.1:9696/)
  grep -q '"v2.0"' <<<"$body" || fail "neutron's API /: $body"
  pass "httpd :9696 / (neutron.wsgi.api): $(cut -c1-110 <<<"$body")"
  # shellcheck disable=SC2086  # $q is several curl words
  body=$(curl -s $q http://127.0.0.1:9696/v2.0/networks)
  [ "$body" = '{"networks":[]}' ] || { tail -20 "$T/httpd-neutron.log"; fail "GET /v2.0/networks: $body"; }
  pass "GET /v2.0/networks: $body"
  # shellcheck disable=SC2086
  net=$(curl -s $q -d '{"network": {"name": "selftest", "project_id": "selftest"}}' http://127.0.0.1:9696/v2.0/networks \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["network"]["id"])') \
    || { tail -20 "$T/httpd-neutron.log"; fail "POST /v2.0/networks"; }
  # shellcheck disable=SC2086
  port=$(curl -s $q -d '{"port": {"network_id": "'"$net"'", "project_id": "selftest"}}' http://127.0.0.1:9696/v2.0/ports \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["port"]["id"])') \
    || { tail -20 "$T/httpd-neutron.log"; fail "POST /v2.0/ports"; }
  ovn-nbctl --db="$nb" --bare --columns=name list Logical_Switch | grep -qx "neutron-$net" \
    || fail "network $net is not a logical switch in the northbound database"
  ovn-nbctl --db="$nb" --bare --columns=name list Logical_Switch_Port | grep -qx "$port" \
    || fail "port $port is not a logical switch port in the northbound database"
  ovn-nbctl --db="$nb" --bare --columns=name list Port_Group | grep -qx neutron_pg_drop \
    || fail "no neutron_pg_drop port group in the northbound database"
  wait_for 10 sh -c "ovn-sbctl --db=$sb --bare --columns=external_ids list Datapath_Binding | grep -q 'name=neutron-$net'" \
    || fail "ovn-northd did not put network $net in the southbound database"
  pass "network $net and port $port made through neutron's API are in OVN's northbound database (switch neutron-$net, its port, neutron_pg_drop) and, through ovn-northd, the network in the southbound one"
  if grep -E ' (ERROR|CRITICAL) |Traceback' "$T/httpd-neutron.log" >"$T/neutron-errors.log"; then
    head -20 "$T/neutron-errors.log"; fail "neutron's API logged errors"
  fi
  httpd -k graceful-stop
  wait "$pid" || true
  mysqladmin shutdown
  wait "$mysqld_pid"
  ovn-appctl -t /run/ovn/ovn-northd.ctl exit
  pass "neutron's API, ovn-northd and mysqld stopped"
}

if [ -n "${1:-}" ]; then
  nova_commands
  kolla
  libvirt_driver
  nova_databases
  release_apis "$1"
else
  commands
  kolla
  libvirt_driver
  api_databases
  all_apis
  mariadb
  rabbitmq
  memcached_server
  ovn_databases
  metadata_agent
  neutron_api
fi
echo "selftest: all passed"
