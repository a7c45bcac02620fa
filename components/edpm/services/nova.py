"""nova: nova-compute on the node. Its files land in /var/lib/openstack/nova:
01-nova.conf from its cell's `nova-<cell>-compute-config` Secret,
02-nova-host-specific.conf, 25-/26-nova-extra*.conf from customServiceConfig
(secrets 0600), the migration keys, and what extraMounts mount at
/var/lib/openstack/configs/nova; kolla copies them into /etc/nova/nova.conf.d/.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi

from components.edpm.context import NodeSetContext
from components.edpm.service import EdpmService, MountPoint, RunInputs
from components.edpm.services import ceph_client
from components.render import HOST_SPECIFIC_CONF, config_hash, host_specific_conf, nova_extra_files
from components.render.mounts import nova_skips
from components.settings import NOVA, Node

NAME = NOVA  # named with the settings, which read its customServiceConfig

# edpm_nova's variable for the nova_compute container's image (upstream's inventory sets it).
COMPUTE_IMAGE_VAR = "edpm_nova_compute_image"
# the role's list of files it copies as secret ones (0600, never logged)
SECRET_FILES_VAR = "edpm_nova_secret_files"


def _cell_files(context: NodeSetContext, cell: str) -> pulumi.Output[dict[str, str]]:
    """The secret files every compute of `cell` gets: one Output per cell, not per node."""

    def make() -> pulumi.Output[dict[str, str]]:
        cp = context.stack.control_plane
        return pulumi.Output.secret(pulumi.Output.all(
            cp.compute_configs[cell], cp.migration_private_key, cp.migration_public_key,
        ).apply(lambda v: {**v[0], "ssh-privatekey": v[1], "ssh-publickey": v[2]}))

    return context.once((NAME, cell), make)


def _not_taken(mounted: Mapping[str, str], taken: set[str]) -> dict[str, str]:
    """`mounted`, or an error naming a file that would replace one of the program's own."""
    clash = sorted(set(mounted) & taken)
    if clash:
        raise pulumi.RunError(f"extraMounts give nova {', '.join(clash)}, which the program makes itself; "
                              "name the mounted files otherwise")
    return dict(mounted)


def _mounted(context: NodeSetContext) -> tuple[pulumi.Output[dict[str, str]], pulumi.Output[dict[str, str]]]:
    """(secret, public) files extraMounts give nova on the node set's nodes: one Output each per node set."""
    return context.once((NAME, "mounted"), lambda: context.mounted.of(NAME))


def _shared_files(context: NodeSetContext, cell: str, secret_extra: Mapping[str, str],
                  own_public: frozenset[str]) -> tuple[pulumi.Output[dict[str, str]], pulumi.Output[dict[str, str]]]:
    """(the secret files, the ConfigMaps' files) of a node of `cell` with `secret_extra` (its secret
    snippets) and public files named `own_public`: what differs from one node to the next is only
    the content of its public files, so nodes alike in these share these Outputs (one per cell for
    nodes without secret snippets)."""

    def make() -> tuple[pulumi.Output[dict[str, str]], pulumi.Output[dict[str, str]]]:
        mounted_secret, mounted_public = _mounted(context)
        own_files = _cell_files(context, cell)
        if secret_extra:
            own_files = own_files.apply(lambda f: {**f, **secret_extra})
        taken = own_files.apply(lambda f: set(f) | own_public)
        files: pulumi.Output[dict[str, str]] = pulumi.Output.secret(
            pulumi.Output.all(own_files, mounted_secret, taken).apply(lambda v: {**v[0], **_not_taken(v[1], v[2])}))
        public = pulumi.Output.all(mounted_public, pulumi.Output.unsecret(taken)).apply(
            lambda v: _not_taken(v[0], v[1]))
        return files, public

    return context.once((NAME, cell, tuple(sorted(secret_extra.items())), own_public), make)


def _node_inputs(context: NodeSetContext, node: Node) -> RunInputs:
    node_set = context.node_set
    secret_extra = nova_extra_files(node_set, node, secret=True)
    # Shown in preview line by line: the node's own files, and those of ConfigMaps.
    own_public = {
        HOST_SPECIFIC_CONF: host_specific_conf(node.ansible_host, node.host_name, tls=node_set.tls_enabled),
        **nova_extra_files(node_set, node),
    }
    files, mounted_public = _shared_files(context, node.cell, secret_extra, frozenset(own_public))
    public = mounted_public.apply(lambda m: {**own_public, **m})
    # the role copies these as it does nova's own secret files (0600, never logged): snippets that set
    # secret options, and a Secret's mounted files
    variables: dict[str, pulumi.Input[Any]] = dict(
        context.secret_file_vars(node, SECRET_FILES_VAR, list(secret_extra)))
    if any(m.secret for m in node_set.mounted_for(NAME)):
        mounted_secret, _ = _mounted(context)
        variables[SECRET_FILES_VAR] = pulumi.Output.unsecret(mounted_secret.apply(
            lambda m: context.secret_file_vars(node, SECRET_FILES_VAR, [*secret_extra, *m])[SECRET_FILES_VAR]))
    if ceph_client.NAME in node_set.services:
        # a change of the Ceph client files re-runs nova, which restarts nova-compute
        variables["edpm_nova_ceph_files_hash"] = _ceph_files_hash(context)
    # the stop playbook runs with the same host variables: its quadlet mode runs the image
    return RunInputs(files=files, public_files=public, variables=variables,
                     default_host_vars={COMPUTE_IMAGE_VAR: context.stack.compute_image})


def _ceph_files_hash(context: NodeSetContext) -> pulumi.Output[str]:
    """The hash of the node set's Ceph client files (not secret): one Output per node set."""

    def make() -> pulumi.Output[str]:
        ceph_secret, ceph_public = ceph_client.client_files(context)
        return pulumi.Output.unsecret(
            pulumi.Output.all(ceph_secret, ceph_public).apply(lambda v: config_hash({**v[0], **v[1]})))

    return context.once((NAME, "ceph files hash"), make)


def _file_problem(name: str) -> str | None:
    if nova_skips(name):
        return (f"nova-compute would never load {name}: only files whose name contains 'nova' and ends .conf are "
                "loaded (e.g. 03-ceph-nova.conf)")
    return None


def _unlisted(where: str, _default_list: tuple[str, ...]) -> str:
    return f"{where} gives nova's files to this node set, which runs no {NAME}: list {NAME}"


SERVICE = EdpmService(
    name=NAME, playbook="nova.yml", stop_playbook="nova-stop.yml", node_inputs=_node_inputs, order=50, default=True,
    mounts=MountPoint(path="/var/lib/openstack/configs/nova", what="nova's files", unlisted=_unlisted,
                      file_problem=_file_problem),
)
