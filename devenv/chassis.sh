#!/usr/bin/env bash
# Makes each running test node an OVN chassis of one stack's OVN: ovn-controller
# on the node's Open vSwitch (the userspace datapath: this kernel has no
# openvswitch module), connected to the southbound database the stack names
# (dataplane.ovn.sbConnection), with the node's address as its tunnel endpoint,
# and Open vSwitch's database listening on 127.0.0.1:6640 for the metadata agent.
# Upstream, edpm-ansible's OVN service does this; the program deploys no OVN.
# The node reaches the database as it reaches every other Service: its own
# resolver (the data plane's DNS) gives the name the LoadBalancer address on
# the internalapi network (devenv/neighbours exposes ovsdbserver-sb so).
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
  [ -n "$addr" ] || die "$name cannot resolve $host (dataplane.ovn.sbConnection of stack $stack): \
does the data plane's DNS serve it (its Service a LoadBalancer with an address)?"
  # The tunnel endpoint is the node's ctlplane address: upstream's tunnels run on the tenant
  # network, which the test nodes lack; they are the nodes' own addresses, not the cluster's.
  # The chassis is named after the node. ovs-ctl sets system-id from system-id.conf at every start
  # of Open vSwitch (a random one on the first), before ovn-controller starts: with the name there,
  # a node that boots again comes back as the same chassis.
  "$here/ssh.sh" "$name" "echo $name > /etc/openvswitch/system-id.conf && ovs-vsctl set open_vswitch . \
    external_ids:ovn-remote=tcp:$addr:$port external_ids:ovn-encap-type=geneve \
    external_ids:ovn-encap-ip=$ip external_ids:system-id=$name external_ids:hostname=$name \
    external_ids:ovn-bridge-datapath-type=netdev" </dev/null
  # A record of this node under another chassis name (it booted with a random system-id) holds the
  # node's tunnel address, which the database keeps unique: ovn-controller could never register the
  # name (it retries without end). Drop it, then start ovn-controller and the metadata agent again
  # (each reads system-id when it starts).
  stale=$("$here/ssh.sh" "$name" "ovn-sbctl --db=tcp:$addr:$port --timeout=30 --bare --columns=name \
    find Chassis hostname=$(shq "\"$name\"")" </dev/null | grep -vxF -e "$name" -e '' || true)
  if [ -n "$stale" ]; then
    for old in $stale; do
      "$here/ssh.sh" "$name" "ovn-sbctl --db=tcp:$addr:$port --timeout=30 chassis-del $(shq "$old")" </dev/null
    done
    "$here/ssh.sh" "$name" "systemctl restart ovn-controller.service && \
      systemctl try-restart edpm_ovn_metadata_agent.service" </dev/null
    note "$name: chassis $(echo "$stale" | tr '\n' ' ')replaced by $name"
  fi
  # the metadata agent reaches Open vSwitch's database at [ovs] ovsdb_connection, tcp:127.0.0.1:6640
  "$here/ssh.sh" "$name" "ovs-vsctl set-manager ptcp:6640:127.0.0.1" </dev/null
done < <(python3 -c 'import json, sys
for name, node in sorted(json.load(open(sys.argv[1])).items()):
    print(name, node["ip"])' "$NODES_JSON")
note "the test nodes are chassis of $sb"
