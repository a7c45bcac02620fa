"""Which files on a node may hold a secret: those the roles write on purpose, 0600 and owned as
upstream has them, taken from the roles' own variables and the kolla config the program renders
(not a list of paths kept here). The scan of a node's disk (nodescan.py) allows these alone."""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Collection, Mapping
from typing import Any

from components.render.kolla import EDPM_SRC_DIR, compute_config_json
from components.render.libvirt import AUTH_CONF
from tests.unit.quadlet import role_vars

# A file written inside a container (kolla's copies, outside its volumes) lands in the container's
# writable layer, which podman keeps on the node's disk here.
CONTAINER_LAYERS = "/var/lib/containers/storage/overlay/*/diff"
ROOT_UID = 0
SECRET_MODE = 0o600

AllowedFile = tuple[str, int, int]  # fnmatch pattern of the path, permission bits, owner's uid


def role_variables(role: str) -> dict[str, Any]:
    """A role's defaults and vars (vars win), with `{{ name }}` of another variable resolved."""
    found = role_vars(role)

    def resolve(value: Any) -> Any:
        if isinstance(value, str):
            return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: str(found[m.group(1)]), value)
        if isinstance(value, list):
            return [resolve(v) for v in value]
        if isinstance(value, dict):
            return {k: resolve(v) for k, v in value.items()}
        return value

    return {key: resolve(value) for key, value in found.items()}


def _on_node(dest: str, volumes: list[dict[str, str]]) -> list[str]:
    """Where a file kolla writes at `dest` in the container is on the node's disk: under the host
    path of the volume holding `dest`, or else in the container's writable layer."""
    for volume in sorted(volumes, key=lambda v: len(v["container"]), reverse=True):
        inside = volume["container"].rstrip("/")
        if dest == inside or dest.startswith(inside + "/"):
            return [volume["host"].rstrip("/") + dest[len(inside):]]
    return [CONTAINER_LAYERS + dest]


def _kolla_copies(secret_names: Collection[str], nova: Mapping[str, Any]) -> list[AllowedFile]:
    """The copies kolla makes in nova_compute of the nova run's secret files, each as its config
    says (perm, owner: the image's nova user, whose uid the role knows)."""
    owners = {"nova": nova["edpm_nova_user_id"], "root": ROOT_UID}
    found: list[AllowedFile] = []
    for copy in json.loads(compute_config_json())["config_files"]:
        source = str(copy["source"])
        if not source.startswith(EDPM_SRC_DIR + "/"):
            continue
        pattern = source[len(EDPM_SRC_DIR) + 1:]
        for name in sorted(secret_names):
            if not fnmatch.fnmatchcase(name, pattern):
                continue
            dest = copy["dest"] + name if copy["dest"].endswith("/") else copy["dest"]
            uid = owners[str(copy["owner"]).split(":")[0]]
            found += [(path, int(copy["perm"], 8), uid) for path in _on_node(dest, nova["edpm_nova_quadlet_volumes"])]
    return found


def allowed_files(secret_files: Mapping[str, Collection[str]]) -> list[AllowedFile]:
    """The files a node may hold secrets in, given the names of each run's secret files (a run's
    `files` input, by service: "nova", "neutron-metadata", "libvirt"). A service the map does not
    know allows nothing: its files fail the scan until it is added here from its role."""
    nova, metadata, libvirt = (role_variables(r) for r in ("edpm_nova", "edpm_neutron_metadata", "edpm_libvirt"))
    found: list[AllowedFile] = []
    names = sorted(secret_files.get("nova", ()))
    # edpm_nova: each secret file 0600 root in its config directory (tasks/configure.yml)
    found += [(f"{nova['edpm_nova_config_dest']}/{n}", SECRET_MODE, ROOT_UID) for n in names]
    found += _kolla_copies(names, nova)
    # edpm_neutron_metadata: each secret file 0600 root in the agent's config directory
    found += [(f"{metadata['edpm_neutron_metadata_agent_config_dir']}/{n}", SECRET_MODE, ROOT_UID)
              for n in sorted(secret_files.get("neutron-metadata", ()))]
    # edpm_libvirt: auth.conf 0600 owned by libvirt (tasks/sasl.yml), as upstream's libvirt reads it;
    # the SASL password stays on the controller and reaches the node only in the SASL database, 0600 root
    if AUTH_CONF in secret_files.get("libvirt", ()):
        auth = f"{libvirt['edpm_libvirt_config_dest']}/{AUTH_CONF}"
        found.append((auth, SECRET_MODE, libvirt["edpm_libvirt_user_id"]))
        found.append((str(libvirt["edpm_libvirt_sasl_db"]), SECRET_MODE, ROOT_UID))
    return found
