#!/usr/bin/env bash
# Creates the project venv in the cache (keyed by the requirement and pin files) and
# links it as .venv, so every clone with the same pins shares one venv.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${OPENSTACK_NOVA_CACHE:-$HOME/.cache/openstack-nova}
# nova and its libraries at the images' versions (devenv/images/constraints.txt),
# so that what the venv says about nova's options is what the images run
pins=$root/devenv/images/constraints.txt
key=$(cat "$root/requirements.txt" "$root/requirements-dev.txt" "$pins" | sha256sum | cut -c1-12)
venv=$CACHE/venv-$key
if [ ! -f "$venv/.done" ]; then
  echo "venv: installing Python packages into $venv (first run only, usually 1 min)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q -r "$root/requirements-dev.txt" -c "$pins"
  touch "$venv/.done"
fi
if [ "$(readlink "$root/.venv" 2>/dev/null)" != "$venv" ]; then
  rm -rf "$root/.venv"; ln -s "$venv" "$root/.venv"
fi
