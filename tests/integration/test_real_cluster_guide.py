"""docs/real-cluster.md, followed as written on the local environment: a second stack, in a
namespace of its own, with its own state backend and passphrase, that sets only what the
guide tells a user to set. The local environment's neighbours in namespace `openstack`
play the user's existing services: reached through ExternalName Services by their DNS
names (and the bus from the data plane through the guide's LoadBalancer Service in front of
the broker's pod), given the databases, bus users, vhosts, Keystone user and region the guide says to
create. Every command the guide shows is checked to stand in it, then run with the
placeholders filled in. The node it adds is borrowed from the dev stack, which gets it back
at the end (as the CI example stack does: tests/integration/test_dataplane.py)."""

from __future__ import annotations

import json
import os
import pty
import re
import secrets
import select
import shlex
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.settings.schema import Images
from tests.integration.local_env import ENV, ROOT, kubectl_json, node, run, up
from tests.integration.nova_compute import eventually
from tests.integration.stacks import Stack, copy_project

# A whole second control plane and a node deployed and given back: longer than CI allows.
pytestmark = pytest.mark.long

GUIDE = ROOT / "docs" / "real-cluster.md"
NS = "openstack"  # where the local environment's neighbours run: the "existing" services
NODE = "edpm-compute-1"
DATABASES = ("nova_api", "nova_cell0", "nova_cell1")
DB_ACCOUNTS = ("nova-api", "nova-cell0", "nova-cell1")
BUS_USERS = ("nova-api", "nova-cell1")
BUS_VHOSTS = ("nova", "nova-cell1")
PLACEHOLDER = re.compile(r"<[A-Za-z0-9][^<>\n]*>")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
# Role variables the local test nodes take as the dev stack gives them, set with the guide's
# `ansibleVars` command: the nodes are hosts as a user's (systemd, podman, libvirt, OVN).
TEST_NODE_VARS = {"ansible_python_interpreter": "/usr/bin/python3"}
# The test nodes have no hardware virtualisation: QEMU runs guests with TCG, as the dev stack says.
TCG = "[libvirt]\nvirt_type = qemu\n"


def guide_text() -> str:
    return GUIDE.read_text()


def fill(template: str, values: Mapping[str, str]) -> str:
    """`template` with each <placeholder> replaced by its value; a placeholder without one fails."""
    missing = sorted({p for p in PLACEHOLDER.findall(template) if p not in values})
    assert not missing, f"no value for {missing} in: {template}"
    return PLACEHOLDER.sub(lambda m: values[m.group(0)], template)


def guide_command(template: str, values: Mapping[str, str]) -> tuple[list[str], str | None]:
    """A command of the guide, as argv with the placeholders filled in, and the placeholder
    its standard input is read from (`< <file>`), if any."""
    assert template in guide_text(), f"docs/real-cluster.md no longer shows: {template}"
    command, _, redirect = template.partition(" < ")
    return shlex.split(fill(command, values)), (redirect.strip() or None)


def _stdin_of(redirect: str | None, values: Mapping[str, str]) -> str | None:
    return Path(values[redirect]).read_text() if redirect else None


def typed(argv: Sequence[str], answers: Sequence[tuple[str, str]], seconds: float = 120) -> str:
    """Runs `argv` on a terminal of its own, typing each answer once its prompt shows: the
    openstack CLI takes a new password from a terminal only. Returns what it printed."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(list(argv), stdin=slave, stdout=slave, stderr=slave, env=ENV, cwd=ROOT,
                            start_new_session=True)
    os.close(slave)
    printed, at, todo = b"", 0, list(answers)
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1)
            chunk = b""
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # EIO: the command closed its terminal
                    chunk = b""
                printed += chunk
            if todo and (found := printed.find(todo[0][0].encode(), at)) >= 0:
                os.write(master, todo[0][1].encode() + b"\n")
                at = found + len(todo[0][0])
                todo.pop(0)
            if not chunk and proc.poll() is not None:
                break
        else:
            proc.kill()
            raise AssertionError(f"{' '.join(argv)} did not finish: {printed.decode(errors='replace')}")
    finally:
        os.close(master)
    assert proc.wait() == 0, printed.decode(errors="replace")
    return printed.decode(errors="replace")


def in_pod(workload: str, *argv: str, input: str | None = None, check: bool = True) -> str:
    return run("kubectl", "exec", "-i", "-n", NS, workload, "--", *argv, input=input, check=check).stdout


def sql(instance: str, statements: str, check: bool = True) -> str:
    """Statements run by MariaDB's root on `instance` (its unix socket, inside its pod)."""
    return in_pod(f"{instance}-0", "mariadb", "--batch", "--skip-column-names", input=statements, check=check)


