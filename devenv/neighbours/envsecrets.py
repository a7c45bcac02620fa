"""The environment's own secrets, generated once per namespace and kept for re-runs.

Kept in $OPENSTACK_NOVA_ENV/neighbours/<namespace>.json (0600): the admin's
password, keystone's database password, the Keystone user's and the database
account's password of each API beside nova (placement, glance, neutron: keys
<api> and <api>_db), a root password per MariaDB instance, and keystone's fernet and
credential keys.
A key that is missing (a new instance, say) is generated and added; nothing
already there changes, so the Secrets made from them stay the same.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .plan import API_KINDS, EnvPasswords

# keystone-manage fernet_setup makes two keys: 0 (staged) and 1 (primary).
KEY_COUNT = 2
_PASSWORDS = ("admin", "keystone_db", *(k.name for k in API_KINDS), *(f"{k.name}_db" for k in API_KINDS))


@dataclass(frozen=True)
class EnvSecrets:
    passwords: EnvPasswords
    fernet_keys: tuple[str, ...] = field(repr=False)
    credential_keys: tuple[str, ...] = field(repr=False)


def new_password() -> str:
    """32 characters of [A-Za-z0-9_-]: nothing to quote in a URL, SQL or an INI file."""
    return secrets.token_urlsafe(24)


def new_fernet_key() -> str:
    """What keystone-manage fernet_setup writes: 32 random bytes, URL-safe base64."""
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()


def _keys(value: Any) -> list[str]:
    keys = [k for k in value if isinstance(k, str)] if isinstance(value, list) else []
    return keys + [new_fernet_key() for _ in range(KEY_COUNT - len(keys))]


def complete(data: dict[str, Any], instances: Iterable[str]) -> dict[str, Any]:
    """`data` with every missing secret generated; present ones are kept as they are."""
    out = dict(data)
    for name in _PASSWORDS:
        if not isinstance(out.get(name), str) or not out[name]:
            out[name] = new_password()
    roots = out.get("db_root")
    roots = dict(roots) if isinstance(roots, dict) else {}
    for instance in instances:
        if not isinstance(roots.get(instance), str) or not roots[instance]:
            roots[instance] = new_password()
    out["db_root"] = roots
    out["fernet_keys"] = _keys(out.get("fernet_keys"))
    out["credential_keys"] = _keys(out.get("credential_keys"))
    return out


def from_data(data: dict[str, Any]) -> EnvSecrets:
    return EnvSecrets(
        passwords=EnvPasswords(
            admin=data["admin"],
            keystone_db=data["keystone_db"],
            api_users={k.name: data[k.name] for k in API_KINDS},
            api_dbs={k.name: data[f"{k.name}_db"] for k in API_KINDS},
            db_root=dict(data["db_root"]),
        ),
        fernet_keys=tuple(data["fernet_keys"]),
        credential_keys=tuple(data["credential_keys"]),
    )


def store_path(env_dir: Path, namespace: str) -> Path:
    return env_dir / "neighbours" / f"{namespace}.json"


def _write_private(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def load_or_create(path: Path, instances: Iterable[str]) -> EnvSecrets:
    """The secrets in `path`, completed (and written back only if something was missing)."""
    data: dict[str, Any] = {}
    if path.exists():
        loaded = json.loads(path.read_text())
        data = loaded if isinstance(loaded, dict) else {}
    completed = complete(data, instances)
    if completed != data:
        _write_private(path, completed)
    return from_data(completed)
