"""`PlaybookRun`: one Ansible playbook applied to one EDPM node, as a resource.

Preview shows the files it will deploy (secret ones masked); `up` runs
`ansible-playbook` over SSH only when its inputs changed; delete runs the
node's stop playbook. Files, the SSH key and known hosts reach Ansible through
a private temporary directory (0700, files 0600) removed after the run: never
through argv, the environment or a world-readable file.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult
from pulumi.runtime import rpc

from components.render import config_hash
from components.settings import RunLimits
from components.settings.knownhosts import KnownHosts, lookup_name

ROOT = Path(__file__).resolve().parent.parent
ANSIBLE_DIR = ROOT / "ansible"
# The inputs whose change means the node must be configured again.
RUN_INPUTS = ("playbook", "host", "host_vars", "ssh_private_key", "known_hosts", "files", "public_files", "vars")
_RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)
_PLAY = re.compile(r"^PLAY \[(.*)\] \**$", re.M)
_TASK = re.compile(r"^(?:TASK|RUNNING HANDLER) \[(.*)\] \**$", re.M)
# Seconds: to connect to the node, per task, for the whole run (the node set's `timeouts`);
# these apply to runs recorded before the limits were.
DEFAULT_TIMEOUTS = asdict(RunLimits())
STOP_GRACE = 10  # seconds between asking a timed-out run to stop and killing it


class PlaybookError(Exception):
    pass


def _write_private(path: Path, content: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(content)


def _keep_log(node: str, playbook: str, check: bool, output: str) -> None:
    """Appends the run's whole Ansible output to a private per-node log, when asked to."""
    log_dir = os.environ.get("OPENSTACK_NOVA_ANSIBLE_LOG_DIR")
    if not log_dir:
        return
    os.makedirs(log_dir, mode=0o700, exist_ok=True)
    path = Path(log_dir) / f"{node}-{Path(playbook).stem}.log"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a") as handle:
        handle.write(f"== {time.strftime('%Y-%m-%dT%H:%M:%S')} {playbook}{' (check)' if check else ''}\n{output}\n")


def _where(output: str) -> str:
    """The play and task a run's output last started, e.g. "play 'Deploy nova', task 'Copy files'"."""
    plays, tasks = _PLAY.findall(output), _TASK.findall(output)
    if not plays:
        return "before its first play"
    return f"play '{plays[-1]}'" + (f", task '{tasks[-1]}'" if tasks else "")


def _run_bounded(argv: list[str], cwd: Path, env: Mapping[str, str], limit: int) -> tuple[int | None, str]:
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
            out, _ = proc.communicate(timeout=STOP_GRACE)
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
    }


