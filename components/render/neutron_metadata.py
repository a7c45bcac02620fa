"""The neutron OVN metadata agent's files on an EDPM node, as edpm-ansible's
edpm_neutron_metadata role and neutron-operator lay them out.

In the agent's config directory (/etc/neutron.conf.d in its container, where
oslo.config finds it by default and loads its *.conf in name order):
  01-neutron-ovn-metadata-agent.conf   the upstream role's defaults
  01-rootwrap.conf                     rootwrap's config; kolla copies it to /etc/neutron/rootwrap.conf
  05-nova-metadata.conf                nova's side (render.metadata; secret)
  10-neutron-metadata.conf             the OVN southbound database (neutron-operator's file)
  25-/26-neutron-metadata-extra*.conf  customServiceConfig (render.edpm)
Elsewhere on the node: the container's kolla config, the haproxy wrapper that
runs each network's haproxy in a container of its own, and its kill script.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from components.settings import Node, NodeSet, Ovn
from components.settings import agentvars as var

from .engine import render
from .kolla import metadata_agent_config_json

AGENT_CONF = "01-neutron-ovn-metadata-agent.conf"
ROOTWRAP_CONF = "01-rootwrap.conf"
OVN_CONF = "10-neutron-metadata.conf"  # the key of neutron-operator's Secret
KOLLA_CONFIG = "ovn_metadata_agent.json"
HAPROXY_WRAPPER = "ovn_metadata_haproxy_wrapper"
HAPROXY_KILL = "haproxy-kill"

# Inside the agent's container (fixed by its volumes, as upstream's).
CONTAINER_CONFIG_DIR = "/etc/neutron.conf.d"
CONTAINER_ROOTWRAP_CONF = "/etc/neutron/rootwrap.conf"
CONTAINER_KILL_SCRIPTS_DIR = "/etc/neutron/kill_scripts"
CONTAINER_LOG_DIR = "/var/log/neutron"
STATE_PATH = "/var/lib/neutron"

# On the node: the upstream role's defaults of its variables.
DEFAULT_CONFIG_DIR = "/var/lib/openstack/neutron-ovn-metadata-agent"
DEFAULT_LIB_DIR = "/var/lib/neutron"


@dataclass(frozen=True)
class AgentLayout:
    """Where the agent lives on one node: what the haproxy wrapper must name."""

    image: str
    sidecar_image: str  # the image of each network's haproxy container
    sidecar_debug: bool  # the wrapper scripts trace their commands (set -x)
    config_dir: str  # the agent's config directory on the node
    lib_dir: str  # its state directory on the node (/var/lib/neutron in the container)


def agent_layout(node_set: NodeSet, node: Node, image: str) -> AgentLayout:
    """The node's layout: upstream's variables in its ansibleVars (node, then node set) or the
    defaults; `image` is the stack's agent image (images.neutronMetadataAgent)."""
    levels: tuple[Mapping[str, Any], ...] = (node.ansible_vars, node_set.node_template.ansible_vars)
    agent_image = str(var.agent_var(levels, var.IMAGE, image))
    return AgentLayout(
        image=agent_image,
        sidecar_image=str(var.agent_var(levels, var.SIDECAR_IMAGE, agent_image)),
        sidecar_debug=bool(var.agent_var(levels, var.SIDECAR_DEBUG, False)),
        config_dir=str(var.agent_var(levels, var.CONFIG_DIR, DEFAULT_CONFIG_DIR)),
        lib_dir=str(var.agent_var(levels, var.LIB_DIR, DEFAULT_LIB_DIR)),
    )


def neutron_metadata_agent_files(layout: AgentLayout, ovn: Ovn) -> dict[str, str]:
    """File name -> content of the agent's own files for one node (nothing secret)."""
    debug = layout.sidecar_debug
    return {
        AGENT_CONF: render("neutron-metadata/agent.conf.j2", state_path=STATE_PATH,
                           rootwrap_conf=CONTAINER_ROOTWRAP_CONF),
        ROOTWRAP_CONF: render("neutron-metadata/rootwrap.conf.j2", kill_scripts_dir=CONTAINER_KILL_SCRIPTS_DIR),
        OVN_CONF: render("neutron-metadata/ovn.conf.j2", sb_connection=ovn.sb_connection),
        KOLLA_CONFIG: metadata_agent_config_json(f"{CONTAINER_CONFIG_DIR}/{ROOTWRAP_CONF}", CONTAINER_ROOTWRAP_CONF),
        HAPROXY_WRAPPER: render("neutron-metadata/haproxy-wrapper.sh.j2", debug=debug, image=layout.sidecar_image,
                                config_dir=layout.config_dir, lib_dir=layout.lib_dir),
        HAPROXY_KILL: render("neutron-metadata/haproxy-kill.sh.j2", debug=debug,
                             log_file=f"{CONTAINER_LOG_DIR}/kill-script.log"),
    }
