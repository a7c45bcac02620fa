"""Why a run on a node failed, in words a user can act on: where it stopped and
what the module said (from the run's events, `events.summarize`), what SSH
refused, and for a delete that cannot reach its node, the ways forward."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from components.ansible_runner import events, nodessh, runguard
from components.settings.knownhosts import lookup_name

# Nodes whose services are dropped from the stack without their stop step when they cannot
# be reached (comma-separated node names; docs/operations.md, "A node that is gone").
FORGET_NODES = "OPENSTACK_NOVA_FORGET_NODES"
# The most of a failed command's own output a message repeats (its log has it all).
OUTPUT_LINES = 15


class PlaybookError(Exception):
    pass


class UnreachableNodeError(PlaybookError):
    """Nothing could run on the node: SSH did not reach it."""


def where(run: Mapping[str, Any] | None, *, failed: bool = True) -> str:
    """Where a run got to, from the summary of its events: the play and task of the failure
    that stopped it (with `failed`), else the last it started; e.g. "play 'Deploy nova', task
    'edpm_nova : Copy files'"."""
    run = run or {}
    stop = (run.get("failure") if failed else None) or run
    play, task = stop.get("play"), stop.get("task")
    if not play:
        return "before its first play"
    return f"play '{play}'" + (f", task '{task}'" if task else "")


def said(stop: Mapping[str, Any]) -> str:
    """What the module said of the failure that stopped a run: its message, each failed item's,
    the command's exit status and the end of its own output (censored, for a task with no_log)."""
    lines = [str(stop.get("msg") or "the module gave no message")]
    for item in stop.get("items") or []:
        label = "an item" if item.get("censored") else f"item {item.get('item')}"
        exit_status = f" (exit status {item['rc']})" if item.get("rc") is not None else ""
        lines.append(f"  {label}: {item.get('msg') or 'failed'}{exit_status}")
    if stop.get("rc") is not None:
        lines.append(f"  exit status {stop['rc']}")
    output = str(stop.get("stderr") or stop.get("stdout") or "").strip()
    lines += [f"  {line}" for line in output.splitlines()[-OUTPUT_LINES:]]
    return "\n".join(lines)


def _whole_log(node: str, playbook: str) -> str:
    path = runguard.log_path(node, playbook)
    return f"\n(the run's whole output: {path})" if path else ""


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
                f"the node's key (docs/operations.md, \"Trusting a node\") and run `pulumi up` again.")
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
    run = (result or {}).get("run")
    at = where(run)
    failed = f"ansible-playbook {playbook} failed on {node.name} {'in ' if at.startswith('play') else ''}{at}"
    outcome = (result or {}).get("outcome")
    if status is None or outcome == "timeout":
        return PlaybookError(
            f"ansible-playbook {playbook} on {node.name} did not finish within {limits['run']}s "
            f"(its node set's nodeTemplate.timeouts.run) and was stopped in {where(run, failed=False)}. "
            f"Check the node, then run `pulumi up` again:{tail}")
    if result is None:
        return PlaybookError(f"the run of {playbook} on {node.name} ended without a result (exit {status}):{tail}")
    if outcome == "done" and result.get("exit") == 0:
        if (run or {}).get("stats") is None:
            # what the run did, and a check what it would change, is unknown: no recap to go by
            return PlaybookError(
                f"ansible-playbook {playbook} on {node.name} ended without its recap: Ansible did not load the "
                f"runner's callback {events.CALLBACK} (ansible/callback_plugins/), whose events say what a run "
                f"did. Check that the file is there, then run `pulumi up` again:{tail}")
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
    stop = (run or {}).get("failure")
    # SSH's words, from the run guard's own connection or from a task that found the node
    # unreachable (a task's failure may say "Permission denied" for other reasons)
    ssh_said = str(result.get("detail") or "") if outcome == "unreachable" else (
        str(stop.get("msg") or "") if stop and stop.get("unreachable") else "")
    found = nodessh.refusal(ssh_said)
    if found is not None:
        error = UnreachableNodeError if found.kind == "unreachable" else PlaybookError
        return error(f"{failed}: {_refused(props, node, found)}" + (_whole_log(node.name, playbook) if stop else tail))
    if outcome == "unreachable":
        return UnreachableNodeError(f"{failed}: cannot reach {node}: {result.get('detail') or 'no answer'}{tail}")
    if stop and stop.get("unreachable"):
        return UnreachableNodeError(f"{failed}: cannot reach {node}: {said(stop)}{_whole_log(node.name, playbook)}")
    if stop:
        return PlaybookError(f"{failed} (exit {result.get('exit')}): {said(stop)}{_whole_log(node.name, playbook)}")
    # Ansible reported no failure (e.g. it could not read the playbook): its own words
    return PlaybookError(f"{failed} (exit {result.get('exit')}):{tail}")


def forget_on_delete(props: Mapping[str, Any], error: UnreachableNodeError, urns: Sequence[str] = ()) -> str:
    """The error of a delete whose node cannot be reached: the ways forward. `urns`: the
    resource's URN in the state, or the URNs it may have there, most likely first."""
    node = props["host"]["name"]
    drop = (f"pulumi state delete '{urns[0]}'" if urns else
            f"pulumi state delete '<the URN `pulumi stack --show-urns` lists for "
            f"{node}-{Path(props['stop_playbook']).stem.removesuffix('-stop')}>'")
    for other in urns[1:]:
        drop += f"\n    (or, if `pulumi stack --show-urns` lists it so: pulumi state delete '{other}')"
    return (f"{error}\nThe resource stays in the stack until its stop step has run on {node}. Either bring {node} "
            f"back and run `pulumi up` again, or, if it is gone for good, forget it knowingly (nothing is stopped "
            f"on it; docs/operations.md, \"A node that is gone\"): run `{FORGET_NODES}={node} pulumi up`, or drop this "
            f"resource from the state and run `pulumi up` again:\n    {drop}")


