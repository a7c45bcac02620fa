"""`PlaybookRun`: one Ansible playbook applied to one EDPM node, as a resource.

Preview shows the files it will deploy (secret ones masked); `up` runs
`ansible-playbook` over SSH only when its inputs changed; delete runs the
node's stop playbook. Files, the SSH key and known hosts reach Ansible through
a private temporary directory (0700, files 0600), never through argv, the
environment or a world-readable file. Each run is handed to a run guard
(`components.ansible_runner.runguard`) that takes the node's run lock, runs Ansible within
its limits and removes that directory, even when `pulumi up` is killed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from shlex import quote as shlex_quote
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult
from pulumi.runtime import rpc

from components.ansible_runner import events, nodessh, runguard
from components.ansible_runner.failures import (
    FORGET_NODES,
    PlaybookError,
    UnreachableNodeError,
    failure,
    forget_on_delete,
)
from components.dynamictypes import renamed_urn, type_of, with_legacy_alias
from components.render import config_hash
from components.settings import RunLimits
from components.settings.knownhosts import KnownHosts, lookup_name

ROOT = Path(__file__).resolve().parents[2]
ANSIBLE_DIR = ROOT / "ansible"
# The inputs whose change means the node must be configured again.
RUN_INPUTS = ("playbook", "roles", "host", "host_vars", "ssh_private_key", "known_hosts", "files", "public_files",
              "vars")
# Its type: pulumi-python:dynamic/ansible:PlaybookRun (components.dynamictypes).
MODULE, NAME = "ansible", "PlaybookRun"
TYPE = type_of(MODULE, NAME)
# What a delete needs to know: a change is recorded in the state without running anything.
# (The known hosts' file and node set, only named in messages, follow with the next run:
# the file's path may differ from one machine to the next.)
RECORD_INPUTS = ("stop_playbook", "state_urn")
_RESULTS = ("deployed_hash", "last_run", "changed", "in_sync")
# Seconds: to connect to the node, per task, for the whole run, to wait for another run on
# the node (the node set's `timeouts`); these apply to runs recorded before the limits were.
DEFAULT_TIMEOUTS = asdict(RunLimits())
STOP_GRACE = runguard.STOP_GRACE


def _write_private(path: Path, content: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(content)


def _run_bounded(argv: list[str], cwd: Path, env: Mapping[str, str], limit: int,
                 grace: int = STOP_GRACE) -> tuple[int | None, str]:
    """Runs `argv`; (exit status, output), or (None, output so far) when it ran longer
    than `limit` seconds and was stopped, with everything it started (its own session)."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=limit)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
        return None, out


