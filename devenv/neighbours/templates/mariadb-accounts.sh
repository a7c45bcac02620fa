#!/bin/bash
# The accounts Job of a MariaDB instance: wait until the server answers (a new
# Service can take a moment to resolve), then apply accounts.sql once.
set -euo pipefail
dir=$(dirname "$0")
for _ in $(seq 90); do
  mariadb-admin --defaults-extra-file="$dir/client.cnf" ping >/dev/null 2>&1 && break
  sleep 2
done
mariadb --defaults-extra-file="$dir/client.cnf" <"$dir/accounts.sql"
echo "databases and accounts are in place"
