#!/bin/bash
# The keystone bootstrap Job: the schema, then the admin user and project, the
# admin role, the region and the identity endpoints. Both steps converge, so the
# Job can run again. The admin password comes in OS_BOOTSTRAP_PASSWORD.
set -euo pipefail
conf=/var/lib/openstack/config/keystone.conf
keystone-manage --config-file "$conf" db_sync
keystone-manage --config-file "$conf" bootstrap \
  --bootstrap-username admin \
  --bootstrap-project-name admin \
  --bootstrap-role-name admin \
  --bootstrap-service-name keystone \
  --bootstrap-region-id "$KEYSTONE_REGION" \
  --bootstrap-public-url "$KEYSTONE_PUBLIC_URL" \
  --bootstrap-internal-url "$KEYSTONE_INTERNAL_URL"
echo "keystone: schema and bootstrap done (region $KEYSTONE_REGION)"