def _ansible_env(workdir: Path, limits: Mapping[str, int]) -> dict[str, str]:
    """The environment of one ansible-playbook run, everything it keeps below `workdir`."""
    return {
        **os.environ,
        "ANSIBLE_TIMEOUT": str(limits["connect"]),
        "ANSIBLE_TASK_TIMEOUT": str(limits["task"]),
        "ANSIBLE_CONFIG": str(ANSIBLE_DIR / "ansible.cfg"),
        "ANSIBLE_HOME": str(workdir / "ansible-home"),
        # SSH connections are shared within a run only: each run verifies the node's
        # host key itself, and a node that hangs is found hung by each run.
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(workdir / "cp"),
        "ANSIBLE_LOCAL_TEMP": str(workdir / "tmp"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        # Ansible's account of the run, read by the run guard; the text output goes on as before
        "ANSIBLE_CALLBACK_PLUGINS": str(ANSIBLE_DIR / "callback_plugins"),
        "ANSIBLE_CALLBACKS_ENABLED": events.CALLBACK,
    }


def trusted_keys(props: Mapping[str, Any]) -> frozenset[str]:
    """The host keys a run accepts for its node: those of its known_hosts under the node's name."""
    node = nodessh.target(props["host"], props.get("host_vars") or {})
    known = props.get("known_hosts") or ""
    return frozenset(KnownHosts(known if isinstance(known, str) else "").keys_for([lookup_name(node.address,
                                                                                               node.port)]))


def _guard_spec(props: Mapping[str, Any], workdir: Path, playbook: Path, playbook_key: str, check: bool,
                limits: Mapping[str, int]) -> dict[str, Any]:
    """What the run guard runs: the lock on the node, then ansible-playbook."""
    node = nodessh.target(props["host"], props.get("host_vars") or {})
    hold = runguard.lock_command(int(limits["lock"]), int(limits["run"]), check=check)
    lock = nodessh.ssh_argv(node, workdir / "id_ssh", workdir / "known_hosts", int(limits["connect"]),
                            " ".join(map(shlex_quote, hold)))
    ansible = shutil.which("ansible-playbook", path=str(Path(sys.executable).parent)) or "ansible-playbook"
    command = [ansible, "-i", str(workdir / "inventory.json"), "-e", f"@{workdir / 'vars.json'}", str(playbook),
               *(["--check"] if check else [])]
    return {"node": node.name, "playbook": props[playbook_key], "check": check, "lock": lock, "command": command,
            "cwd": str(ANSIBLE_DIR), "limits": {k: int(limits[k]) for k in ("connect", "run", "lock")},
            "events": str(workdir / "events.jsonl")}


def run_playbook(props: Mapping[str, Any], playbook_key: str = "playbook", check: bool = False) -> dict[str, Any]:
    """Runs the playbook for the node in `props`; returns its recap.

    With `check`, Ansible only reports what it would change (drift), changing nothing.
    """
    host = props["host"]
    playbook = ANSIBLE_DIR / "playbooks" / props[playbook_key]
    if not playbook.is_file():
        raise PlaybookError(f"playbook {props[playbook_key]} not found under {ANSIBLE_DIR / 'playbooks'}")
    limits = {**DEFAULT_TIMEOUTS, **(props.get("timeouts") or {})}
    workdir = Path(tempfile.mkdtemp(prefix="openstack-nova-"))
    try:
        files_dir = workdir / "files"
        files_dir.mkdir(mode=0o700)
        all_files = {**props.get("public_files", {}), **props.get("files", {})}
        for name, content in all_files.items():
            _write_private(files_dir / name, content)
        _write_private(workdir / "id_ssh", props["ssh_private_key"].rstrip("\n") + "\n")
        _write_private(workdir / "known_hosts", props.get("known_hosts", ""))
        host_vars = dict(props.get("host_vars", {}))
        node_args = host_vars.pop("ansible_ssh_common_args", "")
        inventory = {
            "all": {
                "hosts": {
                    host["name"]: {
                        "ansible_host": host["address"],
                        "ansible_port": int(host.get("port", 22)),
                        "ansible_user": host.get("user", "root"),
                        "ansible_ssh_private_key_file": str(workdir / "id_ssh"),
                        **host_vars,
                        "ansible_ssh_common_args": nodessh.ansible_common_args(workdir / "known_hosts", node_args),
                    }
                }
            }
        }
        _write_private(workdir / "inventory.json", json.dumps(inventory))
        extra = {**props.get("vars", {}), "edpm_config_files_src": str(files_dir)}
        _write_private(workdir / "vars.json", json.dumps(extra))
        _write_private(workdir / runguard.SPEC, json.dumps(_guard_spec(props, workdir, playbook, playbook_key,
                                                                        check, limits)))
        # The guard keeps its own limits; this one is for a guard that hangs itself.
        backstop = int(limits["connect"] + limits["lock"] + limits["run"]) + 3 * STOP_GRACE + 60
        status, output = _run_bounded([sys.executable, "-m", "components.ansible_runner.runguard", str(workdir)], ROOT,
                                      _ansible_env(workdir, limits), backstop, grace=3 * STOP_GRACE)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    output, result = runguard.split_result(output)
    run = (result or {}).get("run") or {}
    recap = run.get("stats") or {}
    changed, ok = int(recap.get("changed", 0)), int(recap.get("ok", 0))
    if not _stopped_by_a_change_it_only_checked(check, result, changed):
        error = failure(props, props[playbook_key], limits, output, result, status)
        if error is not None:
            raise error
    return {
        "last_run": f"{props[playbook_key]} on {host['name']}: ok={ok} changed={changed}",
        "changed": changed,
        "deployed_hash": config_hash(all_files),
        "in_sync": True,
    }


def _stopped_by_a_change_it_only_checked(check: bool, result: Mapping[str, Any] | None, changed: int) -> bool:
    """A check run that failed on a task after tasks it would have changed (e.g. files owned by a
    user it would create): check mode cannot go past a change it does not make, so the node is
    drifted (changed > 0), not broken; an unreachable node or a run stopped otherwise still fails."""
    stop = ((result or {}).get("run") or {}).get("failure") or {}
    return (check and changed > 0 and (result or {}).get("outcome") == "done" and bool(stop)
            and not stop.get("unreachable"))


def _forgotten_nodes() -> set[str]:
    return {n.strip() for n in os.environ.get(FORGET_NODES, "").split(",") if n.strip()}


def roles_fingerprint(playbook: str, ansible_dir: Path = ANSIBLE_DIR) -> str:
    """A hash of what a run of `playbook` executes: ansible.cfg, the playbook, and every role
    it names, directly or through another role. A new role lays out what the old one did not,
    so a change re-runs the playbook on its nodes; and a refresh checks a node only with the
    roles its run was made with."""
    return _fingerprint(playbook, ansible_dir.resolve())


@functools.cache
def _fingerprint(playbook: str, ansible_dir: Path) -> str:
    roles_dir = ansible_dir / "roles"
    known = {r.name for r in roles_dir.iterdir() if r.is_dir()} if roles_dir.is_dir() else set()
    files = [ansible_dir / "ansible.cfg", ansible_dir / "playbooks" / playbook]
    pending, seen = [files[1]], set[str]()
    while pending:
        path = pending.pop()
        text = path.read_text(errors="replace") if path.is_file() else ""
        for role in sorted(known & set(re.findall(r"\b(edpm_\w+)", text)) - seen):
            seen.add(role)
            role_files = sorted(f for f in (roles_dir / role).rglob("*") if f.is_file())
            files += role_files
            pending += role_files
    digest = hashlib.sha256()
    for path in files:
        if path.is_file():
            digest.update(f"{path.relative_to(ansible_dir)}\0".encode())
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _must_run(olds: Mapping[str, Any], news: Mapping[str, Any]) -> bool:
    """Whether the node must be configured again: an input of the run changed (the node's
    known hosts count by the keys trusted for the node), or a refresh found it drifted."""
    changed = [key for key in RUN_INPUTS if key != "known_hosts" and olds.get(key) != news.get(key)]
    return bool(changed) or trusted_keys(olds) != trusted_keys(news) or olds.get("in_sync") is False


class _PlaybookProvider(ResourceProvider):
    # The pickled provider is a reference to this class and holds nothing secret (the SDK would
    # otherwise make it a secret of every run: one more Output in the program, one more value
    # to encrypt in each checkpoint).
    serialize_as_secret_always = False

    def create(self, props: dict[str, Any]) -> CreateResult:
        result = run_playbook(props)
        return CreateResult(id_=f"{props['host']['name']}:{props['playbook']}", outs={**props, **result})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        # A pinned input cannot change once deployed: fail the preview, say what to do.
        old_pins, new_pins = olds.get("pinned") or {}, news.get("pinned") or {}
        moved = sorted(k for k in old_pins if k in new_pins and old_pins[k] != new_pins[k])
        if moved:
            raise PlaybookError("; ".join(
                f"{news['host']['name']}: {k} is {old_pins[k]!r} on the node and cannot become {new_pins[k]!r}. "
                f"{news.get('pinned_reason', '')}" for k in moved))
        # A refresh found the node drifted from what was deployed: apply it again.
        recorded = [key for key in RECORD_INPUTS if olds.get(key) != news.get(key)
                    and not (key == "state_urn" and renamed_urn(str(olds.get(key)), TYPE) == news.get(key))]
        return DiffResult(changes=_must_run(olds, news) or bool(recorded), replaces=[],
                          delete_before_replace=False)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        if _must_run(olds, news):
            return UpdateResult(outs={**news, **run_playbook(news)})
        # Only what the runner keeps about the run changed: record it, run nothing.
        return UpdateResult(outs={**news, **{key: olds.get(key) for key in _RESULTS}})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """`pulumi refresh`: Ansible in check mode on the node; any change it would make is drift."""
        if not props.get("playbook"):
            return ReadResult(id_=id_, outs=props)
        if props.get("roles") != roles_fingerprint(props["playbook"]):
            # Deployed with other roles than these, which may expect other files: the node is
            # not what these roles would make it, and only a run with them can say more.
            in_sync = False
        else:
            in_sync = run_playbook(props, check=True)["changed"] == 0
        state = {**props, "in_sync": in_sync}
        # Keep secret what was secret: a refresh writes these back to state.
        for key in ("ssh_private_key", "files"):
            state[key] = {rpc._special_sig_key: rpc._special_secret_sig, "value": props.get(key)}
        return ReadResult(id_=id_, outs=state, inputs=state)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        if not props.get("stop_playbook"):
            return
        try:
            run_playbook(props, playbook_key="stop_playbook")
        except UnreachableNodeError as err:
            if props["host"]["name"] not in _forgotten_nodes():
                raise PlaybookError(forget_on_delete(props, err, _state_urns(props))) from None
            # asked to: the node is gone for good, and its resource goes without its stop step


def secret(value: pulumi.Input[Any]) -> pulumi.Output[Any]:
    """`pulumi.Output.secret(value)`; for an Output, without the deep copy of its value that
    Output.secret makes first (Output.from_input: about two Outputs more per key of a dict of
    files, for every run, where many runs share one Output): the Output itself, awaited under
    one that is secret. The same value, resources and known-ness, and secret; an Output within
    the value, which none of the services' files hold, is resolved when the inputs are sent."""
    if isinstance(value, pulumi.Output):
        return pulumi.Output.secret(True).apply(lambda _: value)
    return pulumi.Output.secret(value)


def urn_of(name: str, parent_type: str | None) -> str:
    """The URN of the PlaybookRun `name` under a component of `parent_type` (None: top level)."""
    types = f"{parent_type}${TYPE}" if parent_type else TYPE
    return f"urn:pulumi:{pulumi.get_stack()}::{pulumi.get_project()}::{types}::{name}"


def _state_urns(props: Mapping[str, Any]) -> list[str]:
    """The URN of a run in the state, as recorded: for a run recorded under the type runs had
    before they were named PlaybookRun, the one the engine has given it since its first `up`
    with this name, then the one it had before."""
    urn = str(props.get("state_urn") or "")
    renamed = renamed_urn(urn, TYPE)
    return [renamed, urn] if renamed != urn else [urn] if urn else []


class PlaybookRun(pulumi.dynamic.Resource, module=MODULE, name=NAME):
    """Applies `playbook` to one node; re-applies it whenever its inputs change.

    `pinned` values may never change once the node is deployed; a change fails
    the preview with `pinned_reason`.
    """

    deployed_hash: pulumi.Output[str]
    """Hash of the files the last run deployed."""
    in_sync: pulumi.Output[bool]
    """False once a refresh found the node drifted from what was deployed."""

    def __init__(
        self,
        name: str,
        *,
        playbook: str,
        host: pulumi.Input[Mapping[str, Any]],
        ssh_private_key: pulumi.Input[str],
        known_hosts: pulumi.Input[str],
        files: pulumi.Input[Mapping[str, str]] | None = None,
        public_files: pulumi.Input[Mapping[str, str]] | None = None,
        variables: pulumi.Input[Mapping[str, Any]] | None = None,
        host_vars: pulumi.Input[Mapping[str, Any]] | None = None,
        pinned: Mapping[str, str] | None = None,
        pinned_reason: str = "",
        stop_playbook: str | None = None,
        timeouts: Mapping[str, int] | None = None,
        known_hosts_file: str | None = None,
        node_set: str | None = None,
        parent_type: str | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """`known_hosts_file`, `node_set`: where `known_hosts` comes from, for messages;
        `parent_type`: the type of the component it belongs to (its URN is in its delete's message)."""
        secret_outputs = pulumi.ResourceOptions(additional_secret_outputs=["ssh_private_key", "files"])
        super().__init__(
            _PlaybookProvider(),
            name,
            {
                "playbook": playbook,
                "roles": roles_fingerprint(playbook),
                "host": host,
                "ssh_private_key": secret(ssh_private_key),
                "known_hosts": known_hosts,
                "files": secret(files or {}),
                "public_files": public_files or {},
                "vars": variables or {},
                "host_vars": host_vars or {},
                "pinned": dict(pinned or {}),
                "pinned_reason": pinned_reason,
                "stop_playbook": stop_playbook or "",
                # not a run input: a new limit applies from the next run on
                "timeouts": dict(timeouts or DEFAULT_TIMEOUTS),
                "known_hosts_file": known_hosts_file or "",
                "node_set": node_set or "",
                "state_urn": urn_of(name, parent_type),
                # The outputs the program reads (a run's recap, `last_run` and `changed`, is in
                # the state too; each Output the program holds costs it a little per resource).
                "deployed_hash": None,
                "in_sync": None,
            },
            pulumi.ResourceOptions.merge(secret_outputs, with_legacy_alias(opts)),
        )
