"""The `dataplane` key: node sets, nodes, custom services, and the rules that tie them together."""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import PurePosixPath
from types import MappingProxyType

from . import knownhosts, schema
from .agentvars import check_agent_vars
from .catalog import OptionCatalog
from .checks import host_problem, hostname_problem, label_problem, ovsdb_connection_problem
from .customconfig import check_snippet
from .errors import Context, Path, did_you_mean, format_path
from .model import (
    CELL0,
    LIBVIRT,
    LIBVIRT_LOG_FILTERS,
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
from .secret import SecretStr
from .services import ServiceSpecs
from .sshvars import check_ssh_vars

_FILE_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")  # a ConfigMap/Secret key
# one of libvirt's log filters: a level (1 debug .. 4 error), then a module name (+: with stack traces)
_LOG_FILTER = re.compile(r"^[1-4]:\+?[A-Za-z0-9_.*]+$")
PATH: Path = ("dataplane",)
# the schema.Dataplane fields read here; any other is a service's own (Dataplane.service_configs)
_READ_HERE = frozenset({"node_sets", "custom_services", "migration_ssh_key", "ovn", "libvirt"})


def _expand(ctx: Context, path: Path, given: str | None) -> str | None:
    """`given` with ~ and $VARS expanded, made absolute; None if unset or unusable."""
    if given is None:
        return None
    expanded = os.path.expandvars(given)
    if "$" in expanded:  # expandvars leaves unset variables as they are
        ctx.problem(path, f"'{given}' uses an environment variable that is not set")
        return None
    return os.path.abspath(os.path.expanduser(expanded))


def _service_configs(ctx: Context, path: Path, given: schema.ServiceConfigs,
                     catalog: OptionCatalog | None) -> ServiceConfigs:
    return ServiceConfigs(
        nova=given.nova,
        neutron_metadata=given.neutron_metadata,
        nova_secret=check_snippet(ctx, (*path, NOVA), given.nova, catalog),
        # neutron options are not nova's: syntax only
        neutron_metadata_secret=check_snippet(ctx, (*path, NEUTRON_METADATA), given.neutron_metadata, catalog,
                                              nova_options=False),
    )


def _run_limits(ctx: Context, path: Path, given: schema.Timeouts) -> RunLimits:
    """How long a node may take: a hung node fails its run, the others go on."""
    if given.task > given.run:
        ctx.problem((*path, "task"), f"{given.task}s is longer than the whole run may take (run: {given.run}s)")
    return RunLimits(**dict(given))


def _libvirt_log_filters(ctx: Context, path: Path, given: str) -> str:
    """libvirt's log_filters, checked at preview rather than by libvirt as a daemon starts on the node."""
    wrong = [item for item in given.split() if not _LOG_FILTER.match(item)]
    if wrong:
        ctx.problem(path, f"{' '.join(wrong)} is not a libvirt log filter: give "
                    f"<level>:<module> items separated by spaces, the level 1 (debug) to 4 (error), "
                    f"e.g. '{LIBVIRT_LOG_FILTERS}'")
    return " ".join(given.split())


def _ansible_vars(ctx: Context, path: Path, given: dict[str, object]) -> MappingProxyType[str, object]:
    check_agent_vars(ctx, path, given)
    check_ssh_vars(ctx, path, given)
    return MappingProxyType(given)


def _node_template(ctx: Context, path: Path, given: schema.NodeTemplate) -> NodeTemplate:
    key = ctx.secret((*path, "ansibleSSHPrivateKey"), given.ansible_ssh_private_key)
    key_path = (*path, "ansibleSSHPrivateKeyFile")
    key_file = _expand(ctx, key_path, given.ansible_ssh_private_key_file)
    if key_file is not None:
        if key is not None:
            ctx.problem(key_path, "set only one of ansibleSSHPrivateKey and this key")
        elif not os.path.isfile(key_file):
            ctx.problem(key_path, f"{key_file} is not a readable file")
    elif key is None and given.ansible_ssh_private_key_file is None and not ctx.has_problem(key_path):
        ctx.problem(path, "set ansibleSSHPrivateKeyFile (a path) or ansibleSSHPrivateKey (with --secret) "
                          "so that Ansible can reach the nodes")
    hosts_path = (*path, "knownHostsFile")
    known_hosts_file = _expand(ctx, hosts_path, given.known_hosts_file)
    known_hosts = ""
    if known_hosts_file is not None:
        try:
            with open(known_hosts_file, encoding="utf-8") as text:
                known_hosts = text.read()
        except OSError as err:
            ctx.problem(hosts_path, f"cannot read {known_hosts_file}: {err.strerror or err}")
        except UnicodeDecodeError:
            ctx.problem(hosts_path, f"{known_hosts_file} is not a text file")
    return NodeTemplate(
        ansible_user=given.ansible_user,
        ansible_port=given.ansible_port,
        ansible_vars=_ansible_vars(ctx, (*path, "ansibleVars"), given.ansible_vars),
        ssh_private_key=key,
        ssh_private_key_file=key_file,
        known_hosts_file=known_hosts_file,
        known_hosts=known_hosts,
        timeouts=_run_limits(ctx, (*path, "timeouts"), given.timeouts),
    )


def _node(ctx: Context, path: Path, name: str, given: schema.Node, set_cell: str,
          catalog: OptionCatalog | None) -> Node:
    problem = hostname_problem(name)
    if problem:
        ctx.problem(path, f"node name {problem}")
    host_name = given.host_name or name
    problem = hostname_problem(host_name) if host_name != name else None
    if problem:
        ctx.problem((*path, "hostName"), problem)
    host_path = (*path, "ansibleHost")
    if given.ansible_host is None:
        if not ctx.has_problem(host_path):  # else: of the wrong type
            ctx.problem(host_path, "is required: the IP address or name Ansible connects to")
    elif problem := host_problem(given.ansible_host):
        ctx.problem(host_path, problem)
    return Node(
        name=name,
        host_name=host_name,
        ansible_host=given.ansible_host or "",
        cell=given.cell or set_cell,
        ansible_vars=_ansible_vars(ctx, (*path, "ansibleVars"), given.ansible_vars),
        custom_service_config=_service_configs(ctx, (*path, "customServiceConfig"), given.custom_service_config,
                                               catalog),
    )


def _with_host_keys(ctx: Context, path: Path, node: Node, template: NodeTemplate,
                    trusted: knownhosts.KnownHosts) -> Node:
    """The node with its host keys from the node set's known_hosts file: Ansible accepts no other."""
    if not node.ansible_host:
        return node
    name = knownhosts.lookup_name(node.ansible_host, template.ansible_port)
    keys = trusted.keys_for([name])
    if not keys and template.known_hosts_file is not None:
        ctx.problem(
            path,
            f"{template.known_hosts_file} (nodeTemplate.knownHostsFile) has no host key for {name}: add the "
            f"node's key (from `ssh-keyscan -p {template.ansible_port} {node.ansible_host}`, checked against "
            "the node itself; docs/operations.md, \"Trusting a node\")",
        )
    return replace(node, host_keys=keys)


def _listed_services(ctx: Context, path: Path, given: list[str] | None, known: list[str],
                     default: tuple[str, ...]) -> tuple[str, ...]:
    """The names a node set lists, each checked (or the default list); nodemounts.final_services
    decides the list once extraMounts are read."""
    if given is None:
        return default
    seen: set[str] = set()
    for item_path, service in ctx.items(path, given):
        if service in seen:
            ctx.problem(item_path, f"service '{service}' is listed twice")
        elif service not in known:
            ctx.problem(item_path, f"unknown service '{service}'{did_you_mean(service, known)} "
                                   "(define it under dataplane.customServices)")
        seen.add(service)
    return tuple(given)


def _node_set(ctx: Context, path: Path, name: str, given: schema.NodeSet, known: list[str],
              builtin: ServiceSpecs, catalog: OptionCatalog | None) -> NodeSet:
    problem = label_problem(name)
    if problem:
        ctx.problem(path, f"node set name {problem}")
    template = _node_template(ctx, (*path, "nodeTemplate"), given.node_template)
    services = _listed_services(ctx, (*path, "services"), given.services, known, builtin.default)
    trusted = knownhosts.KnownHosts(template.known_hosts)
    nodes = []
    for node_name, node in given.nodes.items():
        node_path = (*path, "nodes", node_name)
        nodes.append(_with_host_keys(ctx, node_path, _node(ctx, node_path, node_name, node, given.cell, catalog),
                                     template, trusted))
    if given.tls_enabled and NOVA in services and LIBVIRT not in services:
        ctx.problem((*path, "tlsEnabled"),
                    f"nova then migrates over libvirt's TLS listener, which the {LIBVIRT} service sets up: "
                    f"add {LIBVIRT} to services (before {NOVA}, as in upstream's default order)")
    if nodes and template.known_hosts_file is None and not ctx.has_problem((*path, "nodeTemplate", "knownHostsFile")):
        shared = "".join(f" and the {s.name} service gives every node" for s in builtin.specs
                         if s.shares_known_hosts and s.name in services)
        ctx.problem((*path, "nodeTemplate", "knownHostsFile"),
                    f"is required: a known_hosts file with each node's host key, which Ansible checks the "
                    f"nodes against{shared}")
    return NodeSet(
        name=name,
        cell=given.cell,
        node_template=template,
        nodes=tuple(sorted(nodes, key=lambda n: n.name)),
        services=services,
        custom_service_config=_service_configs(ctx, (*path, "customServiceConfig"), given.custom_service_config,
                                               catalog),
        services_listed=given.services is not None,
        tls_enabled=given.tls_enabled,
        qemu_max_processes=given.qemu_max_processes,
        qemu_max_files=given.qemu_max_files,
        libvirt_log_filters=_libvirt_log_filters(ctx, (*path, "libvirtLogFilters"), given.libvirt_log_filters),
    )


def _custom_service(ctx: Context, path: Path, name: str, given: schema.CustomService,
                    builtin: ServiceSpecs) -> CustomService:
    problem = label_problem(name)
    if problem:
        ctx.problem(path, f"service name {problem}")
    if name in builtin.names:
        ctx.problem(path, f"'{name}' is a built-in service; choose another name")
    playbook = given.playbook
    if playbook is None:
        if not ctx.has_problem((*path, "playbook")):
            ctx.problem((*path, "playbook"), "is required: a playbook file under ansible/playbooks/")
    else:
        parts = PurePosixPath(playbook)
        if parts.is_absolute() or ".." in parts.parts or parts.suffix not in (".yml", ".yaml"):
            ctx.problem((*path, "playbook"), f"'{playbook}' must be a relative .yml path under ansible/playbooks/")
    for file_name in given.files:
        if not _FILE_KEY.match(file_name):
            ctx.problem((*path, "files", file_name), "file names may hold only letters, digits, '-', '_' and '.'")
    return CustomService(name=name, playbook=playbook or "", files=MappingProxyType(given.files))


def _migration_key(ctx: Context, path: Path, given: schema.MigrationSSHKey | None) -> MigrationSSHKey | None:
    if given is None:
        return None
    private = ctx.secret((*path, "privateKey"), given.private_key)
    if private is None or given.public_key is None:
        ctx.problem(path, "set both privateKey (with --secret) and publicKey, or neither")
        return None
    # Files on the nodes end with a newline, as ssh-keygen writes them: `pulumi config set`
    # from a file drops it, and OpenSSH cannot load a private key without it.
    return MigrationSSHKey(private_key=SecretStr(private.reveal().strip() + "\n"),
                           public_key=given.public_key.strip() + "\n")


def _libvirt(ctx: Context, path: Path, given: schema.Libvirt) -> Libvirt:
    password = ctx.secret((*path, "password"), given.password)
    if password is not None:
        value = password.reveal()
        # written as one line of /etc/libvirt/auth.conf and read by saslpasswd2 up to the line's end
        if not value or value != value.strip() or any(c in value for c in "\r\n"):
            ctx.problem((*path, "password"), "must be one line, not empty, without leading or trailing spaces "
                                             "(it goes into /etc/libvirt/auth.conf and libvirt's SASL database)")
    return Libvirt(password=password)


def _ovn(ctx: Context, path: Path, given: schema.Ovn, node_sets: list[NodeSet]) -> Ovn | None:
    """The OVN southbound database; required by the neutron metadata agents."""
    users = sorted(s.name for s in node_sets if NEUTRON_METADATA in s.services and s.nodes)
    connection = given.sb_connection
    if connection is None:
        if users and not ctx.has_problem((*path, "sbConnection")):
            ctx.problem(
                (*path, "sbConnection"),
                f"is required by the {NEUTRON_METADATA} service (node sets: {', '.join(users)}): the OVN "
                "southbound database its agents connect to, e.g. tcp:<address of ovsdbserver-sb>:6642 "
                "(upstream: ovn_sb_connection of the neutron-ovn-metadata-agent-neutron-config Secret)",
            )
        return None
    if problem := ovsdb_connection_problem(connection):
        ctx.problem((*path, "sbConnection"), problem)
        return None
    return Ovn(sb_connection=",".join(entry.strip() for entry in connection.split(",")))


def parse_dataplane(ctx: Context, given: schema.Dataplane, catalog: OptionCatalog | None,
                    builtin: ServiceSpecs) -> Dataplane:
    custom = {name: _custom_service(ctx, (*PATH, "customServices", name), name, service, builtin)
              for name, service in given.custom_services.items()}
    known = [*builtin.names, *custom]
    node_sets = [_node_set(ctx, (*PATH, "nodeSets", name), name, node_set, known, builtin, catalog)
                 for name, node_set in given.node_sets.items()]
    return Dataplane(
        node_sets=tuple(sorted(node_sets, key=lambda s: s.name)),
        custom_services=MappingProxyType(custom),
        migration_ssh_key=_migration_key(ctx, (*PATH, "migrationSSHKey"), given.migration_ssh_key),
        ovn=_ovn(ctx, (*PATH, "ovn"), given.ovn, node_sets),
        libvirt=_libvirt(ctx, (*PATH, "libvirt"), given.libvirt),
        service_configs=MappingProxyType({
            field.alias or name: getattr(given, name) for name, field in type(given).model_fields.items()
            if name not in _READ_HERE}),
    )


def check_dataplane(ctx: Context, dataplane: Dataplane, nova: Nova) -> None:
    """Rules that tie nodes to cells and to each other."""
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
        set_path = (*PATH, "nodeSets", node_set.name)
        check_cell((*set_path, "cell"), node_set.cell)
        for node in node_set.nodes:
            node_path = (*set_path, "nodes", node.name)
            if node.cell != node_set.cell:  # the node overrides it: report it there
                check_cell((*node_path, "cell"), node.cell)
            check_unique(node_path, "node name", node.name)
            check_unique((*node_path, "hostName"), "hostName", node.host_name)
            if node.ansible_host:
                check_unique((*node_path, "ansibleHost"), "ansibleHost", node.ansible_host)
