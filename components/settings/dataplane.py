"""Parsing and checking the `dataplane` key: node sets, nodes, custom services."""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import PurePosixPath
from types import MappingProxyType
from typing import TYPE_CHECKING

from . import knownhosts
from .agentvars import check_agent_vars
from .catalog import OptionCatalog
from .checks import host_problem, hostname_problem, label_problem, ovsdb_connection_problem
from .customconfig import read_snippet
from .errors import Path, did_you_mean, format_path
from .model import (
    CELL0,
    LIBVIRT,
    NEUTRON_METADATA,
    NOVA,
    CustomService,
    Dataplane,
    Libvirt,
    MigrationSSHKey,
    Node,
    NodeSet,
    NodeTemplate,
    Nova,
    Ovn,
    RunLimits,
    ServiceConfigs,
)
from .reader import Obj
from .secret import SecretStr
from .sshvars import check_ssh_vars

if TYPE_CHECKING:
    from components.edpm.registry import BuiltinServices

DEFAULT_CELL = "cell1"
_FILE_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")  # a ConfigMap/Secret key


def _expand(obj: Obj, key: str) -> str | None:
    """The path at `key` with ~ and $VARS expanded, made absolute; None if unset or unusable."""
    given = obj.opt_text(key)
    if given is None:
        return None
    expanded = os.path.expandvars(given)
    if "$" in expanded:  # expandvars leaves unset variables as they are
        obj.ctx.problem(obj.at(key), f"'{given}' uses an environment variable that is not set")
        return None
    return os.path.abspath(os.path.expanduser(expanded))


def _service_configs(obj: Obj, catalog: OptionCatalog | None) -> ServiceConfigs:
    nova, nova_secret = read_snippet(obj, NOVA, catalog)
    # neutron options are not nova's: syntax only
    neutron, neutron_secret = read_snippet(obj, NEUTRON_METADATA, catalog, nova_options=False)
    obj.close()
    return ServiceConfigs(nova=nova, neutron_metadata=neutron, nova_secret=nova_secret,
                          neutron_metadata_secret=neutron_secret)


def _run_limits(obj: Obj) -> RunLimits:
    """How long a node may take: a hung node fails its run, the others go on."""
    default = RunLimits()
    limits = RunLimits(
        connect=obj.integer("connect", default.connect, lo=1, hi=3600),
        task=obj.integer("task", default.task, lo=1),
        run=obj.integer("run", default.run, lo=10),
        lock=obj.integer("lock", default.lock, lo=0),
    )
    if limits.task > limits.run:
        obj.ctx.problem(obj.at("task"), f"{limits.task}s is longer than the whole run may take (run: {limits.run}s)")
    obj.close()
    return limits


def _node_template(obj: Obj) -> NodeTemplate:
    key = obj.secret("ansibleSSHPrivateKey")
    key_file = _expand(obj, "ansibleSSHPrivateKeyFile")
    if key_file is not None:
        if key is not None:
            obj.ctx.problem(
                obj.at("ansibleSSHPrivateKeyFile"), "set only one of ansibleSSHPrivateKey and this key"
            )
        elif not os.path.isfile(key_file):
            obj.ctx.problem(obj.at("ansibleSSHPrivateKeyFile"), f"{key_file} is not a readable file")
    elif key is None and not obj.has("ansibleSSHPrivateKeyFile"):
        obj.ctx.problem(
            obj.path,
            "set ansibleSSHPrivateKeyFile (a path) or ansibleSSHPrivateKey (with --secret) "
            "so that Ansible can reach the nodes",
        )
    known_hosts_file = _expand(obj, "knownHostsFile")
    known_hosts = ""
    if known_hosts_file is not None:
        try:
            with open(known_hosts_file, encoding="utf-8") as text:
                known_hosts = text.read()
        except OSError as err:
            obj.ctx.problem(obj.at("knownHostsFile"), f"cannot read {known_hosts_file}: {err.strerror or err}")
        except UnicodeDecodeError:
            obj.ctx.problem(obj.at("knownHostsFile"), f"{known_hosts_file} is not a text file")
    ansible_vars = obj.any_map("ansibleVars")
    check_agent_vars(obj.ctx, obj.at("ansibleVars"), ansible_vars)
    check_ssh_vars(obj.ctx, obj.at("ansibleVars"), ansible_vars)
    template = NodeTemplate(
        ansible_user=obj.text("ansibleUser", "root", allow_empty=False),
        ansible_port=obj.integer("ansiblePort", 22, lo=1, hi=65535),
        ansible_vars=ansible_vars,
        ssh_private_key=key,
        ssh_private_key_file=key_file,
        known_hosts_file=known_hosts_file,
        known_hosts=known_hosts,
        timeouts=_run_limits(obj.obj("timeouts")),
    )
    obj.close()
    return template


