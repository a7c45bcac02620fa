"""Mutants: small, deliberate breakages of the program that the unit tests must catch.

    .venv/bin/python -m tools.mutants [--all] [--only ID ...] [--jobs N] [--check] [--list]

Each entry of MUTANTS replaces one exact piece of text of one file (a dependency
dropped, a secret left unmarked, a line of a rendered file changed) and names
what that breaks. Each is applied, one at a time, to a copy of the tree (the
checkout is never touched) and the unit tests of its selection run there; a
failing test kills it, a green run means no unit test noticed: it survived.
`--all` runs the whole unit suite for each instead (stopping at the first
failure): whether a survivor of its selection survives every unit test (what
its selection kills, the whole suite kills too).

A mutant only an integration test can catch names that test in
`killed_by_integration` and is not run; so is one that changes nothing the
program does (`equivalent` says which other layer does the same), kept so that
the next reader need not try it again. Before anything runs, every old text
must stand exactly once in its file, whitespace aside (a reformat keeps a
mutant): code that moved makes the list fail loudly rather than rot. The unit
suite checks the rest of the list (tests/unit/test_mutants.py), not the texts,
so that a reformat never turns `make unit` red.

Prints a table (mutant, killed or survived, by which tests); exits 1 when one
survived, 2 when the list does not match the code or the unmutated tests fail.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from queue import Queue

ROOT = Path(__file__).resolve().parent.parent
UNIT = "tests/unit"
# A mutant that makes a test hang is caught, not waited for.
TIMEOUT = 600


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str  # relative to the checkout
    old: str  # stands exactly once in `file`
    new: str
    breaks: str  # what the program does wrong with it
    tests: tuple[str, ...]  # the unit test files that must catch it
    # "tests/integration/<file>::<test>: why only it can": the mutant is not run
    killed_by_integration: str = ""
    # why the program with it behaves as without it (another layer does the same): not run
    equivalent: str = ""


@dataclass(frozen=True)
class Outcome:
    mutant: Mutant
    status: str  # killed, survived, integration, equivalent, error
    by: tuple[str, ...] = ()  # the failing tests, or what went wrong
    seconds: float = 0.0


# --- the tests that check each part --------------------------------------------------------

# The whole program and its components under Pulumi mocks: what exists, in which order, what is secret.
PROGRAM = (f"{UNIT}/test_ordering.py", f"{UNIT}/test_secret_marking.py", f"{UNIT}/test_components.py",
           f"{UNIT}/test_edpm_registry.py", f"{UNIT}/test_rotation.py", f"{UNIT}/test_service_cleanup.py")
# The renderers: nova.conf and the other files of pods and nodes.
RENDER = (f"{UNIT}/test_render.py", f"{UNIT}/test_render_libvirt.py", f"{UNIT}/test_render_neutron_metadata.py",
          f"{UNIT}/test_render_mounts.py", f"{UNIT}/test_components.py", f"{UNIT}/test_secret_marking.py")
# What the program renders for each nova release, and which release a stack gets.
RELEASES = (f"{UNIT}/test_releases.py", f"{UNIT}/test_catalogs.py", f"{UNIT}/test_render.py")
# The EDPM roles' own files.
ROLES = (f"{UNIT}/test_edpm_roles.py", f"{UNIT}/test_edpm_libvirt_role.py", f"{UNIT}/test_render_neutron_metadata.py",
         f"{UNIT}/test_roles_write_whole_files.py")
# PlaybookRun: when a node is configured again, what a refresh finds, what it keeps.
PLAYBOOK = (f"{UNIT}/test_playbook.py", f"{UNIT}/test_secret_marking.py", f"{UNIT}/test_components.py",
            f"{UNIT}/test_edpm_registry.py")
# The Ansible runner: what a run reports (its events, failures, progress), its type and where it lived.
RUNNER = (f"{UNIT}/test_run_events.py", f"{UNIT}/test_playbook.py", f"{UNIT}/test_runguard.py",
          f"{UNIT}/test_dynamic_state.py")


def _m(id_: str, file: str, old: str, new: str, breaks: str, tests: tuple[str, ...],
       killed_by_integration: str = "") -> Mutant:
    return Mutant(id_, file, old, new, breaks, tuple(dict.fromkeys(tests)), killed_by_integration)


# pulumi_kubernetes' Secret marks `data` and `stringData` secret itself (Output.secret, and as additional
# secret outputs): un-marking what a Secret is given changes nothing.
_K8S_SECRET = ("pulumi_kubernetes' Secret marks its stringData secret itself; the files' only other use is "
               "their hash, shown on purpose")


def _equivalent(id_: str, file: str, old: str, new: str, breaks: str, why: str) -> Mutant:
    return Mutant(id_, file, old, new, breaks, (), equivalent=why)


MUTANTS: tuple[Mutant, ...] = (
    # --- dependency orderings --------------------------------------------------------------
    _m("order-cell-after-cell0-mapping", "components/controlplane.py",
       'after = [self.cells["cell0"].cell_mapping] if (', "after = [] if (",
       "a cell with API access syncs its database before cell0 is mapped", PROGRAM),
    _m("order-db-sync-after-what-the-cell-waits-for", "components/cell.py",
       "depends_on=[conductor.config_secret, *after]", "depends_on=[conductor.config_secret]",
       "the cell's db-sync no longer waits for cell0's mapping (`after` is dropped)", PROGRAM),
    _m("order-db-sync-after-its-config", "components/cell.py",
       "depends_on=[conductor.config_secret, *after]", "depends_on=[*after]",
       "the cell's db-sync may start before the config Secret it mounts exists", PROGRAM),
    _m("order-conductor-after-db-sync", "components/cell.py",
       "return [self.db_sync]", "return []",
       "the cell's conductor starts before its schema is migrated", PROGRAM),
    _m("order-cell-mapping-after-db-sync", "components/cell.py",
       "annotations={kube.CONFIG_HASH_ANNOTATION: self.mapping_hash},\n"
       "            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.db_sync]),",
       "annotations={kube.CONFIG_HASH_ANNOTATION: self.mapping_hash},\n"
       "            opts=pulumi.ResourceOptions(parent=self),",
       "the cell is mapped before its database schema exists", PROGRAM),
    _m("order-db-purge-after-db-sync", "components/cell.py",
       "labels=job_labels, skip_await=skip,\n"
       "            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.db_sync]),",
       "labels=job_labels, skip_await=skip,\n"
       "            opts=pulumi.ResourceOptions(parent=self),",
       "the db purge CronJob may run before the schema it archives exists", PROGRAM),
    _m("order-statefulset-after-its-config", "components/workload.py",
       "depends_on=[self.config_secret, *depends_on]", "depends_on=[*depends_on]",
       "a service's pods may start before their config Secret exists", PROGRAM),
    _m("order-top-level-after-cell-mappings", "components/controlplane.py",
       "opts=in_namespace, after=mappings)", "opts=in_namespace)",
       "nova-api, nova-scheduler and nova-metadata start before the cells are mapped", PROGRAM),
    _m("order-control-plane-after-namespace", "components/controlplane.py",
       "in_namespace = pulumi.ResourceOptions(parent=self, depends_on=[self.namespace])",
       "in_namespace = pulumi.ResourceOptions(parent=self)",
       "the control plane's objects are created before their Namespace", PROGRAM),
    _m("render-service-rules-at-preview", "components/settings/load.py",
       "for path, message in spec.check(settings):", "for path, message in ():",
       "a service's own rules (a metadata service for the agent's cell, a mounted file that would replace "
       "one of nova's) are no longer reported at preview",
       (f"{UNIT}/test_settings.py", f"{UNIT}/test_edpm_registry.py")),
    _m("files-stack-part-given-to-its-service", "components/dataplane.py",
       "return [(s, self.stack_parts.get(s.name)) for s in", "return [(s, None) for s in",
       "a service's runs never get its stack part (nova's cell files, libvirt's Secrets)", PROGRAM),
    _m("order-stack-parts-after-namespace", "components/edpm/context.py",
       "depends_on=[self.namespace] if self.namespace else None)", "depends_on=None)",
       "the services' stack parts (nova-migration-ssh-key, libvirt's Secrets) are created before their Namespace",
       PROGRAM),
    _m("order-stack-parts-namespace-given", "__main__.py",
       "namespace=control_plane.namespace,", "",
       "the data plane is not told the namespace: the services' Secrets are created before it", PROGRAM),
    _m("order-host-discovery-after-computes", "components/dataplane.py",
       "depends_on=[s.runs[n.name][NOVA] for s, n in computes if NOVA in s.runs[n.name]],",
       "depends_on=[],",
       "a cell's host discovery runs before its computes are deployed", PROGRAM),
    _m("order-host-discovery-job-waits", "components/cell.py",
       "opts=pulumi.ResourceOptions(parent=self, depends_on=list(depends_on)),",
       "opts=pulumi.ResourceOptions(parent=self),",
       "the host-discovery Job ignores what it was told to wait for (the computes)", PROGRAM),
    _m("order-node-services-one-after-another", "components/dataplane.py",
       "depends_on=[after] if after else []", "depends_on=[]",
       "a node's services run at once instead of each after the one before", PROGRAM),
    _m("order-node-marker-first", "components/dataplane.py",
       "for service, stack_part in ((MARKER, None), *services)]",
       "for service, stack_part in (*services, (MARKER, None))]",
       "the node marker runs last instead of first", PROGRAM),
    _m("order-node-services-upstream-order", "components/settings/services.py",
       "return cls(tuple(sorted(result, key=lambda s: s.order or 0)))", "return cls(tuple(result))",
       "the built-in services run in module order, not upstream's (nova before ssh-known-hosts)",
       (*PROGRAM, f"{UNIT}/test_settings.py")),
    _m("order-cleanup-after-rollouts", "components/cleanup.py",
       "depends_on=[self.config_secret, *after]", "depends_on=[self.config_secret]",
       "the service cleanup runs before the rollouts that retire the records it deletes", PROGRAM),
    _m("order-cleanup-after-its-config", "components/cleanup.py",
       "depends_on=[self.config_secret, *after]", "depends_on=[*after]",
       "the cleanup Job may start before its config Secret exists", PROGRAM),
    _m("order-cleanup-after-conductors", "components/controlplane.py",
       "rpc_services = [self.scheduler.statefulset, *(c.conductor.statefulset for c in self.cells.values())]",
       "rpc_services = [self.scheduler.statefulset]",
       "the cleanup runs before the conductors have rolled out", PROGRAM),
    _m("order-cleanup-after-keystone", "components/controlplane.py",
       "*self.api.services, self.keystone.job]", "*self.api.services]",
       "the cleanup calls the compute API before it is in Keystone's catalog", PROGRAM),
    _m("order-keystone-registration-after-its-config", "components/keystone.py",
       "depends_on=[self.config_secret]", "depends_on=[]",
       "the Keystone registration Job may start before its config Secret exists", PROGRAM),

    # --- secret marking ---------------------------------------------------------------------
    _equivalent("secret-cell-service-config", "components/cell.py",
       "return pulumi.Output.secret(credentials.apply(", "return pulumi.Output.unsecret(credentials.apply(",
       "a cell service's config Secret (database and bus passwords) goes in clear text",
       _K8S_SECRET),
    _equivalent("secret-top-level-service-config", "components/controlplane.py",
       "files: pulumi.Output[dict[str, str]] = pulumi.Output.secret(\n                creds.apply(",
       "files: pulumi.Output[dict[str, str]] = pulumi.Output.unsecret(\n                creds.apply(",
       "nova-api's, nova-scheduler's and nova-metadata's config Secrets go in clear text",
       _K8S_SECRET),
    _m("secret-top-level-metadata-neutron-config", "components/controlplane.py",
       "self.metadata_neutron_config = pulumi.Output.secret(self.credentials",
       "self.metadata_neutron_config = pulumi.Output.unsecret(self.credentials",
       "the metadata shared secret reaches the data plane as a plain Output", PROGRAM),
    _m("secret-cell-metadata-neutron-config", "components/cell.py",
       "self.metadata_neutron_config = pulumi.Output.secret(\n                credentials.apply(",
       "self.metadata_neutron_config = pulumi.Output.unsecret(\n                credentials.apply(",
       "a cell's metadata shared secret reaches the data plane as a plain Output", PROGRAM),
    _m("secret-compute-config", "components/cell.py",
       "self.compute_config = pulumi.Output.secret(", "self.compute_config = pulumi.Output.unsecret(",
       "the computes' nova.conf (bus and keystone passwords) reaches the data plane as a plain Output", PROGRAM),
    _equivalent("secret-cleanup-config", "components/cleanup.py",
       "files: pulumi.Output[dict[str, str]] = pulumi.Output.secret(",
       "files: pulumi.Output[dict[str, str]] = pulumi.Output.unsecret(",
       "the cleanup Job's clouds.yaml (nova's keystone password) goes in clear text",
       _K8S_SECRET),
    _equivalent("secret-keystone-config", "components/keystone.py",
       "files: pulumi.Output[dict[str, str]] = pulumi.Output.secret(",
       "files: pulumi.Output[dict[str, str]] = pulumi.Output.unsecret(",
       "the registration Job's clouds.yaml (nova's keystone password) goes in clear text",
       _K8S_SECRET),
    _m("secret-given-migration-key", "components/migrationkey.py",
       "self.private_key = pulumi.Output.secret(given.private_key.reveal())",
       "self.private_key = pulumi.Output.from_input(given.private_key.reveal())",
       "a migration private key from the stack config becomes a plain Output", PROGRAM),
    _equivalent("secret-libvirt-secrets", "components/libvirt.py",
       "string_data=pulumi.Output.secret(data),", "string_data=data,",
       "libvirt's SASL password and TLS keys go in clear text to their Secrets",
       "pulumi_kubernetes' Secret marks its stringData secret itself, and each value in it is secret "
       "already (the password from secret_or_generated, the keys as their resources' secret outputs)"),
    _m("secret-libvirt-public-files", "components/edpm/services/libvirt.py",
       "shown = {k: v for k, v in node_certs.items() if k in _PUBLIC_TLS}", "shown = dict(node_certs)",
       "a node's libvirt TLS key is shown in preview with its certificate", PROGRAM),
    _m("secret-credentials", "components/credentials.py",
       "return pulumi.Output.secret(pulumi.Output.all(", "return pulumi.Output.unsecret(pulumi.Output.all(",
       "renderers get the credentials as a plain Output", PROGRAM),
    _m("secret-given-value", "components/generated.py",
       "return pulumi.Output.secret(given)", "return pulumi.Output.from_input(given)",
       "a password from the stack config becomes a plain Output", PROGRAM),
    _m("secret-run-ssh-key", "components/ansible_runner/playbook.py",
       '"ssh_private_key": secret(ssh_private_key),', '"ssh_private_key": ssh_private_key,',
       "a run's SSH key is kept as given, in clear text when given so", PLAYBOOK),
    _m("secret-run-files", "components/ansible_runner/playbook.py",
       '"files": secret(files or {}),', '"files": files or {},',
       "a run's secret files are kept as given, in clear text when given so", PLAYBOOK),
    _m("secret-run-shared-output", "components/ansible_runner/playbook.py",
       "return pulumi.Output.secret(True).apply(lambda _: value)", "return value",
       "an Output many runs share goes into each run as given, in clear text when given so", PLAYBOOK),
    _m("secret-shared-inputs-by-their-parts", "components/dataplane.py",
       'return ("derived", value.make, tuple(self._key(p) for p in value.parts), value.secret)',
       'return ("derived", value.make, value.secret)',
       "nodes share one Output of what a service derives even where its parts differ (a node's own "
       "snippets, another cell's config, another node's TLS certificate)", PROGRAM),
    _m("secret-shared-inputs-outputs-by-identity", "components/dataplane.py",
       "        return _Identity(value)\n", '        return "an output"\n',
       "nodes share what is derived from different Outputs (another cell's config, another node's "
       "libvirt certificate)", PROGRAM),
    _m("secret-run-outputs", "components/ansible_runner/playbook.py",
       'additional_secret_outputs=["ssh_private_key", "files"]', 'additional_secret_outputs=["ssh_private_key"]',
       "the engine keeps a run's secret files in clear text among its outputs", PLAYBOOK),
    _m("secret-refresh-keeps-files", "components/ansible_runner/playbook.py",
       'for key in ("ssh_private_key", "files"):', 'for key in ("ssh_private_key",):',
       "a refresh writes a run's secret files back to state in clear text", PLAYBOOK),
    _m("secret-refresh-marks", "components/ansible_runner/playbook.py",
       'state[key] = {rpc._special_sig_key: rpc._special_secret_sig, "value": props.get(key)}',
       "state[key] = props.get(key)",
       "a refresh writes a run's SSH key and secret files back to state in clear text", PLAYBOOK),
    _m("secret-generated-value", "components/generated.py",
       'additional_secret_outputs=["value"]', "additional_secret_outputs=[]",
       "a generated password is kept in clear text in state", PROGRAM),
    _m("secret-generated-ssh-key", "components/generated.py",
       'additional_secret_outputs=["private_key"]', "additional_secret_outputs=[]",
       "the generated migration private key is kept in clear text in state", PROGRAM),
    _m("secret-ca-key", "components/certificates.py",
       'additional_secret_outputs=["key_pem"]),\n', "additional_secret_outputs=[]),\n",
       "libvirt's CA key is kept in clear text in state", (*PROGRAM, f"{UNIT}/test_certificates.py")),
    _m("secret-certificate-ca-key", "components/certificates.py",
       'additional_secret_outputs=["key_pem", "ca_key_pem"]', 'additional_secret_outputs=["key_pem"]',
       "each node certificate keeps a copy of the CA key in clear text in state",
       (*PROGRAM, f"{UNIT}/test_certificates.py")),
    _m("secret-snippets-go-one-way", "components/render/edpm.py",
       "for name, text, is_secret in pairs if text.strip() and is_secret == secret}",
       "for name, text, is_secret in pairs if text.strip()}",
       "a customServiceConfig snippet that sets a secret option is also shown in preview", (*RENDER, *PROGRAM)),
    _m("secret-nova-snippet-copied-as-secret", "components/edpm/services/nova.py",
       "with_secret_files(given, SECRET_FILES_VAR, list(secret_extra))",
       "with_secret_files(given, SECRET_FILES_VAR, [])",
       "edpm_nova copies a snippet with secret options 0644 and logs it", PROGRAM),
    _m("secret-metadata-snippet-copied-as-secret", "components/edpm/services/neutron_metadata.py",
       "SECRET_FILES_VAR, list(secret_extra)),", "SECRET_FILES_VAR, []),",
       "edpm_neutron_metadata copies a snippet with secret options 0644 and logs it", PROGRAM),
    _m("secret-nova-role-no-log", "ansible/roles/edpm_nova/tasks/configure.yml",
       "  loop: \"{{ edpm_nova_dest_files | intersect(edpm_nova_all_secret_files) }}\"\n"
       "  diff: false\n  no_log: true\n",
       "  loop: \"{{ edpm_nova_dest_files | intersect(edpm_nova_all_secret_files) }}\"\n"
       "  diff: false\n",
       "edpm_nova logs the secret files it copies", ROLES),
    _m("secret-neutron-metadata-role-no-log", "ansible/roles/edpm_neutron_metadata/tasks/configure.yml",
       "  loop: \"{{ edpm_neutron_metadata_conf_files | intersect(edpm_neutron_metadata_all_secret_files) }}\"\n"
       "  diff: false\n  no_log: true\n",
       "  loop: \"{{ edpm_neutron_metadata_conf_files | intersect(edpm_neutron_metadata_all_secret_files) }}\"\n"
       "  diff: false\n",
       "edpm_neutron_metadata logs 05-nova-metadata.conf (the shared secret) as it copies it", ROLES),

    # --- renderers: one line of each rendered file ------------------------------------------
    _m("render-load-balancer-dns-hostname", "components/render/services.py",
       "annotations.setdefault(DNSMASQ_HOSTNAME, names.service_host(name, namespace))",
       "annotations.get(DNSMASQ_HOSTNAME)",
       "a LoadBalancer Service lacks dnsmasq's hostname annotation: the data plane's DNS never serves its name",
       (f"{UNIT}/test_exposure.py", f"{UNIT}/test_program_shape.py")),
    _m("render-service-type-from-override", "components/workload.py",
       "type=endpoint.type,", "type=None,",
       "every Service stays ClusterIP whatever its override says: the nodes cannot reach the metadata service",
       (f"{UNIT}/test_exposure.py", f"{UNIT}/test_program_shape.py")),
    _m("render-metadata-service-reachable-from-nodes", "components/edpm/services/neutron_metadata.py",
       "yield from _reachable(settings, node_set.name, *used)", "pass",
       "a ClusterIP metadata Service that the nodes' agents cannot reach passes the preview",
       (f"{UNIT}/test_exposure.py",)),
    _m("render-compute-driver", "components/templates/nova.conf.j2",
       "compute_driver = libvirt.LibvirtDriver\n", "",
       "nova-compute has no libvirt driver", RENDER),
    _m("render-api-policy-defaults", "components/templates/nova.conf.j2",
       "enforce_new_defaults = true", "enforce_new_defaults = false",
       "nova-api enforces the old, deprecated policy defaults", RENDER),
    _m("render-scheduler-discovers-hosts", "components/templates/nova.conf.j2",
       "discover_hosts_in_cells_interval = 900", "discover_hosts_in_cells_interval = -1",
       "the scheduler never maps new computes to their cell", RENDER),
    _m("render-conductor-workers", "components/templates/nova.conf.j2",
       "# scale with replicas, not with processes\nworkers = 1",
       "# scale with replicas, not with processes\nworkers = 4",
       "each conductor pod runs several workers", RENDER),
    _m("render-metadata-shared-secret", "components/templates/nova.conf.j2",
       "metadata_proxy_shared_secret = {{ metadata_shared_secret | ini }}\n", "",
       "nova-metadata does not check neutron's signed requests", RENDER),
    _m("render-novncproxy-listens-everywhere", "components/templates/nova.conf.j2",
       "novncproxy_host = ::0", "novncproxy_host = 127.0.0.1",
       "the noVNC proxy listens on its pod's loopback only", RENDER),
    _m("render-compute-vnc-address", "components/templates/nova.conf.j2",
       "server_proxyclient_address = $my_ip", "server_proxyclient_address = 127.0.0.1",
       "the proxy reaches a compute's consoles at the proxy's own loopback", RENDER),
    _m("render-service-token-roles", "components/templates/nova.conf.j2",
       "service_token_roles_required = true", "service_token_roles_required = false",
       "any token passes as a service token (CVE-2023-2088)", RENDER),
    _m("render-migration-keyfile", "components/templates/nova.conf.j2",
       "live_migration_uri = qemu+ssh://nova@%s/system?keyfile=/var/lib/nova/.ssh/ssh-privatekey",
       "live_migration_uri = qemu+ssh://nova@%s/system",
       "live migration over SSH does not use the migration key", RENDER),
    _m("render-password-escaped", "components/templates/nova.conf.j2",
       "password = {{ keystone.password | ini }}", "password = {{ keystone.password }}",
       "a `$` in nova's keystone password is substituted by oslo.config", RENDER),
    _equivalent("render-database-url-escaped", "components/templates/nova.conf.j2",
       "connection = {{ conn | ini }}", "connection = {{ conn }}",
       "a `$` in a database password is substituted by oslo.config",
       "database_url quotes the account and the password (a `$` becomes %24): a database URL holds no "
       "`$` to escape"),
    _m("render-host-specific-host", "components/templates/nova-host-specific.conf.j2",
       "host = {{ host }}\n", "",
       "a compute registers under its system host name, not the node's hostName", RENDER),
    _m("render-host-specific-tls-uri", "components/templates/nova-host-specific.conf.j2",
       "live_migration_uri = qemu+tls://%s/system", "live_migration_uri = qemu+ssh://%s/system",
       "with TLS, nova still migrates over SSH", RENDER),
    _m("render-neutron-metadata-port", "components/templates/neutron-metadata.conf.j2",
       "nova_metadata_port = {{ port }}", "nova_metadata_port = 8774",
       "the agent asks nova-api's port for metadata", RENDER),
    _m("render-neutron-metadata-shared-secret", "components/templates/neutron-metadata.conf.j2",
       "metadata_proxy_shared_secret = {{ shared_secret | ini }}", "metadata_proxy_shared_secret =",
       "the agent signs metadata requests with an empty secret", RENDER),
    _m("render-agent-workers", "components/templates/neutron-metadata/agent.conf.j2",
       "metadata_workers = 2", "metadata_workers = 0",
       "the agent serves metadata in its own process, not upstream's two workers", RENDER),
    _m("render-agent-ovn-database", "components/templates/neutron-metadata/ovn.conf.j2",
       "ovn_sb_connection = {{ sb_connection | ini }}", "ovn_sb_connection = tcp:127.0.0.1:6642",
       "the agent looks for OVN's southbound database on its own node", RENDER),
    _m("render-rootwrap-kill-scripts", "components/templates/neutron-metadata/rootwrap.conf.j2",
       "/usr/local/sbin,{{ kill_scripts_dir }}", "/usr/local/sbin",
       "rootwrap refuses to run the haproxy kill script", RENDER),
    _m("render-haproxy-netns-volume", "components/templates/neutron-metadata/haproxy-wrapper.sh.j2",
       "  --volume /run/netns:/run/netns:shared \\\n", "",
       "each network's haproxy container cannot see the network namespaces", RENDER),
    _m("render-libvirt-tls-listener", "components/templates/libvirt/modular-daemon.conf.j2",
       "listen_tls = {{ 1 if tls else 0 }}", "listen_tls = 1",
       "virtproxyd listens for TLS on nodes without TLS", RENDER),
    _m("render-libvirt-tls-sasl", "components/templates/libvirt/modular-daemon.conf.j2",
       'auth_tls = "sasl"', 'auth_tls = "none"',
       "libvirt's TLS listener lets peers in without SASL", RENDER),
    _m("render-qemu-verifies-peers", "components/templates/libvirt/qemu.conf.j2",
       "default_tls_x509_verify = 1", "default_tls_x509_verify = 0",
       "qemu's TLS migration streams accept any peer", RENDER),
    _m("render-qemu-migration-ports", "components/templates/libvirt/qemu.conf.j2",
       "migration_port_min = {{ migration_ports[0] }}", "migration_port_min = 49152",
       "qemu migrates on ports the node's firewall keeps closed", RENDER),
    _m("render-sasl-mechanism", "components/templates/libvirt/sasl2-libvirt.conf.j2",
       "mech_list: scram-sha-256", "mech_list: digest-md5",
       "libvirt's SASL takes a broken mechanism", RENDER),
    _m("render-libvirt-auth-password", "components/templates/libvirt/auth.conf.j2",
       "password={{ password }}", "password=",
       "libvirt gives peers an empty migration password", RENDER),
    _m("render-firewall-tls-port", "components/render/libvirt.py",
       '"ports": str(TLS_PORT)', '"ports": "16509"',
       "the firewall opens libvirt's plain TCP port instead of its TLS port", RENDER),
    _m("render-ceph-secret-usage", "components/templates/libvirt/secret.xml.j2",
       "<name>{{ usage }}</name>", "<name>{{ uuid }}</name>",
       "libvirt's Ceph secret is named so nova's rbd user never finds it", RENDER),
    _m("render-migration-ssh-checks-host-keys", "ansible/roles/edpm_nova/files/ssh-config",
       "StrictHostKeyChecking yes", "StrictHostKeyChecking no",
       "nova's migration SSH accepts any host key", ROLES),
    _m("render-migration-ssh-key", "ansible/roles/edpm_nova/files/ssh-config",
       "IdentityFile /var/lib/nova/.ssh/ssh-privatekey", "IdentityFile /var/lib/nova/.ssh/id_rsa",
       "nova's migration SSH offers a key that is not the migration key", ROLES),
    _m("render-known-hosts-host-names", "components/render/edpm.py",
       "names = dict.fromkeys((node.host_name, node.name, node.ansible_host))",
       "names = dict.fromkeys((node.name, node.ansible_host))",
       "a peer reached by its host name (as nova migrates) is not known", RENDER),
    _m("render-known-hosts-port", "components/render/edpm.py",
       "{','.join(lookup_name(n, port) for n in names)}", "{','.join(names)}",
       "off port 22, ssh never finds the peers' keys", RENDER),
    _m("render-nova-snippet-reaches-node", "components/edpm/services/nova.py",
       "            **nova_extra_files(node_set, node)}", "}",
       "nova's customServiceConfig never reaches the node", (*PROGRAM, *RENDER)),
    _m("render-nova-secret-snippet-reaches-node", "components/edpm/services/nova.py",
       "own_files = derive(merged, own_files, secret_extra)", "own_files = own_files",
       "nova's customServiceConfig with secret options never reaches the node", (*PROGRAM, *RENDER)),
    _m("render-metadata-snippet-reaches-node", "components/edpm/services/neutron_metadata.py",
       "public = {**neutron_metadata_agent_files(layout, agent.ovn), **neutron_metadata_extra_files(node_set, node)}",
       "public = {**neutron_metadata_agent_files(layout, agent.ovn)}",
       "the neutron-metadata customServiceConfig never reaches the node", (*PROGRAM, *RENDER)),
    _m("render-metadata-secret-snippet-reaches-node", "components/edpm/services/neutron_metadata.py",
       "files=derive(merged, metadata, secret_extra) if secret_extra else metadata,", "files=metadata,",
       "the neutron-metadata customServiceConfig with secret options never reaches the node", (*PROGRAM, *RENDER)),
    _m("render-host-specific-tls", "components/edpm/services/nova.py",
       "host_specific_conf(node.ansible_host, node.host_name, tls=node_set.tls_enabled)",
       "host_specific_conf(node.ansible_host, node.host_name, tls=False)",
       "a node set with TLS still migrates over SSH", (*PROGRAM, *RENDER)),
    _m("render-pod-custom-config", "components/render/nova_conf.py",
       "    if custom.strip():\n        files[OVERRIDE_CONF]",
       "    if not custom.strip():\n        files[OVERRIDE_CONF]",
       "a service template's customServiceConfig never reaches its pods", RENDER),
    _m("render-metadata-role-deploys-snippets", "ansible/roles/edpm_neutron_metadata/tasks/configure.yml",
       "{{ (edpm_neutron_metadata_src_files | select('match', '.*metadata.*conf$') | list",
       "{{ (edpm_neutron_metadata_src_files | select('match', '.*nova-metadata.*conf$') | list",
       "edpm_neutron_metadata drops the customServiceConfig snippets (25-/26-neutron-metadata-extra*.conf)", ROLES),
    _m("render-wsgi-two-processes", "components/templates/nova-wsgi.conf.j2",
       "processes=2 threads=1", "processes=1 threads=1",
       "one WSGI process per API pod: a slow request starves the probes, and the pod restarts", (*RENDER, *RELEASES)),

    # --- what each nova release gets ----------------------------------------------------------
    _m("render-release-antelope-wsgi-entry", "components/settings/releases.py",
       'api=WsgiApp("nova.api.openstack.compute.wsgi", factory="init_application"),',
       'api=WsgiApp("nova.wsgi.osapi_compute"),',
       "under antelope's images nova-api imports a module nova 27 lacks: every request answers 500", RELEASES),
    _m("render-release-antelope-transient-quorum", "components/settings/releases.py",
       "transient_quorum_queues=False,", "transient_quorum_queues=True,",
       "antelope's services are given an option their oslo.messaging does not know", RELEASES),
    _m("render-release-antelope-oslo-limit", "components/settings/releases.py",
       "oslo_limit_endpoint_lookup=False,", "oslo_limit_endpoint_lookup=True,",
       "antelope's services are given [oslo_limit] options their oslo.limit does not know", RELEASES),
    _m("render-release-own-images-name-it", "components/settings/load.py",
       "    if version is None and own and not wrong_type:", "    if False:",
       "a stack of its own nova images gets the config of the default images' nova, whatever its images hold",
       RELEASES),

    # --- the order in which nova and the agent load their files -------------------------------
    _m("files-node-snippet-after-node-sets", "components/render/edpm.py",
       'NOVA_EXTRA_HOST = "26-nova-extra-host.conf"', 'NOVA_EXTRA_HOST = "24-nova-extra-host.conf"',
       "the node set's nova snippet overrides the node's own", (*RENDER, *PROGRAM)),
    _m("files-node-metadata-snippet-after-node-sets", "components/render/edpm.py",
       'NEUTRON_METADATA_EXTRA_HOST = "26-neutron-metadata-extra-host.conf"',
       'NEUTRON_METADATA_EXTRA_HOST = "24-neutron-metadata-extra-host.conf"',
       "the node set's neutron-metadata snippet overrides the node's own", (*RENDER, *PROGRAM)),
    _m("files-host-specific-after-nova-conf", "components/render/nova_conf.py",
       'HOST_SPECIFIC_CONF = "02-nova-host-specific.conf"', 'HOST_SPECIFIC_CONF = "00-nova-host-specific.conf"',
       "01-nova.conf overrides the node's own host, address and migration URI", (*RENDER, *PROGRAM)),
    _m("files-override-after-nova-conf", "components/render/nova_conf.py",
       'OVERRIDE_CONF = "02-nova-override.conf"', 'OVERRIDE_CONF = "00-nova-override.conf"',
       "a pod's customServiceConfig loads before 01-nova.conf, which overrides it", RENDER),
    _m("files-metadata-conf-before-snippets", "components/render/metadata.py",
       'METADATA_CONF = "05-nova-metadata.conf"', 'METADATA_CONF = "50-nova-metadata.conf"',
       "nova's metadata file overrides the user's neutron-metadata snippets", (*RENDER, *ROLES)),
    _m("files-compute-loads-snippets", "components/render/kolla.py",
       '_copy(f"{src}/*nova*.conf", "/etc/nova/nova.conf.d/", merge=True)',
       '_copy(f"{src}/0*nova*.conf", "/etc/nova/nova.conf.d/", merge=True)',
       "kolla copies only 0x- nova files: nova-compute never loads the customServiceConfig snippets", RENDER),

    # --- PlaybookRun: when a node is configured again ----------------------------------------
    _m("run-roles-fingerprint-input", "components/ansible_runner/playbook.py",
       '"roles": roles_fingerprint(playbook),', '"roles": "",',
       "a run does not record the roles it runs with: a changed role re-runs nothing", PLAYBOOK),
    _m("run-roles-are-a-run-input", "components/ansible_runner/playbook.py",
       'RUN_INPUTS = ("playbook", "roles", "host",', 'RUN_INPUTS = ("playbook", "host",',
       "a changed role re-runs nothing", PLAYBOOK),
    _m("run-fingerprint-ansible-cfg", "components/ansible_runner/playbook.py",
       'files = [ansible_dir / "ansible.cfg", ansible_dir / "playbooks" / playbook]',
       'files = [ansible_dir / "playbooks" / playbook, ansible_dir / "playbooks" / playbook]',
       "a changed ansible.cfg re-runs nothing", PLAYBOOK),
    _m("run-fingerprint-nested-roles", "components/ansible_runner/playbook.py",
       "            pending += role_files", "            pending += []",
       "a changed role that another role imports re-runs nothing", PLAYBOOK),
    _m("run-fingerprint-content", "components/ansible_runner/playbook.py",
       'digest.update(path.read_bytes() + b"\\0")', 'digest.update(b"\\0")',
       "an edited role file re-runs nothing (only names count)", PLAYBOOK),
    _m("run-refresh-compares-roles", "components/ansible_runner/playbook.py",
       'if props.get("roles") != roles_fingerprint(props["playbook"]):', "if False:",
       "a refresh checks a node with roles its run was not made with", PLAYBOOK),
    _m("run-refresh-finds-drift", "components/ansible_runner/playbook.py",
       'in_sync = run_playbook(props, check=True)["changed"] == 0', "in_sync = True",
       "a refresh never finds a drifted node", PLAYBOOK),
    _m("run-drift-means-a-run", "components/ansible_runner/playbook.py",
       ' or olds.get("in_sync") is False', "",
       "a node a refresh found drifted is not configured again", PLAYBOOK),
    _m("run-deployed-hash-covers-public-files", "components/ansible_runner/playbook.py",
       '"deployed_hash": config_hash(all_files),', '"deployed_hash": config_hash(props.get("files", {})),',
       "deployedHashes ignore the files shown in preview (nova's own config, the agent's files)", PLAYBOOK),
    _m("run-recorded-results-kept", "components/ansible_runner/playbook.py",
       "return UpdateResult(outs={**news, **{key: olds.get(key) for key in _RESULTS}})",
       "return UpdateResult(outs={**news})",
       "recording a new URN forgets the last run's hash and in-sync state", PLAYBOOK),

    # --- the Ansible runner: what a run reports, and stacks made before its type names ----------
    _m("run-events-no-log-censored", "ansible/callback_plugins/openstack_nova_events.py",
       "            if _censored(result):", "            if False:",
       "a failed task with no_log writes its output (secrets) to the run's events and its failure message", RUNNER),
    _m("run-ignored-failure-is-no-failure", "components/ansible_runner/events.py",
       ' and not event.get("ignored"):', ":",
       "a failure Ansible ignored (ignore_errors) is reported as what stopped the run", RUNNER),
    _m("run-failure-names-the-failed-task", "components/ansible_runner/failures.py",
       'stop = (run.get("failure") if failed else None) or run', "stop = run",
       "a failure names the task started last, not the one that failed", RUNNER),
    _m("run-failure-says-what-the-command-said", "components/ansible_runner/failures.py",
       'lines += [f"  {line}" for line in output.splitlines()[-OUTPUT_LINES:]]', "lines += []",
       "a failed command's failure leaves out what the command said", RUNNER),
    _m("run-no-recap-is-no-success", "components/ansible_runner/failures.py",
       'if (run or {}).get("stats") is None:', "if False:",
       "a run Ansible reported nothing of (its callback not loaded) passes as one that changed nothing, and a "
       "refresh finds such a node in sync", RUNNER),
    _m("run-recap-from-events", "components/ansible_runner/playbook.py",
       'changed, ok = int(recap.get("changed", 0)), int(recap.get("ok", 0))',
       'changed, ok = 0, int(recap.get("ok", 0))',
       "a run that changed its node reports no change: a refresh never finds drift", RUNNER),
    _m("run-progress-while-running", "components/ansible_runner/runguard.py",
       "            self.read_events()\n            time.sleep(0.2)", "            time.sleep(0.2)",
       "a run's progress shows only once it has ended", RUNNER),
    _m("run-legacy-type-alias", "components/dynamictypes.py",
       "aliases=[pulumi.Alias(type_=LEGACY_TYPE)]", "aliases=[]",
       "every dynamic resource of an existing stack is replaced: its node's services stopped and configured "
       "anew, its generated passwords, keys and certificates made again", RUNNER),
    _m("run-renamed-urn-records-nothing", "components/ansible_runner/playbook.py",
       '\n                    and not (key == "state_urn" and renamed_urn(str(olds.get(key)), TYPE) == news.get(key))',
       "", "every PlaybookRun of an existing stack is updated once, to record its new URN", RUNNER),
    _m("run-old-module-path", "components/playbook.py",
       "from components.ansible_runner.playbook import _PlaybookProvider\n", "_PlaybookProvider = None\n",
       "a stack made before the runner moved cannot delete or refresh its runs: their provider does not load",
       RUNNER),
)


# --- checking the list ------------------------------------------------------------------------

def _pattern(old: str) -> re.Pattern[str]:
    """`old` as it stands in its file however it is laid out: whitespace inside it, and after an
    opening bracket or a comma or before a closing one, matches any whitespace (or none), so a
    reformat that wraps or indents the code keeps the mutant. Whitespace at its ends is matched as
    it is (an indentation the new text keeps)."""
    core = old.strip()
    lead, trail = old[:len(old) - len(old.lstrip())], old[len(old.rstrip()):]
    parts: list[str] = [re.escape(lead)]
    for char in core:
        if char.isspace():
            if parts[-1:] != [r"\s*"]:
                parts.append(r"\s*")
            continue
        if char in ")]}" and parts[-1:] != [r"\s*"]:
            parts.append(r"\s*")
        parts.append(re.escape(char))
        if char in "([{,":
            parts.append(r"\s*")
    parts.append(re.escape(trail))
    return re.compile("".join(parts))


def occurrences(mutant: Mutant, text: str) -> list[re.Match[str]]:
    """Where the mutant's old text stands in `text`."""
    return list(_pattern(mutant.old).finditer(text))


