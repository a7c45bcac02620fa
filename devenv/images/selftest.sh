#!/usr/bin/env bash
# Runs inside an overlay of the built root (own network namespace, loopback
# only): the image's commands, kolla's start-up, httpd serving the three WSGI
# APIs, and the neighbour servers, each started, asked, and stopped.
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

# sqlite databases, so that each API's WSGI module can build its application.
api_databases() {
  printf '[api]\nauth_strategy = noauth2\n[api_database]\nconnection = sqlite:///%s/nova_api.db\n[database]\nconnection = sqlite:///%s/nova.db\n' \
    "$T" "$T" >/etc/nova/nova.conf
  printf '[database]\nconnection = sqlite:///%s/keystone.db\n' "$T" >/etc/keystone/keystone.conf
  printf '[placement_database]\nconnection = sqlite:///%s/placement.db\n' "$T" >/etc/placement/placement.conf
  { nova-manage api_db sync && nova-manage db sync && keystone-manage db_sync \
      && keystone-manage fernet_setup --keystone-user keystone --keystone-group keystone \
      && keystone-manage credential_setup --keystone-user keystone --keystone-group keystone \
      && placement-manage db sync; } >"$T/sync.log" 2>&1 || { tail -20 "$T/sync.log"; fail "database sync"; }
  chown nova "$T"/nova*.db; chown keystone "$T"/keystone.db; chown placement "$T"/placement.db
  chmod 1777 "$T" # sqlite writes its journal beside the database
  python3 -c 'import nova.wsgi.osapi_compute, nova.wsgi.metadata' >"$T/import.log" 2>&1 \
    || { tail -5 "$T/import.log"; fail "import nova.wsgi.osapi_compute, nova.wsgi.metadata"; }
  pass "python3 -c 'import nova.wsgi.osapi_compute, nova.wsgi.metadata'"
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

httpd_apis() {
  cat >"$T/hello.wsgi" <<'EOF'
import os
def application(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"hello from uid %d\n" % os.getuid()]
EOF
  { cat <<'EOF'
ServerRoot "/etc/httpd"
ServerName localhost
PidFile run/httpd.pid
User apache
Group apache
TypesConfig /etc/mime.types
Include conf.modules.d/*.conf
Include conf.d/*.conf
ErrorLog /tmp/selftest/httpd-error.log
EOF
    vhost 8080 hello nova "$T/hello.wsgi"
    vhost 8774 nova-api nova /usr/bin/nova-api-wsgi
    vhost 5000 keystone keystone /usr/bin/keystone-wsgi-public
    vhost 8778 placement-api placement /usr/bin/placement-api
  } >/etc/httpd/conf/httpd.conf
  [ "$(httpd -t 2>&1)" = "Syntax OK" ] || fail "httpd -t: $(httpd -t 2>&1)"
  pass "httpd -t: Syntax OK"
  httpd -DFOREGROUND >"$T/httpd.out" 2>&1 &
  local pid=$! port body
  wait_for 30 curl -sf http://127.0.0.1:8080/ || fail "httpd did not answer on 8080"
  pass "httpd -DFOREGROUND, trivial WSGI app: $(curl -s http://127.0.0.1:8080/)"
  for port in 8774 5000 8778; do
    body=$(curl -s --max-time 60 "http://127.0.0.1:$port/") || fail "no answer on $port"
    grep -q '"version' <<<"$body" || { tail -20 "$T/httpd-error.log"; fail "port $port: $body"; }
    pass "httpd :$port /: $(cut -c1-110 <<<"$body")"
  done
  httpd -k graceful-stop
  wait "$pid" || true
  pass "httpd stopped"
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

commands
kolla
api_databases
httpd_apis
mariadb
rabbitmq
memcached_server
echo "selftest: all passed"