def rabbitmqctl(cluster: str, *argv: str, input: str | None = None, check: bool = True) -> str:
    return in_pod(f"{cluster}-0", "env", "HOME=/var/lib/rabbitmq", "rabbitmqctl", *argv, input=input, check=check)


def admin(*argv: str, check: bool = True) -> str:
    """The openstack CLI as Keystone's admin (the local environment's openstackclient pod)."""
    return in_pod("deploy/openstackclient", "openstack", *argv, check=check)


def _free_instance() -> str:
    """A MariaDB instance of the environment that holds none of the guide's databases and
    accounts: the dev stack's API instance holds nova_api and nova_cell0, its cell1 instance
    nova_cell1."""
    for sts in kubectl_json("get", "statefulsets", "-n", NS, "-l", "app.kubernetes.io/name=mariadb")["items"]:
        name = sts["metadata"]["name"]
        taken = set(sql(name, "SHOW DATABASES; SELECT User FROM mysql.user;").split())
        if not taken & {*DATABASES, *DB_ACCOUNTS}:
            return str(name)
    raise AssertionError(f"every MariaDB instance in {NS} holds one of {DATABASES} or {DB_ACCOUNTS}")


def _free_cluster() -> str:
    """A RabbitMQ cluster of the environment without the guide's users and vhosts."""
    for sts in kubectl_json("get", "statefulsets", "-n", NS, "-l", "app.kubernetes.io/name=rabbitmq")["items"]:
        name = sts["metadata"]["name"]
        users = {u["user"] for u in json.loads(rabbitmqctl(name, "-q", "list_users", "--formatter", "json"))}
        vhosts = {v["name"] for v in json.loads(rabbitmqctl(name, "-q", "list_vhosts", "--formatter", "json"))}
        if not users & set(BUS_USERS) and not vhosts & set(BUS_VHOSTS):
            return str(name)
    raise AssertionError(f"every RabbitMQ cluster in {NS} has one of {BUS_USERS} or {BUS_VHOSTS}")


def _endpoint(service: str, interface: str) -> str:
    found = json.loads(admin("endpoint", "list", "--service", service, "--interface", interface,
                             "--region", "regionOne", "-f", "json"))
    assert len(found) == 1, found
    return str(found[0]["URL"])


def _dev_config() -> dict[str, Any]:
    document = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())["config"]
    return {key.removeprefix("openstack-nova:"): value for key, value in document.items()}


