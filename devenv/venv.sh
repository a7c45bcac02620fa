#!/usr/bin/env bash
# Creates the project venv in the cache (keyed by the requirement files) and
# links it as .venv, so every clone with the same pins shares one venv.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${OPENSTACK_NOVA_CACHE:-$HOME/.cache/openstack-nova}
key=$(cat "$root/requirements.txt" "$root/requirements-dev.txt" | sha256sum | cut -c1-12)
venv=$CACHE/venv-$key
if [ ! -f "$venv/.done" ]; then
  echo "venv: installing Python packages into $venv (first run only, usually 1 min)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q -r "$root/requirements-dev.txt"
  touch "$venv/.done"
fi
# nova's option definitions, which settings checks every customServiceConfig
# against; generated again when its generator changes.
catalog_key=$(sha256sum "$root/components/settings/catalog.py" | cut -c1-12)
if [ ! -s "$venv/nova-options.json" ] || [ "$(cat "$venv/nova-options.key" 2>/dev/null)" != "$catalog_key" ]; then
  (cd "$root" && "$venv/bin/python" -m components.settings.catalog "$venv/nova-options.json.tmp" >"$venv/nova-options.log" 2>&1 \
    && mv "$venv/nova-options.json.tmp" "$venv/nova-options.json" && echo "$catalog_key" >"$venv/nova-options.key")
fi
if [ "$(readlink "$root/.venv" 2>/dev/null)" != "$venv" ]; then
  rm -rf "$root/.venv"; ln -s "$venv" "$root/.venv"
fi
