"""Wiring: stack config -> settings -> components."""

import json
import os

import pulumi
import pulumi_kubernetes as k8s

from components.playbook import PlaybookRun

config = pulumi.Config()
namespace = config.get("namespace") or "openstack"
dataplane = config.require_object("dataplane")

ns = k8s.core.v1.Namespace(
    "namespace",
    metadata={"name": namespace, "annotations": {"pulumi.com/skipAwait": "true"}},
)
k8s.core.v1.Secret(
    "edpm-nodes",
    metadata={"name": "openstack-nova-edpm-nodes", "namespace": namespace},
    string_data={"nodes.json": json.dumps(sorted(n for s in dataplane["nodeSets"].values() for n in s["nodes"]))},
    opts=pulumi.ResourceOptions(depends_on=[ns]),
)
for set_name, node_set in dataplane["nodeSets"].items():
    template = node_set["nodeTemplate"]
    key = open(os.path.expandvars(template["ansibleSSHPrivateKeyFile"])).read()
    known = open(os.path.expandvars(template["knownHostsFile"])).read()
    for node_name, node in node_set["nodes"].items():
        PlaybookRun(
            f"{node_name}-marker",
            playbook="node-marker.yml",
            host={"name": node_name, "address": node["ansibleHost"], "port": template.get("ansiblePort", 22),
                  "user": template.get("ansibleUser", "root")},
            ssh_private_key=pulumi.Output.secret(key),
            known_hosts=known,
            public_files={"edpm-node.json": json.dumps({"node": node_name, "nodeSet": set_name,
                                                        "cell": node_set.get("cell")}, indent=2) + "\n"},
        )
