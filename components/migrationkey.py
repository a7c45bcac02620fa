"""`NovaMigrationSSHKey`: the key pair computes use to reach each other for migration."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components import k8s as kube
from components.generated import GeneratedSSHKey
from components.render import names
from components.settings import MigrationSSHKey


class NovaMigrationSSHKey(pulumi.ComponentResource):
    """The key pair computes use to reach each other for migration, published as
    the `nova-migration-ssh-key` Secret (keys ssh-privatekey, ssh-publickey)."""

    private_key: pulumi.Output[str]
    public_key: pulumi.Output[str]

    def __init__(self, name: str, target: kube.Target, given: MigrationSSHKey | None,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        """`given`: dataplane.migrationSSHKey (None: a key pair generated once and kept in state)."""
        super().__init__("openstack-nova:dataplane:NovaMigrationSSHKey", name, {}, opts)
        if given is not None:
            self.private_key = pulumi.Output.secret(given.private_key.reveal())
            self.public_key = pulumi.Output.from_input(given.public_key)
        else:
            generated = GeneratedSSHKey(f"{name}-generated", comment="nova-migration",
                                        opts=pulumi.ResourceOptions(parent=self))
            self.private_key, self.public_key = generated.private_key, generated.public_key
        self.secret = k8s.core.v1.Secret(
            name,
            metadata=target.meta(names.MIGRATION_SSH_KEY_SECRET, kube.labels("nova-compute")),
            string_data={"ssh-privatekey": self.private_key, "ssh-publickey": self.public_key},
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({})
