"""ceph-client: the Ceph client files (ceph.conf, keyrings) that extraMounts
mount at /etc/ceph, laid out in /var/lib/openstack/config/ceph (keyrings 0600
root, ceph.conf 0644), which nova_compute mounts and copies to /etc/ceph.

A node set that lists no services gets it, in its place, once extraMounts give
it such files. libvirt keeps their keys as its secrets, and a change of them
restarts nova-compute (see libvirt.py and nova.py).
"""

from __future__ import annotations

from components.edpm.context import NodeSetContext
from components.edpm.service import EdpmService, RunInputs
from components.settings import NOVA, MountPoint, Node, RunsBefore, ServiceSpec

NAME = "ceph-client"


def _node_inputs(context: NodeSetContext, _node: Node) -> RunInputs:
    secret, public = context.mounted.of(NAME)
    return RunInputs(files=secret, public_files=public)


def _unlisted(where: str, default_list: tuple[str, ...]) -> str:
    return (f"{where} gives this node set Ceph client files: list {NAME} before {NOVA}, "
            f"e.g. [{', '.join(default_list)}]")


SPEC = ServiceSpec(
    name=NAME, playbook="ceph-client.yml", stop_playbook="ceph-client-stop.yml", order=20, default=False,
    runs_before=(RunsBefore(NOVA, "nova-compute copies the Ceph client files when it starts"),),
    mounts=MountPoint(path="/etc/ceph", what="the Ceph client files", unlisted=_unlisted),
)
SERVICE = EdpmService(SPEC, node_inputs=_node_inputs)
