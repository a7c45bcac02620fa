"""Node variables that would change how a node's host key is checked.

The runner checks every node's host key against the keys its node set trusts
(`nodeTemplate.knownHostsFile`), looked up under the node's `ansibleHost` and
the node set's `ansiblePort`. A variable in `ansibleVars` that turns the check
off, points SSH at other known hosts or another name, or connects another way,
would undo that quietly, so it is refused with what to do instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .errors import Context, Path

_CHECKING_VARS = ("ansible_host_key_checking", "ansible_ssh_host_key_checking")
_ARGS_VARS = ("ansible_ssh_args", "ansible_ssh_common_args", "ansible_ssh_extra_args",
              "ansible_scp_extra_args", "ansible_sftp_extra_args")
# OpenSSH options that decide which key is accepted for which name; -F reads them from a file
_KEY_OPTIONS = re.compile(
    r"\b(StrictHostKeyChecking|UserKnownHostsFile|GlobalKnownHostsFile|KnownHostsCommand|HostKeyAlias|"
    r"VerifyHostKeyDNS)\b|(^|\s)-F", re.IGNORECASE)
_WHERE_INSTEAD = {
    "ansible_host": "set the node's ansibleHost instead",
    "ansible_port": "set nodeTemplate.ansiblePort instead",
}
TRUST = "add the node's key to nodeTemplate.knownHostsFile instead (docs/operations.md, \"Trusting a node\")"


def check_ssh_vars(ctx: Context, path: Path, ansible_vars: Mapping[str, Any]) -> None:
    """Problems of the variables in one `ansibleVars` at `path` that touch host key checking."""
    for name, value in ansible_vars.items():
        where = (*path, name)
        if name in _CHECKING_VARS:
            ctx.problem(where, f"host keys are always checked; {TRUST}")
        elif name in _ARGS_VARS and isinstance(value, str) and (found := _KEY_OPTIONS.search(value)):
            option = (found.group(1) or "-F").strip()
            ctx.problem(where, f"{option} would change which host key SSH accepts; {TRUST}")
        elif name == "ansible_connection" and value not in ("ssh", "smart"):
            ctx.problem(where, f"'{value}': nodes are reached over OpenSSH, with their host keys checked; "
                               "remove this variable")
        elif name in _WHERE_INSTEAD:
            ctx.problem(where, f"the node's host key is looked up under its ansibleHost and the node set's "
                               f"ansiblePort; {_WHERE_INSTEAD[name]}")
