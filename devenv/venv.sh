#!/usr/bin/env bash
# Creates the project venv in the cache (keyed by the requirement and pin files) and
# links it as .venv, so every clone with the same pins shares one venv.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=devenv/lib.sh
. "$here/lib.sh"
PROG=venv
# nova and its libraries at the images' versions (devenv/images/constraints.txt),
# so that what the venv says about nova's options is what the images run
pins=$root/devenv/images/constraints.txt
key=$(cat "$root/requirements.txt" "$root/requirements-dev.txt" "$pins" | sha256sum | cut -c1-12)
venv=$CACHE/venv-$key
if [ ! -f "$venv/.done" ]; then
  log=$LOG_DIR/venv.log
  # 1 min 30 s from PyPI with an empty pip cache on the reference machine (README)
  phase venv "$log" "installing the project's Python packages from PyPI into $venv" "$(usually 90)"
  rm -rf "$venv"
  logged "$log" python3 -m venv "$venv"
  logged "$log" "$venv/bin/pip" install --progress-bar off --upgrade pip
  logged "$log" "$venv/bin/pip" install --progress-bar off -r "$root/requirements-dev.txt" -c "$pins"
  touch "$venv/.done"
fi
if [ "$(readlink "$root/.venv" 2>/dev/null)" != "$venv" ]; then
  rm -rf "$root/.venv"; ln -s "$venv" "$root/.venv"
fi
