"""What a package's schema says about its Python SDK: the module to import and
where each resource type lives in it.

The CLI passes GenerateProgram the address of its schema loader; the schema's
`language.python` section names the SDK's package (`pulumi_kubernetes`) and
its modules (`rbac.authorization.k8s.io/v1` lives in `rbac.v1`). Without a
loader, or when it fails, the usual conventions apply (see `fallback`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import grpc
from pulumi.runtime.proto.codegen import loader_pb2

from .names import snake_case

# The SDK's own loader stub imports a module path that does not exist
# (pulumi.codegen), so the method is called by its name.
GET_SCHEMA = "/codegen.Loader/GetSchema"
# A package schema (kubernetes' is several MB) arrives in one message.
_MAX_MESSAGE = 512 * 1024 * 1024
_TIMEOUT = 300.0


@dataclass(frozen=True)
class PythonPackage:
    """The Python SDK of one Pulumi package."""

    name: str  # the Pulumi package, e.g. kubernetes
    module: str  # the import, e.g. pulumi_kubernetes
    module_format: str = "(.*)"
    module_overrides: dict[str, str] = field(default_factory=dict)
    # Input properties the schema marks secret, by resource type token.
    secret_inputs: dict[str, frozenset[str]] = field(default_factory=dict)
    from_schema: bool = False

    def python_module(self, token_module: str) -> str:
        """The SDK's submodule ('' for the top level) of a type token's module part."""
        match = re.fullmatch(self.module_format, token_module)
        module = match.group(1) if match and match.groups() else token_module
        if module in ("", "index"):
            return ""
        if module in self.module_overrides:
            return self.module_overrides[module].replace("/", ".")
        if self.name == "kubernetes":
            return _kubernetes_module(module)
        return ".".join(snake_case(part.lower()) for part in module.split("/"))


def _kubernetes_module(module: str) -> str:
    # The SDK names a module after its API group's first label: rbac.authorization.k8s.io/v1 is rbac.v1.
    group, _, version = module.rpartition("/")
    first = (group or module).split(".")[0]
    return f"{first}.{version}" if group else first


# What the kubernetes schema marks secret, for when no schema can be loaded:
# the importer leaves such values unmarked, trusting the SDK to mark them.
_KNOWN_SECRET_INPUTS = {
    "kubernetes": {
        "kubernetes:core/v1:Secret": frozenset({"data", "stringData"}),
        "kubernetes:core/v1:SecretPatch": frozenset({"data", "stringData"}),
        "pulumi:providers:kubernetes": frozenset({"kubeconfig"}),
    },
}


def fallback(package: str) -> PythonPackage:
    return PythonPackage(name=package, module=f"pulumi_{package.replace('-', '_')}",
                         secret_inputs=_KNOWN_SECRET_INPUTS.get(package, {}))


def _secret_names(properties: dict[str, Any]) -> frozenset[str]:
    return frozenset(name for name, prop in properties.items() if isinstance(prop, dict) and prop.get("secret"))


def from_spec(package: str, spec: dict[str, Any]) -> PythonPackage:
    python = spec.get("language", {}).get("python", {}) or {}
    secrets = {token: _secret_names(resource.get("inputProperties") or {})
               for token, resource in (spec.get("resources") or {}).items()}
    secrets[f"pulumi:providers:{package}"] = _secret_names((spec.get("provider") or {}).get("inputProperties") or {})
    return PythonPackage(
        name=package,
        module=python.get("packageName") or fallback(package).module,
        module_format=spec.get("meta", {}).get("moduleFormat") or "(.*)",
        module_overrides=dict(python.get("moduleNameOverrides") or {}),
        secret_inputs={token: names for token, names in secrets.items() if names},
        from_schema=True,
    )


class SchemaSource:
    """Packages' Python naming, from the CLI's loader when there is one."""

    def __init__(self, loader_target: str | None) -> None:
        self._channel = grpc.insecure_channel(
            loader_target, options=[("grpc.max_receive_message_length", _MAX_MESSAGE)]
        ) if loader_target else None
        self._cache: dict[tuple[str, str], PythonPackage] = {}
        self.problems: list[str] = []

    def package(self, name: str, version: str = "") -> PythonPackage:
        key = (name, version)
        if key not in self._cache:
            self._cache[key] = self._load(name, version)
        return self._cache[key]

    def _load(self, name: str, version: str) -> PythonPackage:
        if self._channel is None:
            return fallback(name)
        try:
            get_schema = self._channel.unary_unary(
                GET_SCHEMA, request_serializer=loader_pb2.GetSchemaRequest.SerializeToString,
                response_deserializer=loader_pb2.GetSchemaResponse.FromString)
            reply = get_schema(loader_pb2.GetSchemaRequest(package=name, version=version), timeout=_TIMEOUT)
            return from_spec(name, json.loads(reply.schema))
        except (grpc.RpcError, ValueError) as err:
            detail = err.details() if isinstance(err, grpc.RpcError) else str(err)
            self.problems.append(f"the schema of {name} {version} could not be loaded ({detail}); "
                                 "module names follow the usual conventions")
            return fallback(name)

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
