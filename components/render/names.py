"""Kubernetes names, following nova-operator (operators.md 1.1 and 1.6).

The Nova CR is always called "nova", so a cell's objects are "nova-<cell>-...".
Services, as nova-operator names them:
  nova-internal / nova-public             API, port 8774
  nova-metadata-internal                  top-level metadata, port 8775
  nova-metadata-<cell>-internal           per-cell metadata, port 8775
  nova-novncproxy-<cell>-public           noVNC proxy, port 6080
"""

from __future__ import annotations

# the ports, the settings' (which check MetalLB's sharing rule with them)
from components.settings.model import API_PORT as API_PORT
from components.settings.model import METADATA_PORT as METADATA_PORT
from components.settings.model import NOVNCPROXY_PORT as NOVNCPROXY_PORT

NOVA = "nova"
MEMCACHED_PORT = 11211
MIGRATION_SSH_KEY_SECRET = "nova-migration-ssh-key"  # keys ssh-privatekey, ssh-publickey
LIBVIRT_SECRET = "libvirt-secret"  # key LIBVIRT_PASSWORD_KEY: the SASL password of libvirt's migration user
LIBVIRT_PASSWORD_KEY = "LibvirtPassword"
# libvirt's CA (upstream: the issuer osp-rootca-issuer-libvirt and its root CA) and its node
# certificates, each a Secret with tls.crt, tls.key and ca.crt as cert-manager writes them
LIBVIRT_ROOT_CA = "rootca-libvirt"


def libvirt_node_cert(host_name: str) -> str:
    """A node's libvirt certificate, named as upstream's: cert-<service>-<certKey>-<hostName>."""
    return f"cert-libvirt-default-{host_name}"

API = "nova-api"
SCHEDULER = "nova-scheduler"
API_INTERNAL_SERVICE = "nova-internal"
API_PUBLIC_SERVICE = "nova-public"


def cell_prefix(cell: str) -> str:
    return f"{NOVA}-{cell}"


def metadata(cell: str | None) -> str:
    return "nova-metadata" if cell is None else f"{cell_prefix(cell)}-metadata"


def conductor(cell: str) -> str:
    return f"{cell_prefix(cell)}-conductor"


def novncproxy(cell: str) -> str:
    return f"{cell_prefix(cell)}-novncproxy"


def config_data(service: str) -> str:
    """The Secret with a service's config files, e.g. nova-cell1-conductor-config-data."""
    return f"{service}-config-data"


def db_sync_job(cell: str) -> str:
    return f"{conductor(cell)}-db-sync"


def cell_mapping_job(cell: str) -> str:
    return f"{cell_prefix(cell)}-cell-mapping"


def host_discover_job(cell: str) -> str:
    return f"{cell_prefix(cell)}-host-discover"


SERVICE_CLEANUP_JOB = "nova-service-cleanup"
# A cell name as the settings accept it (an RFC 1123 label): what any cell's objects are named after.
CELL_NAME_PATTERN = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"


def memcached_servers(instance: str, namespace: str) -> str:
    """memcached as the control plane reaches it: its Service."""
    return f"{service_host(instance, namespace)}:{MEMCACHED_PORT}"


def db_purge_cron_job(cell: str) -> str:
    return f"{cell_prefix(cell)}-db-purge"


def compute_config(cell: str) -> str:
    """The Secret EDPM computes of `cell` get their nova config from."""
    return f"{cell_prefix(cell)}-compute-config"


def metadata_neutron_secret_name(cell: str | None) -> str:
    """The Secret with 05-nova-metadata.conf for the neutron metadata agent."""
    return f"{metadata(cell)}-neutron-config"


def metadata_service(cell: str | None) -> str:
    """The metadata service's Service, as upstream names it: nova-metadata-internal, or
    nova-metadata-<cell>-internal for a cell's (the neutron agents of its nodes reach it)."""
    return "nova-metadata-internal" if cell is None else f"nova-metadata-{cell}-internal"


def novncproxy_service(cell: str) -> str:
    return f"nova-novncproxy-{cell}-public"


def service_host(service: str, namespace: str) -> str:
    return f"{service}.{namespace}.svc"


def database_name(cell: str | None) -> str:
    """The MariaDB database: nova_api for the API, nova_<cell> for a cell."""
    return "nova_api" if cell is None else f"nova_{cell}"
