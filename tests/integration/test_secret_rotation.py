"""Rotating a secret: a new metadata shared secret in the stack config, after a
`pulumi refresh --run-program`, re-renders every file that holds it and re-runs
exactly the node runs and pods that use it; the nodes then hold the new value
and nowhere the old one, and neither is anywhere in plain text."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from components.render import config_hash
from tests.integration.local_env import NODES, changes_of, node, revealed, stack_output
from tests.integration.secretscan import (
    ArgvSampler,
    ansible_logs,
    config_secrets,
    leaks,
    needles_of,
    node_allowed_files,
    node_files_holding,
    plain_secrets,
    resource_state,
    secret_file,
    stateful_pods,
)
from tests.integration.stacks import Stack, copy_of
from tests.integration.test_dataplane import AGENT_DIR, out_of_sync

# Longer than CI's budget allows: `make test-long` runs these (README, "The two commands").
pytestmark = pytest.mark.long

SHARED_SECRET = "nova.metadataSharedSecret"
# The shared secret the dev stack generated (its config sets none).
GENERATED_SHARED_SECRET = "nova-credentials-metadata-shared-secret"


@dataclass
class Rotation:
    """The dev stack after `pulumi refresh --run-program` and a new metadata shared secret."""

    stack: Stack
    old: str  # the shared secret before: the stack's generated one
    new: str
    before: set[str]  # every secret of the stack before, its state's and its config's
    printed: dict[str, str]  # what refresh, preview and up printed, and every command line while they ran
    changes: dict[str, Any]  # of the up
    pods: tuple[dict[str, str], dict[str, str]]  # stateful_pods() before and after
    hashes: dict[str, Any]  # the stack output deployedHashes before


@pytest.fixture(scope="module")
def rotation(tmp_path_factory: pytest.TempPathFactory, dev_stack: str) -> Iterator[Rotation]:
    """README, "Rotating a secret": `pulumi config set --secret --path nova.metadataSharedSecret`, then
    `pulumi up`. Afterwards the checkout's config applies again (a new generated secret)."""
    with copy_of(dev_stack, tmp_path_factory.mktemp("rotation")) as stack:
        old = revealed(resource_state(stack, GENERATED_SHARED_SECRET)["outputs"]["value"])
        before = plain_secrets(stack) | config_secrets(stack)
        with ArgvSampler() as argv:
            refresh = stack.cli("refresh", "--run-program", "--yes", "--skip-preview")
        # whatever the refresh found drifted (normally nothing) is applied first: the rotation's own
        # up then changes only what the new secret changes
        stack.cli("up", "--yes", "--skip-preview")
        hashes = stack_output(stack.name, "deployedHashes", cwd=stack.project)
        pods = stateful_pods()
        new = "rotated-" + secrets.token_hex(16)
        # (its own command line carries the value, as the user's shell would: not sampled)
        stack.cli("config", "set", "--secret", "--path", SHARED_SECRET, new)
        with ArgvSampler() as later:
            preview = stack.cli("preview", "--diff")
            update = stack.cli("up", "--yes", "--skip-preview", "--json")
        printed = {"refresh output": refresh.stdout + refresh.stderr, "preview output": preview.stdout + preview.stderr,
                   "up output": update.stdout + update.stderr, "argv": "\n".join(argv.seen | later.seen)}
        yield Rotation(stack, old, new, before, printed, changes_of(update.stdout), (pods, stateful_pods()), hashes)


def test_a_new_metadata_shared_secret_reruns_exactly_the_runs_and_pods_that_hold_it(rotation: Rotation) -> None:
    steps = rotation.changes["steps"]
    runs = sorted((op, name) for op, _, name in steps if op != "same" and name.startswith(NODES))
    assert runs == [("update", f"{n}-neutron-metadata") for n in NODES], steps  # not libvirt, not nova
    others = sorted((op, name) for op, _, name in steps if op != "same" and not name.startswith(NODES))
    assert others == [("delete", GENERATED_SHARED_SECRET), ("update", "nova-metadata"),
                      ("update", "nova-metadata-config-data"), ("update", "nova-metadata-neutron-config")], steps
    # nova-metadata's pods, and no others, were replaced
    before, after = rotation.pods
    assert sorted(after) == sorted(before)
    metadata_pods = sorted(n for n in before if n.startswith("nova-metadata-"))
    assert metadata_pods and sorted(n for n in before if after[n] != before[n]) == metadata_pods, rotation.pods


def test_after_a_rotation_the_nodes_hold_the_new_secret_and_nowhere_the_old(rotation: Rotation) -> None:
    line = f"metadata_proxy_shared_secret = {rotation.new}"
    for name in NODES:
        holds = line in node(name, f"cat {AGENT_DIR}/05-nova-metadata.conf").stdout.splitlines()
        assert holds, f"{name}: 05-nova-metadata.conf does not set the new shared secret"
        assert node_files_holding(name, {rotation.old}) == {}, name
    # where the control plane keeps it: the agents' Secret and nova-metadata's config
    for secret, key in (("nova-metadata-neutron-config", "05-nova-metadata.conf"),
                        ("nova-metadata-config-data", "01-nova.conf")):
        text = secret_file(secret, key)
        holds, kept = line in text.splitlines(), rotation.old in text
        assert holds and not kept, f"{secret} {key}: holds the new secret {holds}, the old one {kept}"
    # the outputs say the rotation is complete: every run in sync, the agents' runs deployed
    # the files that hold it, and no other run deployed anything new
    assert out_of_sync(rotation.stack.name) == []
    hashes = stack_output(rotation.stack.name, "deployedHashes")["edpm-compute"]
    before = rotation.hashes["edpm-compute"]
    assert sorted((n, s) for n in hashes for s in hashes[n] if hashes[n][s] != before[n][s]) == [
        (n, "neutron-metadata") for n in NODES]
    for name in NODES:
        inputs = resource_state(rotation.stack, f"{name}-neutron-metadata")["inputs"]
        files = {**inputs["public_files"], **revealed(inputs["files"])}
        deployed = config_hash(files)  # apart: an assertion shows the call's arguments
        assert hashes[name]["neutron-metadata"] == deployed, name
        holds = line in files["05-nova-metadata.conf"].splitlines()
        assert holds, f"{name}: the run's 05-nova-metadata.conf does not set the new shared secret"


def test_no_secret_old_or_new_in_plain_text_after_a_refresh_and_a_rotation(rotation: Rotation) -> None:
    stack = rotation.stack
    now = plain_secrets(stack) | config_secrets(stack)
    # collected: the old generated secret is gone from state, the new one is the config's
    # (compared as booleans: an assertion must not print a secret)
    collected = (rotation.old in rotation.before, rotation.old in now, rotation.new in now)
    assert collected == (True, False, True)
    needles = needles_of(rotation.before | now)
    places = {"state": stack.cli("stack", "export").stdout, **rotation.printed, "Ansible output": ansible_logs()}
    assert leaks(places, needles) == {}
    for name in NODES:
        assert node_files_holding(name, needles, node_allowed_files(stack, name)) == {}, name
