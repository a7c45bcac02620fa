#!/bin/bash
# kolla's command in a MariaDB pod: create the system tables on an empty data
# directory, then serve (mariadbd drops to mysql; its init-file sets root's password).
set -euo pipefail
install -d -o mysql -g mysql -m 0755 /run/mysqld
if [ ! -d /var/lib/mysql/mysql ]; then
  echo "mariadb: empty data directory, creating the system tables"
  # --force: the grants use addresses, whatever the pod's name resolves to
  mariadb-install-db --user=mysql --datadir=/var/lib/mysql --skip-test-db --force \
    --auth-root-authentication-method=socket
fi
exec mariadbd
