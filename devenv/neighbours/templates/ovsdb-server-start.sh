#!/bin/bash
# kolla's command in an OVN database pod: ovsdb-server-start.sh DB_FILE SCHEMA PORT.
# Creates the database from OVN's schema when the data directory has none (a
# new pod), converts one kept from an older schema (the northbound database
# lives on the host), then serves it on TCP for the nodes and on a local socket
# for the probe. Standalone, not a raft cluster: one pod is all the environment runs.
set -euo pipefail
db_file=$1 schema=$2 port=$3
data=/var/lib/ovn run=/run/ovn
name=${db_file%.db}
install -d -m 0750 "$data" "$run"
if [ ! -f "$data/$db_file" ]; then
  echo "ovsdb-server: creating $data/$db_file ($(ovsdb-tool schema-name "$schema") $(ovsdb-tool schema-version "$schema"))"
  ovsdb-tool create "$data/$db_file" "$schema"
elif [ "$(ovsdb-tool needs-conversion "$data/$db_file" "$schema")" = yes ]; then
  echo "ovsdb-server: converting $data/$db_file to $(ovsdb-tool schema-version "$schema")"
  ovsdb-tool convert "$data/$db_file" "$schema"
fi
exec ovsdb-server "$data/$db_file" \
  --remote="ptcp:$port:0.0.0.0" --remote="punix:$run/$name.sock" \
  --unixctl="$run/$name.ctl" --pidfile="$run/$name.pid" -vconsole:info -vfile:off
