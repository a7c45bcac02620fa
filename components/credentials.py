"""`NovaCredentials`: every password, transport URL and shared secret of Nova.

Each comes from the stack's secret config when set, else is generated once
and kept in state. Renderers receive them as a secret `Output[Credentials]`
inside `apply`.
"""

from __future__ import annotations

import pulumi

from components.generated import secret_or_generated
from components.render import Credentials, transport_url
from components.settings import CELL0, MessageBus, Nova, SecretStr


def _given(secret: SecretStr | None) -> str | None:
    return secret.reveal() if secret is not None else None


class NovaCredentials(pulumi.ComponentResource):
    """Holds each secret apart, so a service's files wait only on what they use:
    a new cell's generated password leaves the other cells' files known at preview."""

    def __init__(self, name: str, nova: Nova, namespace: str, opts: pulumi.ResourceOptions | None = None) -> None:
        """`nova`: the passwords and buses given (each one not given is generated); `namespace`: where
        the buses' hosts are (their transport URLs name them)."""
        super().__init__("openstack-nova:credentials:NovaCredentials", name, {}, opts)

        def secret(value: SecretStr | None, purpose: str) -> pulumi.Output[str]:
            return secret_or_generated(_given(value), f"{name}-{purpose}", self)

        def bus_url(bus: MessageBus, purpose: str) -> pulumi.Output[str]:
            return secret(bus.password, purpose).apply(lambda pw: transport_url(bus, pw, namespace))

        self.keystone_password = secret(nova.keystone.password, "keystone-password")
        self._api_db = secret(nova.api_database.password, "api-db-password")
        self._cell_db = {c.name: secret(c.database.password, f"{c.name}-db-password") for c in nova.cells}
        self._api_bus = bus_url(nova.messaging_bus, "api-bus-password")
        self._cell_bus = {c.name: bus_url(c.messaging_bus, f"{c.name}-bus-password")
                          for c in nova.cells if not c.is_cell0}
        self.metadata_shared_secret = secret(nova.metadata_shared_secret, "metadata-shared-secret")
        self._notifications = (
            bus_url(nova.notifications_bus, "notifications-bus-password")
            if nova.notifications_bus is not None else pulumi.Output.from_input(None)
        )
        self.register_outputs({})

    def for_cell(self, cell: str | None) -> pulumi.Output[Credentials]:
        """What the services of `cell` (None: the top level) need, as one secret Output.

        The top level gets cell0's database: nova-api and nova-scheduler keep their
        service records there, as upstream's top-level services do.
        """
        cells = [cell if cell is not None else CELL0]
        return pulumi.Output.secret(pulumi.Output.all(
            keystone=self.keystone_password, api_db=self._api_db, api_bus=self._api_bus,
            shared=self.metadata_shared_secret, notifications=self._notifications,
            cell_db=pulumi.Output.all(**{c: self._cell_db[c] for c in cells}),
            cell_bus=pulumi.Output.all(**{c: self._cell_bus[c] for c in cells if c in self._cell_bus}),
        ).apply(lambda v: Credentials(
            keystone_password=v["keystone"], api_db_password=v["api_db"], cell_db_passwords=v["cell_db"],
            api_transport_url=v["api_bus"], cell_transport_urls=v["cell_bus"],
            metadata_shared_secret=v["shared"], notification_transport_url=v["notifications"],
        )))
