#!/usr/bin/env bash
# The suite: unit tests, then integration tests against the local environment
# (started by `make environment`). No test collected is a failure.
# --long: instead, the integration tests marked `long` (faults, restarts,
# rotation, TLS and Ceph roll-outs), which take longer than CI allows.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
eval "$("$here/env.sh")"
cd "$root" || exit 1
suites=(unit integration)
marks=(-m "not long")
if [ "${1:-}" = --long ]; then
  suites=(integration)
  marks=(-m long)
fi
status=0
for suite in "${suites[@]}"; do
  echo "== $suite tests"
  if [ "$suite" = integration ]; then
    python -m pytest -q -p no:cacheprovider --durations=25 "${marks[@]}" "tests/$suite"
  else
    python -m pytest -q -p no:cacheprovider "tests/$suite"
  fi
  rc=$?
  [ "$rc" -eq 5 ] && echo "run-tests: no $suite tests were collected" >&2
  [ "$rc" -ne 0 ] && status=1
done
exit "$status"
