#!/usr/bin/env bash
# Starts (or recovers) the local environment: the single-node Kubernetes and
# the EDPM test nodes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=devenv/lib.sh
. "$here/lib.sh"
require_root
# The passphrase of the example stacks in stacks/ (local environments only).
LOCAL_PASSPHRASE=openstack-nova-local
# Test nodes run their own sshd; their cloud-admin user escalates with sudo;
# the libvirt role keeps libvirt's SASL database with the SASL tools.
missing=()
[ -x /usr/sbin/sshd ] || missing+=(openssh-server)
[ -x /usr/bin/sudo ] || missing+=(sudo)
[ -x /usr/sbin/saslpasswd2 ] && [ -x /usr/sbin/sasldblistusers2 ] || missing+=(sasl2-bin)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "start: installing ${missing[*]} (for the test nodes)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >/dev/null 2>&1 \
    || die "could not install ${missing[*]} with apt-get; install them and run again"
fi
mkdir -p "$ENV_DIR/state"; chmod 700 "$ENV_DIR"
# A real environment brings its own PULUMI_CONFIG_PASSPHRASE(_FILE) or KMS provider.
if [ ! -s "$ENV_DIR/passphrase" ]; then
  (umask 077; printf '%s' "$LOCAL_PASSPHRASE" > "$ENV_DIR/passphrase")
fi
# The test nodes start nova-compute with kolla's own set_configs (no container
# engine): the dev stack's ansibleVars point the role at these.
root=$(cd "$here/.." && pwd)
mkdir -p "$ENV_DIR/kolla"
venv_python=$(readlink -f "$root/.venv")/bin/python
printf '#!/bin/sh\nexec "%s" "$@"\n' "$venv_python" >"$ENV_DIR/kolla/python"
# kolla's command of nova_compute, found next to the python by the role's supervisor
printf '#!/bin/sh\nexec "%s" "$@"\n' "$(dirname "$venv_python")/nova-compute" >"$ENV_DIR/kolla/nova-compute"
chmod 755 "$ENV_DIR/kolla/python" "$ENV_DIR/kolla/nova-compute"
ln -sfn "$("$venv_python" -c 'import kolla, os; print(os.path.join(os.path.dirname(kolla.__file__), "docker/base/set_configs.py"))')" \
  "$ENV_DIR/kolla/set_configs.py"
TOOLCHAIN_BIN=$("$here/toolchain.sh" bindir)
export TOOLCHAIN_BIN
"$here/cluster.sh" start
# The one OpenStack image every pod of the environment runs, built here and imported.
"$here/images.sh" import
"$here/nodes.sh" start
python3 "$here/clear-stale-locks.py" "$ENV_DIR/state"
