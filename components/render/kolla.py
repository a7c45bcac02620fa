"""kolla `config.json` files: what kolla_set_configs copies where before starting a service.

Built as data and dumped with json (not templated), so the output is always valid JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# Where the control-plane pods mount their <service>-config-data Secret.
POD_CONFIG_DIR = "/var/lib/openstack/config"
# Where edpm_nova mounts /var/lib/openstack/nova inside the nova_compute container.
EDPM_SRC_DIR = "/var/lib/kolla/config_files/src"


def _copy(source: str, dest: str, perm: str = "0600", owner: str = "nova", **extra: Any) -> dict[str, Any]:
    return {"source": source, "dest": dest, "owner": owner, "perm": perm, **extra}


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=4) + "\n"


@dataclass(frozen=True)
class WsgiFiles:
    """The file names of a WSGI API's httpd config in its config Secret."""

    httpd_conf: str
    vhost_conf: str
    entry: str  # the WSGI entry file, copied into entry_dir
    entry_dir: str


def service_config_json(command: str, *, uses_database: bool, wsgi: WsgiFiles | None = None) -> str:
    """The config.json of a control-plane pod; `wsgi` for the APIs httpd serves."""
    files = [
        _copy(f"{POD_CONFIG_DIR}/nova-blank.conf", "/etc/nova/nova.conf"),
        _copy(f"{POD_CONFIG_DIR}/01-nova.conf", "/etc/nova/nova.conf.d/01-nova.conf"),
        # listed even when absent, so adding customServiceConfig leaves this file unchanged
        _copy(
            f"{POD_CONFIG_DIR}/02-nova-override.conf",
            "/etc/nova/nova.conf.d/02-nova-override.conf",
            optional=True,
        ),
    ]
    if uses_database:
        files.append(_copy(f"{POD_CONFIG_DIR}/my.cnf", "/etc/my.cnf", perm="0644"))
    if wsgi is not None:
        files += [
            _copy(f"{POD_CONFIG_DIR}/{wsgi.httpd_conf}", "/etc/httpd/conf/httpd.conf", perm="0644", owner="root"),
            _copy(f"{POD_CONFIG_DIR}/{wsgi.vhost_conf}", f"/etc/httpd/conf.d/{wsgi.vhost_conf}", perm="0644",
                  owner="root"),
            _copy(f"{POD_CONFIG_DIR}/{wsgi.entry}", f"{wsgi.entry_dir}/{wsgi.entry}", perm="0644", owner="root"),
        ]
    return _dump(
        {
            "command": command,
            "config_files": files,
            "permissions": [{"path": "/var/log/nova", "owner": "nova:nova", "recurse": True}],
        }
    )


def compute_config_json() -> str:
    """The kolla config of the nova_compute container on an EDPM node (operators.md 3.1)."""
    src = EDPM_SRC_DIR
    files = [
        _copy(f"{src}/nova-blank.conf", "/etc/nova/nova.conf"),
        # only *nova*.conf files are loaded: 01-nova.conf, 02-nova-host-specific.conf, 25-nova-extra.conf...
        _copy(f"{src}/*nova*.conf", "/etc/nova/nova.conf.d/", merge=True),
        _copy(f"{src}/ceph", "/etc/ceph", perm="0700", optional=True),
        _copy(f"{src}/ssh-privatekey", "/var/lib/nova/.ssh/ssh-privatekey", optional=True),
        _copy(f"{src}/ssh-config", "/var/lib/nova/.ssh/config"),
        _copy(f"{src}/provider*.yaml", "/etc/nova/provider_config/", optional=True),
        # edpm_nova's wrapper: os-brick's iscsiadm runs on the node, in the node's namespaces
        _copy(f"{src}/run-on-host", "/usr/sbin/iscsiadm", perm="0755", owner="root:root"),
    ]
    return _dump(
        {
            "command": "nova-compute",
            "config_files": files,
            "permissions": [
                {"path": "/etc/ceph/*", "owner": "nova:nova", "perm": "0600"},
                {"path": "/var/lib/nova/.ssh/", "owner": "nova:nova", "perm": "0700"},
                {"path": "/var/lib/nova/.ssh/*", "owner": "nova:nova", "perm": "0600"},
            ],
        }
    )


def metadata_agent_config_json(rootwrap_source: str, rootwrap_dest: str) -> str:
    """The kolla config of the ovn_metadata_agent container on an EDPM node, as edpm-ansible's.

    The agent finds its config directory (/etc/neutron.conf.d) itself: oslo.config
    looks there by default. kolla only puts rootwrap's config where root_helper reads it.
    """
    return _dump(
        {
            "command": "neutron-ovn-metadata-agent",
            "config_files": [_copy(rootwrap_source, rootwrap_dest, owner="root:root")],
            "permissions": [
                {"path": "/var/lib/neutron", "owner": "neutron:neutron", "recurse": True},
                # the agent's TLS certificate, when one is mounted
                {"path": "/etc/pki/tls/certs/ovn_metadata.crt", "owner": "neutron:neutron", "perm": "0644",
                 "optional": True},
                {"path": "/etc/pki/tls/private/ovn_metadata.key", "owner": "neutron:neutron", "perm": "0644",
                 "optional": True},
            ],
        }
    )
