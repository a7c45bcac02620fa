"""The checks of the policy pack, as plain functions of a resource's properties
(camelCase, as the engine hands them over), so they can be tested without it."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

# oslo.config options that carry credentials, and URLs with a password in them
# (transport_url, [database] connection).
_SECRET_OPTION = re.compile(r"^\s*[\w.-]*(password|secret|token|_key)\s*=\s*\S", re.IGNORECASE | re.MULTILINE)
_URL_CREDENTIALS = re.compile(r"://[^/\s:@]+:[^@\s/]+@")

# Where each workload kind keeps its pod spec.
_POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "kubernetes:core/v1:Pod": ("spec",),
    "kubernetes:apps/v1:Deployment": ("spec", "template", "spec"),
    "kubernetes:apps/v1:StatefulSet": ("spec", "template", "spec"),
    "kubernetes:apps/v1:DaemonSet": ("spec", "template", "spec"),
    "kubernetes:apps/v1:ReplicaSet": ("spec", "template", "spec"),
    "kubernetes:batch/v1:Job": ("spec", "template", "spec"),
    "kubernetes:batch/v1:CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}
# What Kubernetes gives a Secret volume's files when no defaultMode is set.
KUBERNETES_DEFAULT_MODE = 0o644


def credentials_in_configmap(resource_type: str, props: Mapping[str, Any]) -> Iterator[str]:
    """Each ConfigMap key whose text sets a credential: those belong in a Secret."""
    if resource_type != "kubernetes:core/v1:ConfigMap":
        return
    for key, text in sorted((props.get("data") or {}).items()):
        if not isinstance(text, str):
            continue
        if _SECRET_OPTION.search(text) or _URL_CREDENTIALS.search(text):
            yield f"ConfigMap key '{key}' sets a credential; put the file in a Secret instead"


def readable_secret_volumes(resource_type: str, props: Mapping[str, Any]) -> Iterator[str]:
    """Each Secret (or projected) volume of a pod whose files others could read."""
    path = _POD_SPEC_PATHS.get(resource_type)
    if path is None:
        return
    spec: Any = props
    for step in path:
        spec = spec.get(step) if isinstance(spec, Mapping) else None
    for volume in (spec or {}).get("volumes") or []:
        source = volume.get("secret") or volume.get("projected")
        if source is None:
            continue
        # Numbers come through the engine as floats.
        mode = int(source.get("defaultMode", KUBERNETES_DEFAULT_MODE))
        if mode & 0o007:
            yield (f"volume '{volume.get('name')}' gives its Secret's files mode {mode:04o}; "
                   "set defaultMode without bits for others (e.g. 0o400 or 0o640)")