def problems(mutants: Sequence[Mutant] = MUTANTS, root: Path = ROOT, *, texts: bool = True) -> list[str]:
    """What is wrong with the list against the tree at `root`: old texts that moved (with `texts`:
    what `make mutants` checks before it runs them), selections that name no test file,
    integration tests that do not exist, ids given twice."""
    found: list[str] = []
    seen: set[str] = set()
    for m in mutants:
        where = f"{m.id} ({m.file})"
        if m.id in seen:
            found.append(f"{m.id}: the id is given twice")
        seen.add(m.id)
        if m.old == m.new:
            found.append(f"{where}: the new text is the old one")
        if not m.breaks.strip():
            found.append(f"{where}: say what it breaks")
        path = root / m.file
        if not path.is_file():
            found.append(f"{where}: no such file")
        elif texts:
            count = len(occurrences(m, path.read_text()))
            if count != 1:
                found.append(f"{where}: the old text stands {count} times, not once: the code moved; "
                             f"update the entry\n    old text: {m.old!r}")
        if m.killed_by_integration:
            test_file, _, rest = m.killed_by_integration.partition("::")
            test_name = rest.split(":", 1)[0]
            target = root / test_file
            if not (test_file.startswith("tests/integration/") and target.is_file()
                    and f"def {test_name}(" in target.read_text()):
                found.append(f"{where}: killed_by_integration names no integration test "
                             f"(tests/integration/<file>::<test>: why): {m.killed_by_integration!r}")
        if m.equivalent and (m.killed_by_integration or m.tests):
            found.append(f"{where}: an equivalent mutant is run by no test")
        elif not m.tests and not m.killed_by_integration and not m.equivalent.strip():
            found.append(f"{where}: no tests to run")
        for test in m.tests:
            if not (root / test).is_file():
                found.append(f"{where}: no test file {test}")
    return found


