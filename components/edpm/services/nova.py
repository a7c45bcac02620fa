"""nova: nova-compute on the node. Its files land in /var/lib/openstack/nova:
01-nova.conf from its cell's `nova-<cell>-compute-config` Secret,
02-nova-host-specific.conf, 25-/26-nova-extra*.conf from customServiceConfig
(secrets 0600), the migration keys, and what extraMounts mount at
/var/lib/openstack/configs/nova; kolla copies them into /etc/nova/nova.conf.d/.

Its stack part is the migration key pair (`NovaMigrationSSHKey`, the
nova-migration-ssh-key Secret) and, per cell, the files every compute of the
cell gets.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pulumi

from components.edpm.context import NodeSetContext, StackContext, with_secret_files
from components.edpm.service import EdpmService, RunInputs, derive, merged
from components.edpm.services import ceph_client
from components.migrationkey import NovaMigrationSSHKey
from components.render import (
    HOST_SPECIFIC_CONF,
    compute_config_names,
    config_hash,
    host_specific_conf,
    nova_extra_files,
)
from components.render.mounts import nova_skips
from components.settings import NOVA, MountPoint, Node, NodeSet, ServiceSpec, Settings
from components.settings.errors import Path

NAME = NOVA  # named with the settings, which read its customServiceConfig

# edpm_nova's variable for the nova_compute container's image (upstream's inventory sets it).
COMPUTE_IMAGE_VAR = "edpm_nova_compute_image"
# the role's list of files it copies as secret ones (0600, never logged)
SECRET_FILES_VAR = "edpm_nova_secret_files"
_MIGRATION_KEYS = ("ssh-privatekey", "ssh-publickey")


@dataclass(frozen=True)
class ComputeFiles:
    """What the nova service gets from the stack."""

    cell_files: Mapping[str, pulumi.Output[dict[str, str]]]  # per cell: its compute config and the migration keys
    image: str  # images.compute, unless a node's ansibleVars name another


def _with_keys(config: dict[str, str], private: str, public: str) -> dict[str, str]:
    return {**config, _MIGRATION_KEYS[0]: private, _MIGRATION_KEYS[1]: public}


def _stack(stack: StackContext) -> ComputeFiles:
    key = NovaMigrationSSHKey("nova-migration-ssh-key", stack.target, stack.settings.dataplane.migration_ssh_key,
                              opts=stack.in_namespace())
    cell_files: dict[str, pulumi.Output[dict[str, str]]] = {
        cell: pulumi.Output.secret(pulumi.Output.all(config, key.private_key, key.public_key).apply(
            lambda v: _with_keys(v[0], v[1], v[2])))
        for cell, config in stack.control_plane.compute_configs.items()
    }
    return ComputeFiles(cell_files=cell_files, image=stack.settings.images.compute)


def _own_public(node_set: NodeSet, node: Node) -> dict[str, str]:
    """The node's own files, shown in preview line by line."""
    return {HOST_SPECIFIC_CONF: host_specific_conf(node.ansible_host, node.host_name, tls=node_set.tls_enabled),
            **nova_extra_files(node_set, node)}


def _clash_message(clash: list[str]) -> str:
    return (f"extraMounts give nova {', '.join(clash)}, which the program makes itself; "
            "name the mounted files otherwise")


def _not_taken(mounted: Mapping[str, str], taken: set[str]) -> dict[str, str]:
    """`mounted`, or an error naming a file that would replace one of the program's own (the
    files of a whole Secret or ConfigMap, known once read; `_check` reports those named)."""
    clash = sorted(set(mounted) & taken)
    if clash:
        raise pulumi.RunError(_clash_message(clash))
    return dict(mounted)


def _check(settings: Settings) -> Iterator[tuple[Path, str]]:
    """A mounted file that would replace one of nova's own on some node, where the stack config
    names it: once per mount, whichever node sets it reaches."""
    own = compute_config_names(settings) | set(_MIGRATION_KEYS)
    clashes: dict[Path, set[str]] = {}
    for node_set in settings.dataplane.node_sets:
        taken = own.union(*({*_own_public(node_set, n), *nova_extra_files(node_set, n, secret=True)}
                            for n in node_set.nodes))
        for mounted in node_set.mounted_for(NAME):
            clashes.setdefault(mounted.origin, set()).update(set(mounted.files or ()) & taken)
    for origin, clash in clashes.items():
        if clash:
            yield origin, _clash_message(sorted(clash))


def _taken(files: dict[str, str], own_public: frozenset[str]) -> set[str]:
    return set(files) | own_public


def _with_mounted(files: dict[str, str], mounted: dict[str, str], taken: set[str]) -> dict[str, str]:
    return {**files, **_not_taken(mounted, taken)}


def _secret_file_names(given: list[str], extra: list[str], variable: str, mounted: dict[str, str]) -> list[str]:
    return list(with_secret_files(given, variable, [*extra, *mounted])[variable])


def _ceph_files_hash(secret: dict[str, str], public: dict[str, str]) -> str:
    return config_hash({**secret, **public})


def _node_inputs(context: NodeSetContext, node: Node) -> RunInputs:
    node_set = context.node_set
    stack: ComputeFiles = context.stack
    secret_extra = nova_extra_files(node_set, node, secret=True)
    own_public = _own_public(node_set, node)
    mounted_secret, mounted_public = context.mounted.of(NAME)
    own_files: Any = stack.cell_files[node.cell]
    if secret_extra:
        own_files = derive(merged, own_files, secret_extra)
    taken = derive(_taken, own_files, frozenset(own_public), secret=False)
    files = derive(_with_mounted, own_files, mounted_secret, taken, secret=True)
    public = derive(merged, own_public, derive(_not_taken, mounted_public, taken))
    # the role copies these as it does nova's own secret files (0600, never logged): snippets that set
    # secret options, and a Secret's mounted files
    given = context.secret_file_names(node, SECRET_FILES_VAR)
    variables: dict[str, Any] = with_secret_files(given, SECRET_FILES_VAR, list(secret_extra))
    if any(m.secret for m in node_set.mounted_for(NAME)):
        variables[SECRET_FILES_VAR] = derive(_secret_file_names, given, list(secret_extra), SECRET_FILES_VAR,
                                             mounted_secret, secret=False)
    if ceph_client.NAME in node_set.services:
        # a change of the Ceph client files re-runs nova, which restarts nova-compute
        variables["edpm_nova_ceph_files_hash"] = derive(_ceph_files_hash, *context.mounted.of(ceph_client.NAME),
                                                        secret=False)
    # the stop playbook runs with the same host variables: its quadlet mode runs the image
    return RunInputs(files=files, public_files=public, variables=variables,
                     default_host_vars={COMPUTE_IMAGE_VAR: stack.image})


def _file_problem(name: str) -> str | None:
    if nova_skips(name):
        return (f"nova-compute would never load {name}: only files whose name contains 'nova' and ends .conf are "
                "loaded (e.g. 03-ceph-nova.conf)")
    return None


def _unlisted(where: str, _default_list: tuple[str, ...]) -> str:
    return f"{where} gives nova's files to this node set, which runs no {NAME}: list {NAME}"


SPEC = ServiceSpec(
    name=NAME, playbook="nova.yml", stop_playbook="nova-stop.yml", order=50, default=True,
    mounts=MountPoint(path="/var/lib/openstack/configs/nova", what="nova's files", unlisted=_unlisted,
                      file_problem=_file_problem),
    check=_check,
)
SERVICE = EdpmService(SPEC, stack=_stack, node_inputs=_node_inputs)
