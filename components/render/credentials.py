"""Plain-text credentials the renderers need, and the URLs built from them.

The components reveal secrets (or generate them) and pass them here inside
an `Output.apply`; rendered files are then stored as Pulumi secrets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import quote

from components.settings import MessageBus

from . import names


def transport_url(bus: MessageBus, password: str, namespace: str) -> str:
    """rabbit://user:password@<cluster>.<namespace>.svc:<port>/<vhost>?ssl=0, parts URL-quoted."""
    user = quote(bus.user, safe="")
    secret = quote(password, safe="")
    host = names.service_host(bus.cluster, namespace)
    # vhost "/" becomes "%2F": oslo.messaging unquotes it back to "/"
    return f"rabbit://{user}:{secret}@{host}:{bus.port}/{quote(bus.vhost, safe='')}?ssl=0"


def database_url(account: str, password: str, instance: str, namespace: str, database: str) -> str:
    user, secret = quote(account, safe=""), quote(password, safe="")
    host = names.service_host(instance, namespace)
    return f"mysql+pymysql://{user}:{secret}@{host}/{database}?read_default_file=/etc/my.cnf"


@dataclass(frozen=True)
class Credentials:
    """Revealed secrets; repr never shows them."""

    keystone_password: str = field(repr=False)
    api_db_password: str = field(repr=False)
    cell_db_passwords: Mapping[str, str] = field(repr=False)
    api_transport_url: str = field(repr=False)
    # cells other than cell0, which always uses the API bus
    cell_transport_urls: Mapping[str, str] = field(repr=False)
    metadata_shared_secret: str = field(repr=False)
    notification_transport_url: str | None = field(default=None, repr=False)

    def transport_url(self, cell: str | None) -> str:
        """The bus of `cell`'s services; the API bus for None and cell0."""
        if cell is None or cell == "cell0":
            return self.api_transport_url
        return self.cell_transport_urls[cell]

    def db_password(self, cell: str) -> str:
        return self.cell_db_passwords[cell]
