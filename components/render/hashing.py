"""A stable hash of a set of rendered files (drives restarts and Ansible re-runs)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping


def config_hash(files: Mapping[str, str]) -> str:
    """sha256 hex over the files sorted by name; independent of mapping order."""
    # JSON keeps name/content boundaries unambiguous
    canonical = json.dumps(sorted(files.items()), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