def run_playbook(props: Mapping[str, Any], playbook_key: str = "playbook", check: bool = False) -> dict[str, Any]:
    """Runs the playbook for the node in `props`; returns its recap.

    With `check`, Ansible only reports what it would change (drift), changing nothing.
    """
    host = props["host"]
    playbook = ANSIBLE_DIR / "playbooks" / props[playbook_key]
    if not playbook.is_file():
        raise PlaybookError(f"playbook {props[playbook_key]} not found under {ANSIBLE_DIR / 'playbooks'}")
    workdir = Path(tempfile.mkdtemp(prefix="openstack-nova-"))
    try:
        files_dir = workdir / "files"
        files_dir.mkdir(mode=0o700)
        all_files = {**props.get("public_files", {}), **props.get("files", {})}
        for name, content in all_files.items():
            _write_private(files_dir / name, content)
        _write_private(workdir / "id_ssh", props["ssh_private_key"].rstrip("\n") + "\n")
        _write_private(workdir / "known_hosts", props.get("known_hosts", ""))
        inventory = {
            "all": {
                "hosts": {
                    host["name"]: {
                        "ansible_host": host["address"],
                        "ansible_port": int(host.get("port", 22)),
                        "ansible_user": host.get("user", "root"),
                        "ansible_ssh_private_key_file": str(workdir / "id_ssh"),
                        "ansible_ssh_common_args": (
                            f"-o UserKnownHostsFile={workdir / 'known_hosts'} -o IdentitiesOnly=yes"
                        ),
                        **props.get("host_vars", {}),
                    }
                }
            }
        }
        _write_private(workdir / "inventory.json", json.dumps(inventory))
        extra = {**props.get("vars", {}), "edpm_config_files_src": str(files_dir)}
        _write_private(workdir / "vars.json", json.dumps(extra))
        limits = {**DEFAULT_TIMEOUTS, **(props.get("timeouts") or {})}
        env = _ansible_env(workdir, limits)
        ansible = shutil.which("ansible-playbook", path=str(Path(sys.executable).parent)) or "ansible-playbook"
        status, output = _run_bounded(
            [ansible, "-i", str(workdir / "inventory.json"), "-e", f"@{workdir / 'vars.json'}", str(playbook),
             *(["--check"] if check else [])],
            ANSIBLE_DIR, env, int(limits["run"]),
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    _keep_log(host["name"], props[playbook_key], check, output)
    tail = "\n".join(output.strip().splitlines()[-25:])
    if status is None:
        raise PlaybookError(
            f"ansible-playbook {props[playbook_key]} on {host['name']} did not finish within {limits['run']}s "
            f"(its node set's nodeTemplate.timeouts.run) and was stopped in {_where(output)}. "
            f"Check the node, then run `pulumi up` again:\n{tail}")
    if status != 0:
        raise PlaybookError(f"ansible-playbook {props[playbook_key]} failed on {host['name']} "
                            f"in {_where(output)} (exit {status}):\n{tail}")
    match = _RECAP.search(output)
    changed = int(match.group(3)) if match else 0
    ok = int(match.group(2)) if match else 0
    return {
        "last_run": f"{props[playbook_key]} on {host['name']}: ok={ok} changed={changed}",
        "changed": changed,
        "deployed_hash": config_hash(all_files),
        "in_sync": True,
    }


@functools.lru_cache(maxsize=8)
def _indexed(known_hosts: str) -> KnownHosts:
    return KnownHosts(known_hosts)


def _verifying(known_hosts: str, host: Mapping[str, Any]) -> str:
    """The lines of `known_hosts` that verify `host`, as ssh looks it up."""
    return _indexed(known_hosts).lines_for([lookup_name(str(host["address"]), int(host.get("port", 22)))])


def _same_input(key: str, olds: Mapping[str, Any], news: Mapping[str, Any]) -> bool:
    old, new = olds.get(key), news.get(key)
    if old == new:
        return True
    # Runs recorded before a run carried only its node's lines of known_hosts hold the node
    # set's whole file: what counts is whether the node is verified the same way.
    if key == "known_hosts" and isinstance(old, str) and isinstance(new, str) and isinstance(news.get("host"), dict):
        return _verifying(old, news["host"]) == _verifying(new, news["host"])
    return False


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
        changed = [key for key in RUN_INPUTS if not _same_input(key, olds, news)]
        # A refresh found the node drifted from what was deployed: apply it again.
        drifted = olds.get("in_sync") is False
        return DiffResult(changes=bool(changed) or drifted, replaces=[], delete_before_replace=False)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs={**news, **run_playbook(news)})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """`pulumi refresh`: Ansible in check mode on the node; any change it would make is drift."""
        if not props.get("playbook"):
            return ReadResult(id_=id_, outs=props)
        drift = run_playbook(props, check=True)["changed"]
        state = {**props, "in_sync": drift == 0}
        # Keep secret what was secret: a refresh writes these back to state.
        for key in ("ssh_private_key", "files"):
            state[key] = {rpc._special_sig_key: rpc._special_secret_sig, "value": props.get(key)}
        return ReadResult(id_=id_, outs=state, inputs=state)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        if props.get("stop_playbook"):
            run_playbook(props, playbook_key="stop_playbook")


class PlaybookRun(pulumi.dynamic.Resource):
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
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        secret_outputs = pulumi.ResourceOptions(additional_secret_outputs=["ssh_private_key", "files"])
        super().__init__(
            _PlaybookProvider(),
            name,
            {
                "playbook": playbook,
                "host": host,
                "ssh_private_key": pulumi.Output.secret(ssh_private_key),
                "known_hosts": known_hosts,
                "files": pulumi.Output.secret(files or {}),
                "public_files": public_files or {},
                "vars": variables or {},
                "host_vars": host_vars or {},
                "pinned": dict(pinned or {}),
                "pinned_reason": pinned_reason,
                "stop_playbook": stop_playbook or "",
                # not a run input: a new limit applies from the next run on
                "timeouts": dict(timeouts or DEFAULT_TIMEOUTS),
                # The outputs the program reads (a run's recap, `last_run` and `changed`, is in
                # the state too; each Output the program holds costs it a little per resource).
                "deployed_hash": None,
                "in_sync": None,
            },
            pulumi.ResourceOptions.merge(secret_outputs, opts),
        )
