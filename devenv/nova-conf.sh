#!/usr/bin/env bash
# Prints what nova-compute on a test node loads for one option, and from where:
#   devenv/nova-conf.sh edpm-compute-0 libvirt.cpu_mode
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=devenv/lib.sh
. "$here/lib.sh"
[ $# -eq 2 ] || die "usage: nova-conf.sh NODE GROUP.OPTION (e.g. edpm-compute-0 libvirt.cpu_mode)"
# nova's own python in the running nova_compute container reads the script from stdin.
"$here/ssh.sh" "$1" "podman exec -i nova_compute python3 - '$2'" <"$here/../tools/nova_conf.py"