def _node(name: str, obj: Obj, set_cell: str, catalog: OptionCatalog | None) -> Node:
    problem = hostname_problem(name)
    if problem:
        obj.ctx.problem(obj.path, f"node name {problem}")
    host_name = obj.text("hostName", name, allow_empty=False)
    problem = hostname_problem(host_name) if host_name != name else None
    if problem:
        obj.ctx.problem(obj.at("hostName"), problem)
    ansible_host = obj.opt_text("ansibleHost")
    if ansible_host is None:
        obj.ctx.problem(obj.at("ansibleHost"), "is required: the IP address or name Ansible connects to")
    elif problem := host_problem(ansible_host):
        obj.ctx.problem(obj.at("ansibleHost"), problem)
    ansible_vars = obj.any_map("ansibleVars")
    check_agent_vars(obj.ctx, obj.at("ansibleVars"), ansible_vars)
    check_ssh_vars(obj.ctx, obj.at("ansibleVars"), ansible_vars)
    node = Node(
        name=name,
        host_name=host_name,
        ansible_host=ansible_host or "",
        cell=obj.opt_text("cell") or set_cell,
        ansible_vars=ansible_vars,
        custom_service_config=_service_configs(obj.obj("customServiceConfig"), catalog),
    )
    obj.close()
    return node


def _with_host_keys(node: Node, obj: Obj, template: NodeTemplate, trusted: knownhosts.KnownHosts) -> Node:
    """The node with its host keys from the node set's known_hosts file: Ansible accepts no other."""
    if not node.ansible_host:
        return node
    name = knownhosts.lookup_name(node.ansible_host, template.ansible_port)
    keys = trusted.keys_for([name])
    if not keys and template.known_hosts_file is not None:
        obj.ctx.problem(
            obj.path,
            f"{template.known_hosts_file} (nodeTemplate.knownHostsFile) has no host key for {name}: add the "
            f"node's key (from `ssh-keyscan -p {template.ansible_port} {node.ansible_host}`, checked against "
            "the node itself; README, \"Trusting a node\")",
        )
    return replace(node, host_keys=keys)


def _services(obj: Obj, known: list[str], default: tuple[str, ...]) -> tuple[str, ...]:
    services = obj.str_list("services")
    if services is None:
        return default
    seen: set[str] = set()
    for index, service in enumerate(services):
        path = (*obj.at("services"), index)
        if service in seen:
            obj.ctx.problem(path, f"service '{service}' is listed twice")
        elif service not in known:
            obj.ctx.problem(
                path,
                f"unknown service '{service}'{did_you_mean(service, known)} "
                "(define it under dataplane.customServices)",
            )
        seen.add(service)
    return services


def _node_set(name: str, obj: Obj, known: list[str], builtin: BuiltinServices,
              catalog: OptionCatalog | None) -> NodeSet:
    problem = label_problem(name)
    if problem:
        obj.ctx.problem(obj.path, f"node set name {problem}")
    cell = obj.text("cell", DEFAULT_CELL, allow_empty=False)
    template = _node_template(obj.obj("nodeTemplate"))
    services = _services(obj, known, builtin.default)
    trusted = knownhosts.KnownHosts(template.known_hosts)
    nodes = [_with_host_keys(_node(n, o, cell, catalog), o, template, trusted) for n, o in obj.entries("nodes")]
    tls_enabled = obj.flag("tlsEnabled", False)
    if tls_enabled and NOVA in services and LIBVIRT not in services:
        obj.ctx.problem(obj.at("tlsEnabled"),
                        f"nova then migrates over libvirt's TLS listener, which the {LIBVIRT} service sets up: "
                        f"add {LIBVIRT} to services (before {NOVA}, as in upstream's default order)")
    if nodes and template.known_hosts_file is None:
        shared = "".join(f" and the {s.name} service gives every node" for s in builtin.services
                         if s.shares_known_hosts and s.name in services)
        obj.ctx.problem((*obj.at("nodeTemplate"), "knownHostsFile"),
                        f"is required: a known_hosts file with each node's host key, which Ansible checks the "
                        f"nodes against{shared}")
    node_set = NodeSet(
        name=name,
        cell=cell,
        node_template=template,
        nodes=tuple(sorted(nodes, key=lambda n: n.name)),
        services=services,
        custom_service_config=_service_configs(obj.obj("customServiceConfig"), catalog),
        services_listed=obj.has("services"),
        tls_enabled=tls_enabled,
    )
    obj.close()
    return node_set


def _custom_service(name: str, obj: Obj, builtin: BuiltinServices) -> CustomService:
    problem = label_problem(name)
    if problem:
        obj.ctx.problem(obj.path, f"service name {problem}")
    if name in builtin.names:
        obj.ctx.problem(obj.path, f"'{name}' is a built-in service; choose another name")
    playbook = obj.opt_text("playbook")
    if playbook is None:
        obj.ctx.problem(obj.at("playbook"), "is required: a playbook file under ansible/playbooks/")
    else:
        parts = PurePosixPath(playbook)
        if parts.is_absolute() or ".." in parts.parts or parts.suffix not in (".yml", ".yaml"):
            obj.ctx.problem(
                obj.at("playbook"), f"'{playbook}' must be a relative .yml path under ansible/playbooks/"
            )
    files = obj.str_map("files")
    for file_name in files:
        if not _FILE_KEY.match(file_name):
            obj.ctx.problem(
                (*obj.at("files"), file_name), "file names may hold only letters, digits, '-', '_' and '.'"
            )
    service = CustomService(name=name, playbook=playbook or "", files=files)
    obj.close()
    return service


