"""Why a run on a node failed, in words a user can act on: where it stopped,
what SSH refused, and for a delete that cannot reach its node, the ways forward."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from components.ansible_runner import nodessh, runguard
from components.settings.knownhosts import lookup_name

# Nodes whose services are dropped from the stack without their stop step when they cannot
# be reached (comma-separated node names; README, "A node that is gone").
FORGET_NODES = "OPENSTACK_NOVA_FORGET_NODES"
_PLAY = re.compile(r"^PLAY \[(.*)\] \**$", re.M)
_TASK = re.compile(r"^(?:TASK|RUNNING HANDLER) \[(.*)\] \**$", re.M)


class PlaybookError(Exception):
    pass


class UnreachableNodeError(PlaybookError):
    """Nothing could run on the node: SSH did not reach it."""


def where(output: str) -> str:
    """The play and task a run's output last started, e.g. "play 'Deploy nova', task 'Copy files'"."""
    plays, tasks = _PLAY.findall(output), _TASK.findall(output)
    if not plays:
        return "before its first play"
    return f"play '{plays[-1]}'" + (f", task '{tasks[-1]}'" if tasks else "")


def _known_hosts_file(props: Mapping[str, Any]) -> str:
    path, node_set = props.get("known_hosts_file"), props.get("node_set")
    of = f" of node set {node_set}" if node_set else ""
    return f"{path} (nodeTemplate.knownHostsFile{of})" if path else f"the nodeTemplate.knownHostsFile{of}"


def _refused(props: Mapping[str, Any], node: nodessh.Target, refusal: nodessh.Refusal) -> str:
    """What a refusal of SSH means for the user, and what to do."""
    lookup = lookup_name(node.address, node.port)
    file = _known_hosts_file(props)
    if refusal.kind == "changed":
        path = props.get("known_hosts_file") or "<knownHostsFile>"
        return (f"{node} showed the host key {refusal.detail}, which is not the one {file} trusts for {lookup} "
                "(REMOTE HOST IDENTIFICATION HAS CHANGED): nothing ran on it. If the node was reinstalled or "
                "its key was replaced, check that fingerprint on the node itself (`ssh-keygen -lf "
                "/etc/ssh/ssh_host_ed25519_key.pub` on its console), trust it with `.venv/bin/python -m "
                f"tools.known_hosts trust {path} {node.address} --port {node.port} --fingerprint <SHA256:...>`, "
                "and run `pulumi up` again. Otherwise another machine may be answering for the node: trust nothing.")
    if refusal.kind == "unknown":
        return (f"{file} has no host key for {lookup}, so {node} cannot be trusted ({refusal.detail}): add "
                f"the node's key (README, \"Trusting a node\") and run `pulumi up` again.")
    if refusal.kind == "denied":
        return (f"{node} refused {node.user}'s key ({refusal.detail}): its public key must be in "
                f"{node.user}'s authorized_keys on the node (nodeTemplate.ansibleUser, "
                "nodeTemplate.ansibleSSHPrivateKey or ansibleSSHPrivateKeyFile).")
    return f"{node} is unreachable ({refusal.detail}). Check the node and its network, then run `pulumi up` again."


def failure(props: Mapping[str, Any], playbook: str, limits: Mapping[str, int], output: str,
             result: Mapping[str, Any] | None, status: int | None) -> PlaybookError | None:
    """The error of a run that did not end well (None when it did)."""
    node = nodessh.target(props["host"], props.get("host_vars") or {})
    tail = "".join(f"\n{line}" for line in output.strip().splitlines()[-25:])
    at = where(output)
    failed = f"ansible-playbook {playbook} failed on {node.name} {'in ' if at.startswith('play') else ''}{at}"
    outcome = (result or {}).get("outcome")
    if status is None or outcome == "timeout":
        return PlaybookError(
            f"ansible-playbook {playbook} on {node.name} did not finish within {limits['run']}s "
            f"(its node set's nodeTemplate.timeouts.run) and was stopped in {at}. "
            f"Check the node, then run `pulumi up` again:{tail}")
    if result is None:
        return PlaybookError(f"the run of {playbook} on {node.name} ended without a result (exit {status}):{tail}")
    if outcome == "done" and result.get("exit") == 0:
        return None
    if outcome == "busy":
        return PlaybookError(
            f"{node.name} is busy: another run on it did not end within {limits['lock']}s (nodeTemplate.timeouts"
            f".lock): {result.get('holder')}. It ends by itself within its own time limit: run `pulumi up` again "
            "then, or stop it now with `kill <pid>` on the machine named (it stops Ansible and frees the node).")
    if outcome == "nolock":
        detail = str(result.get("detail"))
        root = ("cannot write", "sudo", "Permission denied")
        advice = (" Runs need root on the node: log in as root, or set ansible_become: true in ansibleVars (sudo "
                  "without a password)." if any(word in detail for word in root) else "")
        return PlaybookError(f"{failed}: cannot take the run lock {runguard.LOCK_PATH} on {node} ({detail}).{advice}")
    if outcome == "stopped":
        return PlaybookError(f"{failed}: the run was stopped ({result.get('detail')}); run `pulumi up` again.")
    if outcome == "lost":
        return PlaybookError(
            f"{failed}: the connection that holds {node.name}'s run lock dropped ({result.get('detail')}), so "
            f"the run was stopped before another could overlap it. Check the node, then run `pulumi up` again.{tail}")
    # SSH's words, from the run guard's own connection or from Ansible's UNREACHABLE (a task's
    # output may say "Permission denied" for other reasons)
    said = str(result.get("detail") or "") if outcome == "unreachable" else (
        output if "UNREACHABLE!" in output else "")
    found = nodessh.refusal(said)
    if found is not None:
        error = UnreachableNodeError if found.kind == "unreachable" else PlaybookError
        return error(f"{failed}: {_refused(props, node, found)}{tail}")
    if outcome == "unreachable":
        return UnreachableNodeError(f"{failed}: cannot reach {node}: {result.get('detail') or 'no answer'}{tail}")
    return PlaybookError(f"{failed} (exit {result.get('exit')}):{tail}")


def forget_on_delete(props: Mapping[str, Any], error: UnreachableNodeError) -> str:
    """The error of a delete whose node cannot be reached: the ways forward."""
    node = props["host"]["name"]
    urn = props.get("state_urn")
    drop = (f"pulumi state delete '{urn}'" if urn else
            f"pulumi state delete '<the URN `pulumi stack --show-urns` lists for "
            f"{node}-{Path(props['stop_playbook']).stem.removesuffix('-stop')}>'")
    return (f"{error}\nThe resource stays in the stack until its stop step has run on {node}. Either bring {node} "
            f"back and run `pulumi up` again, or, if it is gone for good, forget it knowingly (nothing is stopped "
            f"on it; README, \"A node that is gone\"): run `{FORGET_NODES}={node} pulumi up`, or drop this "
            f"resource from the state and run `pulumi up` again:\n    {drop}")