@dataclass
class Estate:
    """The second stack, what it is given, and where its state and secrets live."""

    project: Path
    stack: str
    values: dict[str, str]
    env: dict[str, str]
    passwords: dict[str, str] = field(default_factory=dict)
    instance: str = ""
    cluster: str = ""

    def secret_file(self, placeholder: str, value: str) -> None:
        path = self.project.parent / "secrets" / placeholder.strip("<>").replace(" ", "-")
        path.parent.mkdir(mode=0o700, exist_ok=True)
        path.write_text(value)
        path.chmod(0o600)
        self.values[placeholder] = str(path)
        self.passwords[placeholder] = value

    def pulumi(self, template: str, *extra: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """A `pulumi ...` command of the guide, on this stack, as a user at a terminal would
        answer it (`extra`: e.g. the `--yes` that confirms an `up`)."""
        argv, redirect = guide_command(template, self.values)
        stack = [] if argv[1:3] == ["stack", "init"] else ["-s", self.stack]
        return run(argv[0], "--non-interactive", *argv[1:], *extra, *stack, cwd=self.project, env=self.env,
                   input=_stdin_of(redirect, self.values), check=check)

    def command(self, template: str) -> subprocess.CompletedProcess[str]:
        argv, redirect = guide_command(template, self.values)
        return run(*argv, cwd=self.project, input=_stdin_of(redirect, self.values))

    def shows_no_secret(self, printed: str) -> None:
        leaked = [name for name, value in self.passwords.items() if value in printed]
        assert leaked == [], f"printed in plain text: {leaked}"


def _prepare(tmp: Path, dev: dict[str, Any]) -> Estate:
    suffix = secrets.token_hex(3)
    project = copy_project(tmp / "project")
    state = tmp / "state"
    state.mkdir()
    images = dev["images"]
    nodes = dev["dataplane"]["nodeSets"]["edpm-compute"]["nodes"]
    values = {
        "<stack>": f"guide-{suffix}",
        "<namespace>": f"guide-{suffix}",
        "<kubeconfig>": ENV["KUBECONFIG"],
        "<context>": run("kubectl", "config", "current-context").stdout.strip(),
        "<nova-api image>": images["api"],
        "<nova-scheduler image>": images["scheduler"],
        "<nova-conductor image>": images["conductor"],
        "<nova-novncproxy image>": images["novncproxy"],
        "<nova-compute image>": images["compute"],
        "<neutron-metadata-agent-ovn image>": images.get("neutronMetadataAgent", Images().neutron_metadata_agent),
        "<keystone internal URL>": _endpoint("identity", "internal"),
        "<keystone public URL>": _endpoint("identity", "public"),
        "<placement internal URL>": _endpoint("placement", "internal"),
        "<placement public URL>": _endpoint("placement", "public"),
        "<region>": f"guide-{suffix}",
        "<service user>": f"nova-guide-{suffix}",
        "<database service>": "mariadb",
        "<bus service>": "rabbitmq",
        "<memcached service>": "memcached",
        "<OVN southbound connection>": dev["dataplane"]["ovn"]["sbConnection"],
        "<internalapi pool>": "internalapi",
        "<internalapi pool addresses>": dev["kubernetes"]["loadBalancerPools"]["internalapi"][0],
        "<node set>": "edpm-guide",
        "<ansible user>": "cloud-admin",  # passwordless sudo on the test nodes, as upstream's cloud-admin
        "<private key file>": f"{ENV['OPENSTACK_NOVA_ENV']}/ssh/id_ed25519",
        "<known hosts file>": str(tmp / "known_hosts"),
        "<node>": NODE,
        "<address>": nodes[NODE]["ansibleHost"],
    }
    env = {
        "PULUMI_BACKEND_URL": f"file://{state}",
        # only the stack's kubernetes.kubeconfig leads to the cluster
        "KUBECONFIG": str(tmp / "no-kubeconfig"),
    }
    estate = Estate(project=project, stack=values["<stack>"], values=values, env=env)
    estate.secret_file("<passphrase file>", secrets.token_urlsafe(24))
    estate.env["PULUMI_CONFIG_PASSPHRASE_FILE"] = estate.values["<passphrase file>"]
    for what in ("api database", "cell0 database", "cell1 database"):
        password = secrets.token_hex(16)
        estate.values[f"<{what} password>"] = password
        estate.passwords[f"<{what} password>"] = password
        estate.secret_file(f"<{what} password file>", password)
    for what in ("api bus", "cell1 bus", "service user"):
        estate.secret_file(f"<{what} password file>", secrets.token_hex(16))
    estate.instance, estate.cluster = _free_instance(), _free_cluster()
    estate.values["<database host name>"] = f"{estate.instance}.{NS}.svc.cluster.local"
    estate.values["<bus host name>"] = f"{estate.cluster}.{NS}.svc.cluster.local"
    estate.values["<memcached host name>"] = f"memcached.{NS}.svc.cluster.local"
    estate.values["<bus address>"] = kubectl_json("get", "pod", f"{estate.cluster}-0", "-n", NS)["status"]["podIP"]
    return estate


def _existing_services(estate: Estate) -> None:
    """Steps 3-5: the namespace, the Services that lead to the existing servers, and what
    the guide says to create on them."""
    values = estate.values
    estate.command("kubectl create namespace <namespace>")
    for kind in ("database", "bus", "memcached"):
        estate.command(f"kubectl create service externalname <{kind} service> -n <namespace> "
                       f"--external-name <{kind} host name>")
    # the bus from the data plane: the guide's Service and EndpointSlice in front of the broker
    exposed = [body for lang, body in FENCE.findall(guide_text())
               if lang == "yaml" and yaml.safe_load(body).get("kind") in ("Service", "EndpointSlice")]
    assert len(exposed) == 2, "docs/real-cluster.md shows the bus's Service and EndpointSlice"
    argv, _ = guide_command("kubectl apply -f -", values)
    for body in exposed:
        run(*argv, input=fill(body, values))
    (statements,) = [body for lang, body in FENCE.findall(guide_text()) if lang == "sql"]
    sql(estate.instance, fill(statements, values))
    for template in ("rabbitmqctl add_vhost nova", "rabbitmqctl add_vhost nova-cell1",
                     "rabbitmqctl add_user nova-api < <api bus password file>",
                     "rabbitmqctl add_user nova-cell1 < <cell1 bus password file>",
                     "rabbitmqctl set_permissions -p nova nova-api '.*' '.*' '.*'",
                     "rabbitmqctl set_permissions -p nova-cell1 nova-cell1 '.*' '.*' '.*'"):
        argv, redirect = guide_command(template, values)
        rabbitmqctl(estate.cluster, *argv[1:], input=_stdin_of(redirect, values))
    password = Path(values["<service user password file>"]).read_text()
    argv, _ = guide_command("openstack user create --domain Default --password-prompt <service user>", values)
    typed(["kubectl", "exec", "-i", "-t", "-n", NS, "deploy/openstackclient", "--", *argv],
          [("User Password:", password), ("Repeat User Password:", password)])
    for template in ("openstack role add --project service --user <service user> admin",
                     "openstack role add --project service --user <service user> service",
                     "openstack region create <region>",
                     "openstack endpoint create --region <region> identity internal <keystone internal URL>",
                     "openstack endpoint create --region <region> identity public <keystone public URL>",
                     "openstack endpoint create --region <region> placement internal <placement internal URL>",
                     "openstack endpoint create --region <region> placement public <placement public URL>"):
        argv, _ = guide_command(template, values)
        admin(*argv[1:])


def _stack_config(estate: Estate) -> None:
    """Step 6 and the known hosts file of step 7: the guide's stack file with its values, the
    passwords set from files, and the role variables the test nodes need."""
    parsed = [yaml.safe_load(fill(body, estate.values)) for lang, body in FENCE.findall(guide_text())
              if lang == "yaml"]
    blocks = [block for block in parsed if "config" in block]
    assert len(blocks) == 1, "docs/real-cluster.md shows one whole stack file"
    stack_file = estate.project / "stacks" / f"Pulumi.{estate.stack}.yaml"
    written = yaml.safe_load(stack_file.read_text())  # what `pulumi stack init` wrote: the salt
    stack_file.write_text(yaml.safe_dump({**blocks[0], "encryptionsalt": written["encryptionsalt"]}))
    for template in (
        "pulumi config set --secret --path 'nova.keystone.password' < <service user password file>",
        "pulumi config set --secret --path 'nova.apiDatabase.password' < <api database password file>",
        "pulumi config set --secret --path 'nova.cellTemplates.cell0.cellDatabase.password' "
        "< <cell0 database password file>",
        "pulumi config set --secret --path 'nova.cellTemplates.cell1.cellDatabase.password' "
        "< <cell1 database password file>",
        "pulumi config set --secret --path 'nova.messagingBus.password' < <api bus password file>",
        "pulumi config set --secret --path 'nova.cellTemplates.cell1.messagingBus.password' "
        "< <cell1 bus password file>",
    ):
        estate.pulumi(template)
    for variable, value in TEST_NODE_VARS.items():
        _set_role_variable(estate, variable, value)
    estate.command("install -m 0644 /dev/null <known hosts file>")
    text = stack_file.read_text()
    estate.shows_no_secret(text)
    assert PLACEHOLDER.findall(text) == [], text  # every value of the guide given


def _set_role_variable(estate: Estate, variable: str, value: str) -> None:
    template = "pulumi config set --path 'dataplane.nodeSets.<node set>.nodeTemplate.ansibleVars.<variable>' <value>"
    estate.values["<variable>"], estate.values["<value>"] = variable, shlex.quote(value)
    estate.pulumi(template)


def _give_back(estate: Estate) -> None:
    """Everything the test made on the existing services, removed; the stack destroyed first
    (its stop steps deregister the compute through its own region)."""
    values = estate.values
    run("pulumi", "--non-interactive", "destroy", "--yes", "--skip-preview", "-s", estate.stack,
        cwd=estate.project, env=estate.env, check=False)
    run("pulumi", "--non-interactive", "stack", "rm", "--yes", "--force", estate.stack,
        cwd=estate.project, env=estate.env, check=False)
    region = values["<region>"]
    listed = admin("endpoint", "list", "--region", region, "-f", "json", check=False) or "[]"
    for endpoint in json.loads(listed):
        admin("endpoint", "delete", endpoint["ID"], check=False)
    admin("region", "delete", region, check=False)
    in_pod("deploy/openstackclient", "rm", "-f", f"/tmp/{estate.stack}-clouds.yaml", check=False)
    admin("user", "delete", "--domain", "Default", values["<service user>"], check=False)
    if estate.instance:
        sql(estate.instance, "".join(f"DROP DATABASE IF EXISTS {d};\n" for d in DATABASES)
            + "".join(f"DROP USER IF EXISTS '{a}'@'%';\n" for a in DB_ACCOUNTS), check=False)
    if estate.cluster:
        for vhost in BUS_VHOSTS:
            rabbitmqctl(estate.cluster, "delete_vhost", vhost, check=False)
        for user in BUS_USERS:
            rabbitmqctl(estate.cluster, "delete_user", user, check=False)
    run("kubectl", "delete", "namespace", values["<namespace>"], "--ignore-not-found", "--wait=false",
        check=False)


@pytest.fixture()
def estate(tmp_path: Path, dev_stack: str) -> Iterator[Estate]:
    """The existing services prepared as the guide says, and the stack configured; afterwards
    all of it removed and the borrowed node given back to the dev stack."""
    prepared = _prepare(tmp_path, _dev_config())
    try:
        prepared.pulumi("pulumi stack init <stack> --secrets-provider passphrase")
        _existing_services(prepared)
        _stack_config(prepared)
        yield prepared
    finally:
        _give_back(prepared)
        # the node held the guide's stack: dev's runs on it, checked, find that (the other node and
        # the control plane were never the guide's), and up lays out dev's files again
        Stack(ROOT, dev_stack).refresh_node(NODE)
        up(dev_stack)


def _compute_endpoints(region: str) -> set[tuple[str, str]]:
    listed = admin("endpoint", "list", "--service", "compute", "--region", region, "-f", "json")
    return {(e["Interface"], e["URL"]) for e in json.loads(listed)}


# A cloud of its own in a clouds.yaml of its own, as the guide says: the admin's entry in the stack's
# region, written by a script inside the openstackclient pod (the admin's password never leaves it).
REGION_CLOUD = """
import os, sys, yaml
name, region, path = sys.argv[1:]
clouds = yaml.safe_load(open("/etc/openstack/clouds.yaml"))["clouds"]
os.umask(0o077)
yaml.safe_dump({"clouds": {name: {**clouds["default"], "region_name": region}}}, open(path, "w"))
"""


def _region_cloud(estate: Estate) -> None:
    name, region = estate.stack, estate.values["<region>"]
    estate.values["<cloud>"] = name
    in_pod("deploy/openstackclient", "python3", "-c", REGION_CLOUD, name, region, f"/tmp/{name}-clouds.yaml")


def _services(estate: Estate, *args: str) -> dict[tuple[str, str], dict[str, Any]]:
    argv, _ = guide_command(" ".join(["openstack --os-cloud <cloud> compute service list", *args]), estate.values)
    config = f"OS_CLIENT_CONFIG_FILE=/tmp/{estate.stack}-clouds.yaml"
    found = json.loads(in_pod("deploy/openstackclient", "env", config, *argv, "-f", "json"))
    return {(s["Binary"], s["Host"]): s for s in found}


def test_the_guide_brings_up_a_control_plane_on_existing_services_and_adds_a_node(estate: Estate) -> None:
    region = estate.values["<region>"]
    dev_endpoints = _compute_endpoints("regionOne")

    # 8. The first preview: every object a create, no secret shown.
    preview = estate.pulumi("pulumi preview --diff")
    printed = preview.stdout + preview.stderr
    assert "to create" in printed and "to update" not in printed and "to delete" not in printed, printed[-3000:]
    estate.shows_no_secret(printed)

    # The first up (`--yes`: what a user answers at its prompt), then nothing left to change.
    first = estate.pulumi("pulumi up --parallel 16", "--yes")
    estate.shows_no_secret(first.stdout + first.stderr)
    estate.pulumi("pulumi preview --expect-no-changes")
    _region_cloud(estate)
    services = eventually(lambda: _services(estate),
                          lambda s: all(v["State"] == "up" for v in s.values()) and len(s) >= 3)
    want = {("nova-scheduler", "nova-scheduler-0"), ("nova-conductor", "nova-cell0-conductor-0"),
            ("nova-conductor", "nova-cell1-conductor-0")}
    assert want <= set(services), sorted(services)
    assert all(services[k]["State"] == "up" for k in want), services
    # its own region: the dev stack's nova keeps its endpoints
    assert _compute_endpoints("regionOne") == dev_endpoints
    assert {url for _, url in _compute_endpoints(region)} == {
        f"http://nova-{i}.{estate.values['<namespace>']}.svc:8774/v2.1" for i in ("public", "internal")}

    # 9. Adding a node: its host key checked on the node itself, then trusted.
    fingerprint = node(NODE, "ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub").stdout.split()[1]
    estate.values["<fingerprint>"] = fingerprint
    estate.command(".venv/bin/python -m tools.known_hosts trust <known hosts file> <address> --name <node> "
                   "--fingerprint <fingerprint>")
    snippet = estate.project.parent / "nova-extra.conf"
    snippet.write_text(TCG)
    estate.values["<nova snippet file>"] = str(snippet)
    argv, _ = guide_command("pulumi config set --path 'dataplane.nodeSets.<node set>.customServiceConfig.nova' "
                            "\"$(cat <nova snippet file>)\"", estate.values)
    assert argv[-1] == f"$(cat {snippet})"  # what the shell makes of it: the file, its last newline dropped
    run(argv[0], "--non-interactive", *argv[1:-1], snippet.read_text().rstrip("\n"), "-s", estate.stack,
        cwd=estate.project, env=estate.env)
    estate.pulumi("pulumi config set --path 'dataplane.nodeSets.<node set>.nodes.<node>.ansibleHost' <address>")
    preview = estate.pulumi("pulumi preview --diff").stdout
    for run_name in ("marker", "ssh-known-hosts", "neutron-metadata", "libvirt", "nova"):
        assert f"{NODE}-{run_name}" in preview, preview[-3000:]
    assert "nova-cell1-host-discover" in preview, preview[-3000:]
    added = estate.pulumi("pulumi up --parallel 16", "--yes")
    estate.shows_no_secret(added.stdout + added.stderr)
    computes = eventually(lambda: _services(estate, "--service", "nova-compute"),
                          lambda s: s.get(("nova-compute", NODE), {}).get("State") == "up")
    assert computes.get(("nova-compute", NODE), {}).get("State") == "up", computes

    # 2. Rotating the passphrase: the new one opens the stack, the old one no longer does.
    stack_file = estate.project / "stacks" / f"Pulumi.{estate.stack}.yaml"
    salt = yaml.safe_load(stack_file.read_text())["encryptionsalt"]
    old = estate.values["<passphrase file>"]
    estate.secret_file("<new passphrase file>", secrets.token_urlsafe(24))
    estate.pulumi("pulumi stack change-secrets-provider passphrase < <new passphrase file>")
    assert yaml.safe_load(stack_file.read_text())["encryptionsalt"] != salt
    estate.env["PULUMI_CONFIG_PASSPHRASE_FILE"] = estate.values["<new passphrase file>"]
    estate.pulumi("pulumi preview --expect-no-changes")
    estate.env["PULUMI_CONFIG_PASSPHRASE_FILE"] = old
    assert estate.pulumi("pulumi preview --expect-no-changes", check=False).returncode != 0
    estate.env["PULUMI_CONFIG_PASSPHRASE_FILE"] = estate.values["<new passphrase file>"]
