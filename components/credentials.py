"""`NovaCredentials`: every password, transport URL and shared secret of Nova.

Each comes from the stack's secret config when set, else is generated once
and kept in state. The result is one secret `Output[Credentials]` that the
renderers receive inside `apply`.
"""

from __future__ import annotations

import pulumi

from components.generated import secret_or_generated
from components.render import Credentials, transport_url
from components.settings import MessageBus, SecretStr, Settings


def _given(secret: SecretStr | None) -> str | None:
    return secret.reveal() if secret is not None else None


class NovaCredentials(pulumi.ComponentResource):
    credentials: pulumi.Output[Credentials]
    """Revealed credentials, as a secret Output; only renderers look inside."""

    def __init__(self, name: str, settings: Settings, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("openstack-nova:credentials:NovaCredentials", name, {}, opts)
        nova = settings.nova

        def secret(value: SecretStr | None, purpose: str) -> pulumi.Output[str]:
            return secret_or_generated(_given(value), f"{name}-{purpose}", self)

        def bus_url(bus: MessageBus, purpose: str) -> pulumi.Output[str]:
            return secret(bus.password, purpose).apply(lambda pw: transport_url(bus, pw, settings.namespace))

        other_cells = [c for c in nova.cells if not c.is_cell0]
        keystone = secret(nova.keystone.password, "keystone-password")
        api_db = secret(nova.api_database.password, "api-db-password")
        cell_db = {c.name: secret(c.database.password, f"{c.name}-db-password") for c in nova.cells}
        api_bus = bus_url(nova.messaging_bus, "api-bus-password")
        cell_bus = {c.name: bus_url(c.messaging_bus, f"{c.name}-bus-password") for c in other_cells}
        shared = secret(nova.metadata_shared_secret, "metadata-shared-secret")
        notifications = (
            bus_url(nova.notifications_bus, "notifications-bus-password")
            if nova.notifications_bus is not None else pulumi.Output.from_input(None)
        )
        self.credentials = pulumi.Output.secret(pulumi.Output.all(
            keystone=keystone, api_db=api_db, cell_db=pulumi.Output.all(**cell_db), api_bus=api_bus,
            cell_bus=pulumi.Output.all(**cell_bus), shared=shared, notifications=notifications,
        ).apply(lambda v: Credentials(
            keystone_password=v["keystone"], api_db_password=v["api_db"], cell_db_passwords=v["cell_db"],
            api_transport_url=v["api_bus"], cell_transport_urls=v["cell_bus"],
            metadata_shared_secret=v["shared"], notification_transport_url=v["notifications"],
        )))
        self.register_outputs({})
