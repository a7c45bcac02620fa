#!/bin/sh
# `pulumi-resource-pulumi-python`, the plugin the CLI starts for a stack's
# dynamic resources: the SDK's server with OPENSTACK_NOVA_MAX_RUNS threads
# (dynamic_provider.py, beside this file; devenv/toolchain.sh installs both
# beside `pulumi`). The interpreter is the one the SDK's own script picks: the
# project's virtualenv (Pulumi.yaml's runtime option, which the CLI passes as
# PULUMI_RUNTIME_VIRTUALENV, relative to the project; .venv for the uv
# toolchain), else PULUMI_PYTHON_CMD, else python3. (Poetry's is not looked up.)
here=$(dirname "$(readlink -f "$0")")
# the CLI that started the plugin: the plugin ends when it is gone (dynamic_provider.py)
OPENSTACK_NOVA_PROVIDER_PARENT=$PPID
export OPENSTACK_NOVA_PROVIDER_PARENT
venv=${PULUMI_RUNTIME_VIRTUALENV:-}
if [ -z "$venv" ] && [ "${PULUMI_RUNTIME_TOOLCHAIN:-}" = uv ]; then
  venv=.venv
fi
if [ -n "$venv" ]; then
  venv=${venv%/}
  case $venv in
    /*) ;;
    *) venv=$PWD/$venv ;;
  esac
  if [ ! -f "$venv/bin/python" ]; then
    echo "The 'virtualenv' option in Pulumi.yaml is set to \"$venv\", which has no bin/python." >&2
    exit 1
  fi
  PATH=$venv/bin:$PATH
  export PATH
  unset PYTHONHOME
  exec "$venv/bin/python" -u "$here/dynamic_provider.py" "$@"
fi
exec "${PULUMI_PYTHON_CMD:-python3}" -u "$here/dynamic_provider.py" "$@"
