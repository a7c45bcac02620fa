"""Node variables of upstream's edpm_neutron_metadata role, as this program treats them.

Upstream's role renders the agent's options from variables
(`edpm_neutron_metadata_agent_DEFAULT_metadata_workers`, ...). Here the program
renders them, so preview shows them: such a variable in `ansibleVars` would do
nothing, and is reported. The variables that place the agent on the node
(image, directories, the haproxy wrapper's) keep upstream's names and meaning;
the program writes their values into the wrapper scripts, so they must be
plain values, not Jinja.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .errors import Context, Path

IMAGE = "edpm_neutron_metadata_agent_image"
CONFIG_DIR = "edpm_neutron_metadata_agent_config_dir"
LIB_DIR = "edpm_neutron_metadata_agent_lib_dir"
SIDECAR_IMAGE = "edpm_neutron_metadata_agent_sidecar_haproxy_image_name"
SIDECAR_DEBUG = "edpm_neutron_metadata_agent_sidecar_debug"

_TEXT_VARS = (IMAGE, SIDECAR_IMAGE)
_PATH_VARS = (CONFIG_DIR, LIB_DIR)
# upstream's per-option variables: edpm_neutron_metadata_agent_<section>_<option>
_OPTION_VAR = re.compile(r"^edpm_neutron_metadata_agent_(DEFAULT|agent|ovs|ovn|oslo_concurrency)_")
_ROOTWRAP_VAR = re.compile(r"^edpm_neutron_metadata_agent_rootwrap_")


def check_agent_vars(ctx: Context, path: Path, ansible_vars: Mapping[str, Any]) -> None:
    """Problems of the agent's variables in one `ansibleVars` at `path`."""
    for name, value in ansible_vars.items():
        where = (*path, name)
        if _ROOTWRAP_VAR.match(name):
            ctx.problem(where, "rootwrap's config is upstream's, rendered by the program (01-rootwrap.conf); "
                               "remove this variable")
        elif _OPTION_VAR.match(name):
            ctx.problem(where, "the program renders the agent's options, so this variable would do nothing: set "
                               "the option in customServiceConfig.neutron-metadata of the node set or node "
                               "instead, e.g. \"[DEFAULT]\\nmetadata_workers = 4\"")
        elif name in _TEXT_VARS + _PATH_VARS and (not isinstance(value, str) or "{{" in value or not value):
            ctx.problem(where, "the program writes this value into the agent's haproxy wrapper: give a plain, "
                               "non-empty string (no Jinja)")
        elif name in _PATH_VARS and not value.startswith("/"):
            ctx.problem(where, f"'{value}' is not an absolute path")
        elif name == SIDECAR_DEBUG and not isinstance(value, bool):
            ctx.problem(where, "expected a boolean (true/false): the program writes it into the haproxy wrapper")


def agent_var(ansible_vars: tuple[Mapping[str, Any], ...], name: str, default: Any) -> Any:
    """The value of `name` for a node: the first of `ansible_vars` (node first) that sets it."""
    for level in ansible_vars:
        if name in level:
            return level[name]
    return default
