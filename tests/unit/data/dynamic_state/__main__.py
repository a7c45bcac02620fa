"""A Pulumi program with one dynamic resource of each class, as the project's own program makes
them: a PlaybookRun under a node set, generated secrets and keys, a CA and a certificate.

state.json beside it is the state this program left with the code of commit 22085c7, before
the resources had type names of their own and before the Ansible runner had a package of its
own (recorded with `pulumi up` and stand-ins for ssh and ansible-playbook, tools/bench's, then
`pulumi stack export --show-secrets`, each generated secret replaced by a placeholder).
tests/unit/test_dynamic_state.py imports it and runs this program with today's code against it.
"""

from __future__ import annotations

import pulumi

try:
    from components.ansible_runner.playbook import PlaybookRun
except ImportError:  # the code the state was recorded with
    from components.playbook import PlaybookRun  # type: ignore[no-redef]
from components.certificates import CertificateAuthority, IssuedCertificate
from components.generated import GeneratedSecret, GeneratedSSHKey

NODE_SET = "openstack-nova:dataplane:EdpmNodeSet"
NODE = {"name": "edpm-compute-0", "address": "192.0.2.10", "port": 22, "user": "root"}
KNOWN_HOSTS = "192.0.2.10 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFqzRVBUVYMKXFBkmsIdL+HBiltEeUZqK8HEogdpCv/t\n"
# What the stand-in ssh was given: not a key.
SSH_KEY = "not a key: no ssh reads it\n"


class NodeSet(pulumi.ComponentResource):
    def __init__(self, name: str) -> None:
        super().__init__(NODE_SET, name, {}, None)
        PlaybookRun(
            f"{NODE['name']}-nova", playbook="nova.yml", host=NODE, ssh_private_key=SSH_KEY,
            known_hosts=KNOWN_HOSTS, files={"01-nova.conf": "[DEFAULT]\n"},
            public_files={"25-nova-extra.conf": "[libvirt]\ncpu_mode = custom\n"}, variables={"edpm_nova": True},
            known_hosts_file="/etc/edpm/known_hosts", node_set=name, parent_type=NODE_SET,
            opts=pulumi.ResourceOptions(parent=self))
        self.register_outputs({})


NodeSet("edpm-compute")
GeneratedSecret("nova-password")
GeneratedSSHKey("nova-migration-ssh-key", comment="nova-migration")
ca = CertificateAuthority("rootca-libvirt", common_name="rootca-libvirt")
IssuedCertificate("edpm-compute-0-libvirt", ca, common_name="edpm-compute-0.ctlplane.example.com",
                  organization="", dns_names=["edpm-compute-0.ctlplane.example.com"], ip_addresses=["192.0.2.10"])
