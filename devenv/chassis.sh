#!/usr/bin/env bash
# Makes each running test node an OVN chassis of one stack's OVN: ovn-controller
# on the node's Open vSwitch (the userspace datapath: this kernel has no
# openvswitch module), connected to the southbound database the stack names
# (dataplane.ovn.sbConnection), with the node's address as its tunnel endpoint,
# and Open vSwitch's database listening on 127.0.0.1:6640 for the metadata agent.
# Upstream, edpm-ansible's OVN service does this; the program deploys no OVN.
#   chassis.sh STACK
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=devenv/lib.sh
. "$here/lib.sh"
stack=${1:-}
[ -n "$stack" ] || die "usage: $PROG STACK"
eval "$("$here/env.sh")"
cd "$root"
NODES_JSON=$ENV_DIR/nodes/nodes.json
[ -f "$NODES_JSON" ] || die "no EDPM nodes are running: run devenv/nodes.sh start"
sb=$(pulumi config get --path dataplane.ovn.sbConnection -s "$stack" 2>/dev/null) || {
  note "stack $stack names no OVN southbound database (dataplane.ovn.sbConnection): the nodes are no chassis of it"
  exit 0
}
[[ $sb =~ ^tcp:([^:]+):([0-9]+)$ ]] || die "dataplane.ovn.sbConnection '$sb' of stack $stack is not tcp:HOST:PORT"
host=${BASH_REMATCH[1]} port=${BASH_REMATCH[2]}

while read -r name ip; do
  # ovn-controller takes an address: the node resolves the Service name as any client would.
  # (ssh reads no stdin: the loop's list is on it)
  addr=$("$here/ssh.sh" "$name" "getent ahostsv4 $(shq "$host") | awk 'NR == 1 {print \$1}'" </dev/null)
  [ -n "$addr" ] || die "$name cannot resolve $host (dataplane.ovn.sbConnection of stack $stack)"
  "$here/ssh.sh" "$name" "ovs-vsctl set open_vswitch . \
    external_ids:ovn-remote=tcp:$addr:$port external_ids:ovn-encap-type=geneve \
    external_ids:ovn-encap-ip=$ip external_ids:system-id=$name external_ids:hostname=$name \
    external_ids:ovn-bridge-datapath-type=netdev" </dev/null
  # the metadata agent reaches Open vSwitch's database at [ovs] ovsdb_connection, tcp:127.0.0.1:6640
  "$here/ssh.sh" "$name" "ovs-vsctl set-manager ptcp:6640:127.0.0.1" </dev/null
done < <(python3 -c 'import json, sys
for name, node in sorted(json.load(open(sys.argv[1])).items()):
    print(name, node["ip"])' "$NODES_JSON")
note "the test nodes are chassis of $sb"