# --- running them -----------------------------------------------------------------------------

def _tracked_files(root: Path) -> list[str]:
    """The files of the working tree as they are (tracked, and untracked but not ignored)."""
    listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            check=True, capture_output=True, text=True).stdout
    return sorted({f for f in listed.split("\0") if f and (root / f).is_file() and not (root / f).is_symlink()})


@contextmanager
def tree_copy(root: Path = ROOT) -> Iterator[Path]:
    """A copy of the working tree (no .git, no caches) with the checkout's .venv linked in."""
    with tempfile.TemporaryDirectory(prefix="openstack-nova-mutants-") as tmp:
        copy = Path(tmp) / "tree"
        for rel in _tracked_files(root):
            target = copy / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / rel, target)
        if (root / ".venv").exists():
            (copy / ".venv").symlink_to((root / ".venv").resolve())
        yield copy


@contextmanager
def applied(mutant: Mutant, tree: Path) -> Iterator[None]:
    """`mutant` applied to the copy `tree`, restored after whatever happens."""
    path = tree / mutant.file
    original = path.read_text()
    found = occurrences(mutant, original)
    if len(found) != 1:
        raise ValueError(f"{mutant.id}: the old text does not stand once in {mutant.file}")
    start, end = found[0].span()
    path.write_text(original[:start] + mutant.new + original[end:])
    try:
        yield
    finally:
        path.write_text(original)


