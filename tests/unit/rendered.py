"""Every nova config file the program renders for one stack, by a readable name: what the
tests that hold rendered files against nova's option definitions read."""

from __future__ import annotations

from components.render import (
    Credentials,
    NovaService,
    compute_config_files,
    host_specific_conf,
    service_config_files,
    transport_url,
)
from components.settings import TOP_LEVEL_KEYS, Settings
from components.stackconfig import load


def stack(release: str) -> Settings:
    """Settings that render every kind of file for nova `release`: a notifications bus, cells with and
    without API access, a cell whose bus serves classic queues (the others quorum queues)."""
    raw = {
        "images": {"novaRelease": release},
        "nova": {
            "notificationsBus": {"cluster": "rabbitmq"},
            "cellTemplates": {"cell0": {}, "cell1": {}, "cell2": {
                "hasAPIAccess": False, "messagingBus": {"queueType": "None"}}},
        },
    }
    return load(raw, secret_keys=TOP_LEVEL_KEYS, catalog=None)


def credentials(settings: Settings) -> Credentials:
    nova = settings.nova
    return Credentials(
        keystone_password="ks$pw",
        api_db_password="db",
        cell_db_passwords={c.name: "db" for c in nova.cells},
        api_transport_url=transport_url(nova.messaging_bus, "p@ss/word", settings.namespace),
        cell_transport_urls={
            c.name: transport_url(c.messaging_bus, "p", settings.namespace) for c in nova.cells[1:]
        },
        metadata_shared_secret="m",
        notification_transport_url=transport_url(nova.notifications_bus, "n", settings.namespace),  # type: ignore[arg-type]
    )


def nova_confs(settings: Settings, creds: Credentials) -> dict[str, str]:
    """Every 01-nova.conf of `settings`, and a compute's 02-nova-host-specific.conf with and without TLS."""
    cell = settings.nova.cell
    confs = {
        "api": service_config_files(settings, NovaService.API, None, creds),
        "scheduler": service_config_files(settings, NovaService.SCHEDULER, None, creds),
        "metadata": service_config_files(settings, NovaService.METADATA, None, creds),
        "superconductor": service_config_files(settings, NovaService.CONDUCTOR, cell("cell0"), creds),
        "conductor-cell2": service_config_files(settings, NovaService.CONDUCTOR, cell("cell2"), creds),
        "novncproxy-cell1": service_config_files(settings, NovaService.NOVNCPROXY, cell("cell1"), creds),
        "compute-cell1": compute_config_files(settings, cell("cell1"), creds),
        "compute-cell2": compute_config_files(settings, cell("cell2"), creds),
    }
    return {**{name: files["01-nova.conf"] for name, files in confs.items()},
            "host-specific": host_specific_conf("192.168.122.100", "compute-0", tls=False),
            "host-specific-tls": host_specific_conf("192.168.122.100", "compute-0", tls=True)}
