"""`NovaMigrationSSHKey`: the key pair computes use to reach each other for migration."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components import k8s as kube
from components.generated import GeneratedSSHKey
from components.render import names
from components.settings import Settings


class NovaMigrationSSHKey(pulumi.ComponentResource):
    """The key pair computes use to reach each other for migration, published as
    the `nova-migration-ssh-key` Secret (keys ssh-privatekey, ssh-publickey)."""

    private_key: pulumi.Output[str]
    public_key: pulumi.Output[str]

    def __init__(self, name: str, settings: Settings, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("openstack-nova:dataplane:NovaMigrationSSHKey", name, {}, opts)
        given = settings.dataplane.migration_ssh_key
        if given is not None:
            self.private_key = pulumi.Output.secret(given.private_key.reveal())
            self.public_key = pulumi.Output.from_input(given.public_key)
        else:
            generated = GeneratedSSHKey(f"{name}-generated", comment="nova-migration",
                                        opts=pulumi.ResourceOptions(parent=self))
            self.private_key, self.public_key = generated.private_key, generated.public_key
        self.secret = k8s.core.v1.Secret(
            name,
            metadata=kube.object_meta(names.MIGRATION_SSH_KEY_SECRET, settings.namespace,
                                          kube.labels("nova-compute"), settings.kubernetes.skip_await),
            string_data={"ssh-privatekey": self.private_key, "ssh-publickey": self.public_key},
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({})
