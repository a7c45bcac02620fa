"""`GeneratedSecret`: a random value created once and kept, encrypted, in state.

Used for every password or shared secret the stack config leaves unset, so a
CI stack needs no secrets of its own and a second `up` sees the same values.
"""

from __future__ import annotations

import secrets
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ResourceProvider

from components.dynamictypes import with_legacy_alias


class _GeneratedSecretProvider(ResourceProvider):
    def create(self, props: dict[str, Any]) -> CreateResult:
        value = secrets.token_hex(int(props["bytes"]))
        return CreateResult(id_=secrets.token_hex(8), outs={"bytes": props["bytes"], "value": value})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        # Only a different length calls for a new value; nothing else changes it.
        changed = olds.get("bytes") != news.get("bytes")
        return DiffResult(changes=changed, replaces=["bytes"] if changed else [], delete_before_replace=False)


class GeneratedSecret(pulumi.dynamic.Resource, module="generated", name="GeneratedSecret"):
    """A hex secret of `length` random bytes, stable across runs."""

    value: pulumi.Output[str]

    def __init__(self, name: str, length: int = 32, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(
            _GeneratedSecretProvider(),
            name,
            {"bytes": length, "value": None},
            pulumi.ResourceOptions.merge(pulumi.ResourceOptions(additional_secret_outputs=["value"]),
                                         with_legacy_alias(opts)),
        )


def secret_or_generated(
    given: pulumi.Input[str] | None, name: str, parent: pulumi.Resource
) -> pulumi.Output[str]:
    """The stack's secret when set, else a generated one owned by `parent`."""
    if given is not None:
        return pulumi.Output.secret(given)
    return GeneratedSecret(name, opts=pulumi.ResourceOptions(parent=parent)).value


class _GeneratedSSHKeyProvider(ResourceProvider):
    def create(self, props: dict[str, Any]) -> CreateResult:
        # Imported here: only the provider process needs it.
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        key = Ed25519PrivateKey.generate()
        private = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
        ).decode()
        public = key.public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        ).decode()
        return CreateResult(
            id_=secrets.token_hex(8),
            outs={"comment": props["comment"], "private_key": private, "public_key": f"{public} {props['comment']}\n"},
        )

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = olds.get("comment") != news.get("comment")
        return DiffResult(changes=changed, replaces=["comment"] if changed else [], delete_before_replace=False)


class GeneratedSSHKey(pulumi.dynamic.Resource, module="generated", name="GeneratedSSHKey"):
    """An ed25519 key pair, created once; the private key is kept secret in state."""

    private_key: pulumi.Output[str]
    public_key: pulumi.Output[str]

    def __init__(self, name: str, comment: str, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(
            _GeneratedSSHKeyProvider(),
            name,
            {"comment": comment, "private_key": None, "public_key": None},
            pulumi.ResourceOptions.merge(pulumi.ResourceOptions(additional_secret_outputs=["private_key"]),
                                         with_legacy_alias(opts)),
        )
