#!/usr/bin/env bash
# The whole suite: unit tests, then integration tests against the local
# environment (started by `make environment`). No test collected is a failure.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
eval "$("$here/env.sh")"
cd "$root" || exit 1
status=0
for suite in unit integration; do
  echo "== $suite tests"
  python -m pytest -q -p no:cacheprovider "tests/$suite"
  rc=$?
  [ "$rc" -eq 5 ] && echo "run-tests: no $suite tests were collected" >&2
  [ "$rc" -ne 0 ] && status=1
done
exit "$status"
