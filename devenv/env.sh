#!/usr/bin/env bash
# Prints the export lines that point plain `pulumi`, `kubectl` and `ctr` at the
# local environment: eval "$(make -s env)".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${OPENSTACK_NOVA_CACHE:-$HOME/.cache/openstack-nova}
ENV_DIR=${OPENSTACK_NOVA_ENV:-$CACHE/env}
bin=$("$root/devenv/toolchain.sh" bindir)
cat <<EOV
export OPENSTACK_NOVA_CACHE='$CACHE'
export OPENSTACK_NOVA_ENV='$ENV_DIR'
export PATH='$bin:$root/.venv/bin:'"\$PATH"
export VIRTUAL_ENV='$root/.venv'
export KUBECONFIG='$ENV_DIR/kube/kubeconfig'
export CONTAINERD_ADDRESS='$ENV_DIR/kube/containerd/containerd.sock'
export CONTAINERD_NAMESPACE=k8s.io
export PULUMI_HOME='$CACHE/pulumi-home'
export PULUMI_BACKEND_URL='file://$ENV_DIR/state'
export PULUMI_CONFIG_PASSPHRASE_FILE='$ENV_DIR/passphrase'
export PULUMI_SKIP_UPDATE_CHECK=true
export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
export OPENSTACK_NOVA_PULUMI_LOGS='${OPENSTACK_NOVA_PULUMI_LOGS:-off}'
export OPENSTACK_NOVA_ANSIBLE_LOG_DIR='$ENV_DIR/logs/ansible'
export PULUMI_PYTHON_CMD='$root/.venv/bin/python'
EOV
