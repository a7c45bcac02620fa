"""The host's boundary between the test nodes and the cluster's private networks.

A real data-plane node reaches the control plane only through the addresses it exposes
(LoadBalancer Services). Here the nodes' bridges are on the very host that runs the
cluster, whose routes and kube-proxy's rules would take a node's packet to any ClusterIP or
pod. So the host drops what comes in from a node's bridge and was addressed, before
kube-proxy's DNAT (conntrack's original destination), to the service or the pod network:
- in the forward hook (a pod behind a ClusterIP, or a pod IP itself), and
- in the input hook (a ClusterIP whose endpoint is the host itself, e.g. the API server's).
A LoadBalancer address is DNATed to the same pods, but its original destination is the
LoadBalancer address, so it passes. Replies to connections a pod opens to a node (the noVNC
proxy to a node's VNC server) pass too: their connection's original destination is the
node. A packet conntrack cannot place (invalid, untracked) is judged by its own
destination.

The table is the boundary's own (nothing else writes to it): replaced whole at every
`devenv/nodes.sh start`, deleted by `stop`.
"""

from __future__ import annotations

from .network import Layout

TABLE_FAMILY = "inet"
TABLE = "openstack-nova-boundary"


def ruleset(layout: Layout) -> str:
    """An `nft -f` script that replaces the boundary table atomically (one transaction)."""
    bridges = ", ".join(f'"{n.bridge}"' for n in layout.dataplane_networks)
    private = ", ".join(layout.private_cidrs)
    chains = []
    for hook in ("forward", "input"):
        chains.append(
            f"\tchain {hook} {{\n"
            f"\t\ttype filter hook {hook} priority filter; policy accept;\n"
            f"\t\tiifname {{ {bridges} }} ct original ip daddr {{ {private} }} counter drop\n"
            f"\t\tiifname {{ {bridges} }} ct state invalid,untracked ip daddr {{ {private} }} counter drop\n"
            f"\t}}\n")
    return (
        "# the test nodes reach no ClusterIP and no pod (devenv/dataplane/boundary.py)\n"
        + delete_script()
        + f"table {TABLE_FAMILY} {TABLE} {{\n" + "".join(chains) + "}\n")


def delete_script() -> str:
    """An `nft -f` script that deletes the table if it is there."""
    return f"add table {TABLE_FAMILY} {TABLE}\ndelete table {TABLE_FAMILY} {TABLE}\n"
