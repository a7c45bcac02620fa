"""Rendering helpers of the neighbours: templates/, quoting filters, hashes, and the
object shapes every component shares (Secrets, kolla's config.json, Jobs)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import yaml

from components.render.engine import ini_value

TEMPLATES = Path(__file__).resolve().parent / "templates"
MANAGED_BY = "openstack-nova-devenv"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
CONFIG_HASH_ANNOTATION = "openstack-nova.devenv/config-hash"
CONFIG_DIR = "/var/lib/openstack/config"  # where pods mount their config Secret
JOB_HASH_LENGTH = 8

Obj = dict[str, Any]


@dataclass(frozen=True)
class Context:
    """Where the neighbours run."""

    namespace: str
    image_tag: str
    data_dir: str  # host directory of the neighbours' data: mariadb/<instance>, glance


def sql_string(value: str) -> str:
    """A MariaDB string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def sql_name(value: str) -> str:
    """A MariaDB identifier."""
    return "`" + value.replace("`", "``") + "`"


def cnf_value(value: str) -> str:
    """A quoted value of a MariaDB option file."""
    if "\n" in value:
        raise ValueError("an option value must not contain a line break")
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters.update(sql=sql_string, sql_name=sql_name, cnf=cnf_value, ini=ini_value)
    env.policies["json.dumps_kwargs"] = {"sort_keys": False}
    return env


def render(template: str, **context: Any) -> str:
    text = environment().get_template(template).render(**context)
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n") + "\n"


def render_objects(template: str, **context: Any) -> list[Obj]:
    """The YAML documents of a manifest template, parsed (so a broken template fails here)."""
    return [doc for doc in yaml.safe_load_all(render(template, **context)) if doc]


def static(name: str) -> str:
    return (TEMPLATES / name).read_text()


def content_hash(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def image(name: str, tag: str) -> str:
    return f"localhost/openstack-nova/{name}:{tag}"


def labels(kind: str, instance: str) -> dict[str, str]:
    return {MANAGED_BY_LABEL: MANAGED_BY, "app.kubernetes.io/name": kind, "app.kubernetes.io/instance": instance}


def selector(kind: str, instance: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": kind, "app.kubernetes.io/instance": instance}


def secret(name: str, ns: str, kind: str, data: Mapping[str, str]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": ns, "labels": labels(kind, name)},
        "type": "Opaque",
        "stringData": dict(data),
    }


def kolla_copy(source: str, dest: str, owner: str, perm: str, **extra: Any) -> dict[str, Any]:
    return {"source": f"{CONFIG_DIR}/{source}", "dest": dest, "owner": owner, "perm": perm, **extra}


def kolla_config(command: str, files: Sequence[Mapping[str, Any]] = (),
                 permissions: Sequence[Mapping[str, Any]] = ()) -> str:
    """kolla's config.json: what kolla_set_configs copies before it runs `command`."""
    data: dict[str, Any] = {"command": command, "config_files": list(files)}
    if permissions:
        data["permissions"] = list(permissions)
    return json.dumps(data, indent=4) + "\n"


@dataclass(frozen=True)
class SecretMount:
    name: str
    secret: str
    mount_path: str
    items: tuple[Mapping[str, str], ...] = ()  # only these keys, at these paths


def job(base: str, ctx: Context, *, image_name: str, command: Sequence[str], mounts: Sequence[SecretMount],
        secrets: Iterable[Obj], env: Sequence[Mapping[str, Any]] = ()) -> Obj:
    """A Job named <base>-<hash of everything it runs with>."""
    digest = content_hash(image_name, list(command), list(env), [repr(m) for m in mounts],
                          [s["stringData"] for s in secrets])
    name = f"{base}-{digest[:JOB_HASH_LENGTH]}"
    (obj,) = render_objects(
        "job.yaml.j2", name=name, namespace=ctx.namespace, labels=labels("job", base), container=base,
        image=image(image_name, ctx.image_tag), command=list(command), env=list(env), secrets=mounts,
    )
    return obj


def secret_env(name: str, secret_name: str, key: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret_name, "key": key}}}


def plain_env(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value}


def pod_annotations(*secrets: Obj) -> dict[str, str]:
    """The hash of the pod's config: a changed Secret rolls the pod."""
    return {CONFIG_HASH_ANNOTATION: content_hash([s["stringData"] for s in secrets])}