def _failures(output: str) -> tuple[str, ...]:
    """The tests pytest's short summary names as failed or in error."""
    found = []
    for line in output.splitlines():
        for word in ("FAILED ", "ERROR "):
            if line.startswith(word):
                found.append(line[len(word):].split(" - ", 1)[0].strip())
    return tuple(dict.fromkeys(found))


_RUNNING: set[subprocess.Popen[str]] = set()
_RUNNING_LOCK = threading.Lock()
_STOPPING = threading.Event()


def _stop_all() -> None:
    """Stops every pytest still running (each in a session of its own), and whatever it started."""
    _STOPPING.set()
    with _RUNNING_LOCK:
        for proc in _RUNNING:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)


def run_tests(tree: Path, tests: Sequence[str], first: bool, timeout: int = TIMEOUT) -> tuple[int | None, str]:
    """pytest on `tests` in `tree`: (exit status, output); None when it ran past `timeout`."""
    argv = [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider", "--no-header",
            *(["-x"] if first else []), *tests]
    # no bytecode: a mutated file and its original may share a size and a second
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.Popen(argv, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    with _RUNNING_LOCK:
        _RUNNING.add(proc)
    try:
        out, _ = proc.communicate(timeout=timeout)
        if _STOPPING.is_set():
            raise SystemExit("stopped")  # not an outcome: the run was interrupted
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out
    finally:
        with _RUNNING_LOCK:
            _RUNNING.discard(proc)


def run_mutant(mutant: Mutant, tree: Path, *, whole_suite: bool, timeout: int = TIMEOUT) -> Outcome:
    if mutant.equivalent:
        return Outcome(mutant, "equivalent", (mutant.equivalent,))
    if mutant.killed_by_integration:
        test, _, _why = mutant.killed_by_integration.partition(": ")
        return Outcome(mutant, "integration", (test,))
    start = time.monotonic()
    with applied(mutant, tree):
        status, output = run_tests(tree, [UNIT] if whole_suite else mutant.tests, first=whole_suite,
                                   timeout=timeout)
    seconds = time.monotonic() - start
    if status is None:
        return Outcome(mutant, "killed", (f"(a test hung: stopped after {timeout}s)",), seconds)
    if status == 0:
        return Outcome(mutant, "survived", (), seconds)
    failed = _failures(output)
    if status in (1, 2) and failed:
        return Outcome(mutant, "killed", failed, seconds)
    tail = " | ".join(output.strip().splitlines()[-3:])
    return Outcome(mutant, "error", (f"pytest exited {status}: {tail}",), seconds)


def _short(test: str) -> str:
    return test.removeprefix(f"{UNIT}/")


def _row(outcome: Outcome, width: int) -> str:
    by = outcome.by
    shown = _short(by[0]) if by else ""
    if len(by) > 1:
        shown += f" (+{len(by) - 1} more)"
    return f"{outcome.mutant.id:<{width}}  {outcome.status:<11}  {shown}"


def run_mutants(chosen: Sequence[Mutant], *, whole_suite: bool, jobs: int, timeout: int,
                width: int) -> list[Outcome] | None:
    """Each of `chosen` in a copy of the tree, `jobs` at once; None when the tests fail unmutated."""
    run = [m for m in chosen if not (m.killed_by_integration or m.equivalent)]
    jobs = max(1, min(jobs, len(run) or 1))
    selection = sorted({t for m in run for t in m.tests}) if not whole_suite else [UNIT]
    with ExitStack() as stack:
        copies = [stack.enter_context(tree_copy()) for _ in range(jobs)]
        try:
            # the unmutated tree first: a selection that fails as it is kills nothing
            status, output = run_tests(copies[0], selection, first=False, timeout=max(timeout, 1800))
            if status != 0:
                print("the unit tests fail without any mutant:", *_failures(output) or [output[-2000:]],
                      sep="\n  ", file=sys.stderr)
                return None
            print(f"{len(chosen)} mutants, {len(run)} run against "
                  f"{'the whole unit suite' if whole_suite else 'their selections'} ({jobs} at once)", flush=True)
            pool: Queue[Path] = Queue()
            for copy in copies:
                pool.put(copy)

            def one(mutant: Mutant) -> Outcome:
                if _STOPPING.is_set():
                    raise SystemExit(1)
                tree = pool.get()
                try:
                    outcome = run_mutant(mutant, tree, whole_suite=whole_suite, timeout=timeout)
                finally:
                    pool.put(tree)
                print(f"  {_row(outcome, width)}  [{outcome.seconds:.0f}s]", flush=True)
                return outcome

            with ThreadPoolExecutor(max_workers=jobs) as executor:
                futures = [executor.submit(one, m) for m in chosen]
                try:
                    return [f.result() for f in futures]
                except BaseException:
                    _stop_all()
                    for future in futures:
                        future.cancel()
                    raise
        except BaseException:
            _stop_all()  # interrupted: no pytest outlives this, no copy stays behind
            raise


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.mutants", description=__doc__.split("\n\n")[0])
    parser.add_argument("--all", action="store_true",
                        help="run the whole unit suite for each mutant (stops at its first failure)")
    parser.add_argument("--only", nargs="+", metavar="ID", help="run these mutants only")
    parser.add_argument("--jobs", "-j", type=int, default=1, help="mutants run at once, each in its own copy")
    parser.add_argument("--timeout", type=int, default=TIMEOUT, help="seconds a mutant's tests may take")
    parser.add_argument("--check", action="store_true", help="only check that the list matches the code")
    parser.add_argument("--list", action="store_true", help="print the list: id, file, what it breaks")
    parser.add_argument("--verbose", "-v", action="store_true", help="name every test that killed a mutant")
    args = parser.parse_args(argv)

    wrong = problems()
    if wrong:
        print("tools/mutants.py: the list does not match the code:", *wrong, sep="\n  ", file=sys.stderr)
        return 2
    chosen = list(MUTANTS)
    if args.only:
        unknown = sorted(set(args.only) - {m.id for m in MUTANTS})
        if unknown:
            print(f"unknown mutants: {', '.join(unknown)}", file=sys.stderr)
            return 2
        chosen = [m for m in MUTANTS if m.id in args.only]
    width = max(len(m.id) for m in chosen)
    if args.list:
        for m in chosen:
            print(f"{m.id:<{width}}  {m.file}: {m.breaks}")
        return 0
    if args.check:
        print(f"{len(MUTANTS)} mutants; every old text stands once in its file")
        return 0

    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    outcomes = run_mutants(chosen, whole_suite=args.all, jobs=args.jobs, timeout=args.timeout, width=width)
    if outcomes is None:
        return 2
    print()
    print(f"{'mutant':<{width}}  {'result':<11}  by")
    for outcome in outcomes:
        print(_row(outcome, width))
        if args.verbose:
            for test in outcome.by[1:]:
                print(f"{'':<{width}}  {'':<11}  {_short(test)}")
    counts = {s: sum(o.status == s for o in outcomes)
              for s in ("killed", "survived", "integration", "equivalent", "error")}
    print(f"\n{counts['killed']} killed, {counts['survived']} survived, {counts['error']} errors, "
          f"{counts['integration']} left to integration tests, {counts['equivalent']} equivalent (not run)")
    for outcome in outcomes:
        if outcome.status in ("survived", "error"):
            print(f"  {outcome.status}: {outcome.mutant.id}: {outcome.mutant.breaks}"
                  + (f" ({outcome.by[0]})" if outcome.by else ""))
    return 0 if counts["survived"] == counts["error"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
