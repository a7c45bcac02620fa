#!/usr/bin/env bash
# The option catalogs of components/settings/catalogs/, one per nova release,
# each written by tools/nova_catalog.py inside a venv that holds that release
# of nova and the libraries of its release (not the project's venv).
#   catalog.sh [RELEASE...]      (re)write nova-RELEASE.json; no RELEASE: every shipped one
#   catalog.sh pin RELEASE DATE  write the pins of RELEASE's libraries: what PyPI
#                                resolved for it from uploads before DATE (its GA day)
# Pins: the images' constraints when they pin nova==RELEASE (the release built
# here), else those of RELEASE's own images (devenv/images/releases/RELEASE),
# else devenv/catalog-constraints/nova-RELEASE.txt. A venv per release and pins
# is kept under $CACHE/catalog/ (first run: about 2 minutes).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck source=devenv/lib.sh
. "$here/lib.sh"
CATALOGS=$root/components/settings/catalogs
PINS_DIR=$here/catalog-constraints
IMAGE_PINS=$here/images/constraints.txt
WORK=$CACHE/catalog
# pip that knows --uploaded-prior-to; the same as the project's venv
PIP_VERSION=26.3

valid_release() { [[ $1 =~ ^[0-9]+(\.[0-9A-Za-z]+)*$ ]] || die "'$1' is not a nova version like 34.0.0"; }

pins_for() { # release -> the constraints file to install it with
  if grep -qx "nova==$1" "$IMAGE_PINS"; then
    printf '%s\n' "$IMAGE_PINS"
  elif [ -f "$here/images/releases/$1/constraints.txt" ]; then
    printf '%s\n' "$here/images/releases/$1/constraints.txt"
  elif [ -f "$PINS_DIR/nova-$1.txt" ]; then
    printf '%s\n' "$PINS_DIR/nova-$1.txt"
  else
    die "no pins for nova $1: write them with \`devenv/catalog.sh pin $1 <YYYY-MM-DD of its series' GA>\`"
  fi
}

new_venv() { # dir
  rm -rf "$1"
  python3 -m venv "$1"
  "$1/bin/pip" install -q --disable-pip-version-check "pip==$PIP_VERSION"
}

release_venv() { # release pins -> prints the venv's directory
  local key venv
  key=$(sha256sum <"$2" | cut -c1-12)
  venv=$WORK/venv-$1-$key
  if [ ! -f "$venv/.done" ]; then
    note "installing nova $1 with $(basename "$2") into $venv" >&2
    new_venv "$venv" >&2
    # osprofiler is one of nova's config namespaces but only an extra of nova
    "$venv/bin/pip" install -q --disable-pip-version-check -c "$2" "nova==$1" osprofiler >&2
    touch "$venv/.done"
  fi
  printf '%s\n' "$venv"
}

generate() { # release
  local pins venv out
  valid_release "$1"
  pins=$(pins_for "$1")
  venv=$(release_venv "$1" "$pins")
  out=$CATALOGS/nova-$1.json
  "$venv/bin/python" "$root/tools/nova_catalog.py" "$1" "$out.tmp"
  mv "$out.tmp" "$out"
}

pin() { # release date
  local venv=$WORK/pin-$1 out=$PINS_DIR/nova-$1.txt
  valid_release "$1"
  [[ $2 =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]] || die "'$2' is not a date like 2023-03-22"
  new_venv "$venv"
  # nova itself is newer than DATE for a point release: fetched first, then
  # installed from the file, so that DATE only limits its libraries
  rm -rf "$venv/wheel"
  "$venv/bin/pip" download -q --disable-pip-version-check --no-deps -d "$venv/wheel" "nova==$1"
  "$venv/bin/pip" install -q --disable-pip-version-check --uploaded-prior-to "${2}T00:00:00Z" \
    "$venv"/wheel/nova-*.whl osprofiler
  mkdir -p "$PINS_DIR"
  {
    printf '# nova %s with the libraries PyPI had before %s, written by\n' "$1" "$2"
    printf '#   devenv/catalog.sh pin %s %s\n' "$1" "$2"
    printf '# devenv/catalog.sh installs nova %s from these pins to write its catalog.\n' "$1"
    # the wheel installed from a file freezes as `nova @ file://...`
    "$venv/bin/pip" freeze --disable-pip-version-check --exclude pip \
      | sed "s|^nova @ .*|nova==$1|" | LC_ALL=C sort -f
  } >"$out"
  rm -rf "$venv"  # one-off: the pins are what is kept
  note "wrote $out"
}

mkdir -p "$WORK"
if [ "${1:-}" = pin ]; then
  [ $# -eq 3 ] || die "usage: catalog.sh pin RELEASE YYYY-MM-DD"
  pin "$2" "$3"
  exit 0
fi
releases=("$@")
if [ ${#releases[@]} -eq 0 ]; then
  for file in "$CATALOGS"/nova-*.json; do
    name=$(basename "$file" .json)
    releases+=("${name#nova-}")
  done
fi
[ ${#releases[@]} -gt 0 ] || die "no catalogs in $CATALOGS: name a release, e.g. catalog.sh 34.0.0"
for release in "${releases[@]}"; do generate "$release"; done
