"""Rendering: pure functions from settings (and revealed credentials) to file contents.

Nothing here imports Pulumi; templates live in components/templates/.
"""

from .credentials import Credentials, database_url, transport_url
from .edpm import SSH_KNOWN_HOSTS_BLOCK, known_hosts_block, neutron_metadata_extra_files, nova_extra_files
from .hashing import config_hash
from .keystone import compute_endpoints, keystone_registration_files
from .kolla import compute_config_json, metadata_agent_config_json, service_config_json
from .libvirt import (
    LIBVIRT_DAEMONS,
    TLS_CA,
    TLS_CERT,
    TLS_KEY,
    CephSecret,
    CephSecretError,
    ceph_secret_files,
    ceph_secrets,
    libvirt_config_files,
    libvirt_secret_files,
)
from .metadata import METADATA_CONF, metadata_host, metadata_neutron_config
from .names import metadata_neutron_secret_name
from .neutron_metadata import AgentLayout, agent_layout, neutron_metadata_agent_files
from .nova_conf import (
    BLANK_CONF,
    HOST_SPECIFIC_CONF,
    NOVA_CONF,
    OVERRIDE_CONF,
    RUNTIMES,
    SERVICE_TEMPLATES,
    NovaService,
    Runtime,
    compute_config_files,
    compute_config_names,
    host_specific_conf,
    novncproxy_base_url,
    service_config_files,
    service_template,
)
from .scope import NovaScope
from .service_cleanup import CLEANUP_SCRIPT, service_cleanup_files, service_cleanup_plan
from .services import ServiceEndpoint, data_plane_dns, service_endpoint

__all__ = [
    "BLANK_CONF",
    "CLEANUP_SCRIPT",
    "HOST_SPECIFIC_CONF",
    "LIBVIRT_DAEMONS",
    "METADATA_CONF",
    "NOVA_CONF",
    "OVERRIDE_CONF",
    "RUNTIMES",
    "SERVICE_TEMPLATES",
    "SSH_KNOWN_HOSTS_BLOCK",
    "TLS_CA",
    "TLS_CERT",
    "TLS_KEY",
    "AgentLayout",
    "CephSecret",
    "CephSecretError",
    "Credentials",
    "NovaScope",
    "NovaService",
    "Runtime",
    "ServiceEndpoint",
    "agent_layout",
    "ceph_secret_files",
    "ceph_secrets",
    "compute_config_files",
    "compute_config_json",
    "compute_config_names",
    "compute_endpoints",
    "config_hash",
    "data_plane_dns",
    "database_url",
    "host_specific_conf",
    "keystone_registration_files",
    "known_hosts_block",
    "libvirt_config_files",
    "libvirt_secret_files",
    "metadata_agent_config_json",
    "metadata_host",
    "metadata_neutron_config",
    "metadata_neutron_secret_name",
    "neutron_metadata_agent_files",
    "neutron_metadata_extra_files",
    "nova_extra_files",
    "novncproxy_base_url",
    "service_cleanup_files",
    "service_cleanup_plan",
    "service_config_files",
    "service_config_json",
    "service_endpoint",
    "service_template",
    "transport_url",
]