def _migration_key(obj: Obj) -> MigrationSSHKey | None:
    if not obj.present:
        return None
    private = obj.secret("privateKey")
    public = obj.opt_text("publicKey")
    obj.close()
    if private is None or public is None:
        obj.ctx.problem(obj.path, "set both privateKey (with --secret) and publicKey, or neither")
        return None
    # Files on the nodes end with a newline, as ssh-keygen writes them: `pulumi config set`
    # from a file drops it, and OpenSSH cannot load a private key without it.
    return MigrationSSHKey(private_key=SecretStr(private.reveal().strip() + "\n"), public_key=public.strip() + "\n")


def _libvirt(obj: Obj) -> Libvirt:
    password = obj.secret("password")
    obj.close()
    if password is not None:
        value = password.reveal()
        # written as one line of /etc/libvirt/auth.conf and read by saslpasswd2 up to the line's end
        if not value or value != value.strip() or any(c in value for c in "\r\n"):
            obj.ctx.problem(obj.at("password"), "must be one line, not empty, without leading or trailing spaces "
                                                "(it goes into /etc/libvirt/auth.conf and libvirt's SASL database)")
    return Libvirt(password=password)


def _ovn(obj: Obj, node_sets: list[NodeSet]) -> Ovn | None:
    """The OVN southbound database; required by the neutron metadata agents."""
    users = sorted(s.name for s in node_sets if NEUTRON_METADATA in s.services and s.nodes)
    connection = obj.opt_text("sbConnection")
    obj.close()
    if connection is None:
        if users:
            obj.ctx.problem(
                obj.at("sbConnection"),
                f"is required by the {NEUTRON_METADATA} service (node sets: {', '.join(users)}): the OVN "
                "southbound database its agents connect to, e.g. tcp:<address of ovsdbserver-sb>:6642 "
                "(upstream: ovn_sb_connection of the neutron-ovn-metadata-agent-neutron-config Secret)",
            )
        return None
    if problem := ovsdb_connection_problem(connection):
        obj.ctx.problem(obj.at("sbConnection"), problem)
        return None
    return Ovn(sb_connection=",".join(entry.strip() for entry in connection.split(",")))


def parse_dataplane(obj: Obj, catalog: OptionCatalog | None, builtin: BuiltinServices) -> Dataplane:
    custom = {name: _custom_service(name, o, builtin) for name, o in obj.entries("customServices")}
    known = [*builtin.names, *custom]
    node_sets = [_node_set(name, o, known, builtin, catalog) for name, o in obj.entries("nodeSets")]
    dataplane = Dataplane(
        node_sets=tuple(sorted(node_sets, key=lambda s: s.name)),
        custom_services=MappingProxyType(custom),
        migration_ssh_key=_migration_key(obj.obj("migrationSSHKey")),
        ovn=_ovn(obj.obj("ovn"), node_sets),
        libvirt=_libvirt(obj.obj("libvirt")),
    )
    obj.close()
    return dataplane


def check_dataplane(obj: Obj, dataplane: Dataplane, nova: Nova) -> None:
    """Rules that tie nodes to cells and to each other."""
    ctx = obj.ctx
    cells = [c.name for c in nova.cells]
    compute_cells = [c for c in cells if c != CELL0]

    def check_cell(path: Path, cell: str) -> None:
        if cell == CELL0:
            choices = ", ".join(compute_cells) or "none defined"
            ctx.problem(path, f"cell0 has no computes; use one of: {choices}")
        elif cell not in cells:
            hint = did_you_mean(cell, compute_cells)
            ctx.problem(path, f"'{cell}' is not in nova.cellTemplates{hint}")

    owners: dict[tuple[str, str], Path] = {}

    def check_unique(path: Path, kind: str, value: str) -> None:
        first = owners.setdefault((kind, value), path)
        if first != path:
            ctx.problem(path, f"{kind} '{value}' is also used by {format_path(first, project=False)}")

    for node_set in dataplane.node_sets:
        set_path = (*obj.path, "nodeSets", node_set.name)
        check_cell((*set_path, "cell"), node_set.cell)
        for node in node_set.nodes:
            node_path = (*set_path, "nodes", node.name)
            if node.cell != node_set.cell:  # the node overrides it: report it there
                check_cell((*node_path, "cell"), node.cell)
            check_unique(node_path, "node name", node.name)
            check_unique((*node_path, "hostName"), "hostName", node.host_name)
            if node.ansible_host:
                check_unique((*node_path, "ansibleHost"), "ansibleHost", node.ansible_host)
