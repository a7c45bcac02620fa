"""No secret in plain text: not in state, preview or up output, Ansible output, any
process's argv during a run, or any file on the host or a node that others can read.
And the migration key replaced: it reaches every compute, the old one is gone."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from tests.integration.local_env import ENV, NODES, ROOT, changes_of, node, revealed, run
from tests.integration.nodescan import JOURNAL_PLACE
from tests.integration.secretscan import (
    ArgvSampler,
    ansible_logs,
    leaks,
    needles_of,
    node_allowed_files,
    node_files_holding,
    plain_secrets,
    readable_files,
    resource_state,
    secret_file,
)
from tests.integration.stacks import Stack

NODE0 = "dataplane.nodeSets.edpm-compute.nodes.edpm-compute-0.customServiceConfig.nova"
SNIPPET_SECRET = "fixed-key-" + secrets.token_hex(12)
# The migration key the dev stack generated (its config sets none).
GENERATED_MIGRATION_KEY = "nova-migration-ssh-key-generated"


def test_no_secret_in_plain_text_after_an_up_and_an_update(dev_copy: Stack) -> None:
    outputs: list[str] = []
    with ArgvSampler() as argv:
        outputs.append(dev_copy.cli("up", "--yes", "--skip-preview").stdout)
    # a snippet with a secret option, kept as a Pulumi secret: masked everywhere too (set
    # unsampled: the command's own argv carries the value, as the user's shell would)
    dev_copy.cli("config", "set", "--secret", "--path", NODE0,
                 f"[DEFAULT]\ndebug = true\n[key_manager]\nfixed_key = {SNIPPET_SECRET}\n")
    with ArgvSampler() as later:
        preview = dev_copy.cli("preview", "--diff")
        outputs += [preview.stdout, preview.stderr]
        update = dev_copy.cli("up", "--yes", "--skip-preview", "--diff")
        outputs += [update.stdout, update.stderr]
    assert "edpm-compute-0-nova" in update.stdout  # the update did run Ansible

    needles = needles_of(plain_secrets(dev_copy)) | {SNIPPET_SECRET}
    assert len(needles) >= 8, "the stack's passwords, shared secret and keys were collected"
    places: dict[str, str] = {
        "state": dev_copy.cli("stack", "export").stdout,
        "preview and up output": "\n".join(outputs),
        "argv": "\n".join(argv.seen | later.seen),
        "Ansible output": ansible_logs(),
    }
    assert "edpm-compute-0-nova" in places["argv"] or "ansible-playbook" in places["argv"]
    assert places["Ansible output"], "Ansible output is kept in the private log dir"
    assert leaks(places, needles) == {}

    roots = [Path("/tmp"), Path("/var/tmp"), Path(ENV["OPENSTACK_NOVA_ENV"]), Path(ENV["PULUMI_HOME"]),
             Path.home() / ".ansible", ROOT, dev_copy.project]
    readable: dict[str, list[str]] = {}
    # the test nodes' disks (their root, overlay, container storage): what is on a node is checked
    # on the node, by mode and owner (test_dataplane.py)
    disks = {p for p in (Path(ENV["OPENSTACK_NOVA_ENV"]) / "nodes").glob("*/*") if p.is_dir()}
    for path in readable_files([r for r in roots if r.exists()], skip=disks):
        try:
            readable.update(leaks({str(path): path.read_text(errors="ignore")}, needles))
        except OSError:
            continue
    assert readable == {}, "secrets in files others can read"
    # each node's whole disk and journal: only the files the roles write on purpose hold them
    for name in NODES:
        assert node_files_holding(name, needles, node_allowed_files(dev_copy, name)) == {}, name


def test_the_node_scan_finds_a_value_leaked_to_the_journal_or_a_file(dev_copy: Stack) -> None:
    """The scan's own proof: a value written to a node's journal (longer than journald stores
    uncompressed) and to a 0600 root file where no role writes one is found, each place named."""
    leaked = "leaked-" + secrets.token_hex(16)
    name = NODES[0]
    path = "/root/.ansible/leaked-by-test"
    place = f"{path} (0o600 uid 0)"
    # through stdin, as a secret would travel (not in a command line)
    script = (f"import subprocess\nmessage = {leaked!r} + ' ' + 'x' * 600\n"
              "subprocess.run(['systemd-cat', '-t', 'openstack-nova-scan-test'], input=message.encode(), check=True)\n"
              f"open({path!r}, 'w').write({leaked!r})\n")
    proc = run(str(ROOT / "devenv" / "ssh.sh"), name, "umask 077 && mkdir -p /root/.ansible && python3 - && "
               "journalctl --sync", input=script, check=False)
    assert proc.returncode == 0, proc.stderr
    try:
        found = node_files_holding(name, {leaked}, node_allowed_files(dev_copy, name))
    finally:
        node(name, f"rm -f {path}")
    hit = [leaked[:6] + "..."]
    assert found[JOURNAL_PLACE] == hit and found[place] == hit, found
    # zstd keeps a run of distinct characters as it is: the journal's files hold the value too
    rest = {where: hits for where, hits in found.items() if where not in (JOURNAL_PLACE, place)}
    assert all(where.startswith("/var/log/journal/") and hits == hit for where, hits in rest.items()), found


@pytest.mark.long
def test_a_replaced_migration_key_reaches_every_compute_and_the_old_one_is_gone(dev_copy: Stack) -> None:
    """README, "Rotating a secret": the generated key, replaced with `pulumi up --replace <its URN>`."""
    old = resource_state(dev_copy, GENERATED_MIGRATION_KEY)
    update = dev_copy.cli("up", "--yes", "--skip-preview", "--json", "--replace", old["urn"])
    new = resource_state(dev_copy, GENERATED_MIGRATION_KEY)
    old_private, new_private = revealed(old["outputs"]["private_key"]), revealed(new["outputs"]["private_key"])
    public = revealed(new["outputs"]["public_key"])
    assert public != revealed(old["outputs"]["public_key"])
    steps = changes_of(update.stdout)["steps"]
    key = GENERATED_MIGRATION_KEY
    assert sorted((op, name) for op, _, name in steps if op != "same") == sorted([
        ("create-replacement", key), ("replace", key), ("delete-replaced", key),
        ("update", "nova-migration-ssh-key"), *(("update", f"{n}-nova") for n in NODES)]), steps
    assert secret_file("nova-migration-ssh-key", "ssh-publickey") == public
    for name in NODES:
        assert node(name, "cat /home/nova/.ssh/authorized_keys").stdout == public, name
        derived = node(name, "ssh-keygen -y -f /var/lib/openstack/nova/ssh-privatekey").stdout
        assert derived.split()[:2] == public.split()[:2], name
        assert node_files_holding(name, needles_of({old_private})) == {}, name
    # the computes reach each other with it, as nova migrates: from nova_compute, once kolla has
    # copied the key in the container the update restarted
    peer = node(NODES[0], "for _ in $(seq 60); do podman exec --user nova nova_compute ssh -o BatchMode=yes "
                          "192.168.122.101 hostname && exit 0; sleep 2; done; exit 1")
    assert (peer.returncode, peer.stdout.strip()) == (0, NODES[1]), peer.stderr
    needles = needles_of({old_private, new_private})
    places = {"state": dev_copy.cli("stack", "export").stdout, "up output": update.stdout + update.stderr,
              "Ansible output": ansible_logs()}
    assert leaks(places, needles) == {}
    for name in NODES:
        assert node_files_holding(name, needles, node_allowed_files(dev_copy, name)) == {}, name
