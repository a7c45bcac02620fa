"""Wiring: stack config -> settings -> components."""

import pulumi

from components import k8s as kube
from components import outputs
from components.controlplane import NovaControlPlane
from components.dataplane import EdpmNodeSet, NovaMigrationSSHKey
from components.edpm.context import ControlPlaneFiles
from components.edpm.services.neutron_metadata import NeutronMetadataAgent
from components.libvirt import LibvirtSecrets
from components.mountedfiles import EdpmMountedObjects
from components.registrations import start_before_waiting
from components.render import known_hosts_block
from components.settings import NOVA, SettingsError
from components.settings.source import from_pulumi_config

try:
    settings = from_pulumi_config()
except SettingsError as err:
    # The user's mistake: one readable message, no traceback, nothing changed.
    raise pulumi.RunError(f"invalid stack config:\n{err}") from None

provider = kube.provider("kubernetes", settings.kubernetes)
on_cluster = pulumi.ResourceOptions(providers=[provider])
control_plane = NovaControlPlane("nova", settings, opts=on_cluster)
migration_key = NovaMigrationSSHKey(
    "nova-migration-ssh-key", settings,
    opts=pulumi.ResourceOptions(providers=[provider], depends_on=[control_plane.namespace]))

metadata: dict[str | None, pulumi.Output[dict[str, str]]] = (
    {None: control_plane.metadata_neutron_config} if control_plane.metadata_neutron_config is not None
    else {n: c.metadata_neutron_config for n, c in control_plane.cells.items()
          if c.metadata_neutron_config is not None}
)
files = ControlPlaneFiles(
    compute_configs={n: c.compute_config for n, c in control_plane.cells.items() if c.compute_config is not None},
    metadata_configs=metadata,
    migration_private_key=migration_key.private_key,
    migration_public_key=migration_key.public_key,
)
known_hosts = known_hosts_block(settings.dataplane.node_sets)
# libvirt's SASL password (libvirt-secret) and, for node sets with TLS, its CA and node certificates.
libvirt = LibvirtSecrets("libvirt", settings,
                         opts=pulumi.ResourceOptions(providers=[provider], depends_on=[control_plane.namespace]))
agent = NeutronMetadataAgent(image=settings.images.neutron_metadata_agent, ovn=settings.dataplane.ovn)
# The Secrets and ConfigMaps extraMounts give the nodes (e.g. Ceph's), read from the namespace.
mounted = (EdpmMountedObjects("edpm-mounted", settings, opts=on_cluster)
           if any(s.mounted_files for s in settings.dataplane.node_sets) else None)
node_sets = [EdpmNodeSet(s.name, s, files, settings.dataplane.custom_services, known_hosts, agent,
                         compute_image=settings.images.compute, libvirt=libvirt.files,
                         mounted=mounted.for_node_set(s) if mounted else None)
             for s in settings.dataplane.node_sets]

# Once a cell's computes are deployed, its host discovery runs (again for each new compute).
for cell_name, cell in control_plane.cells.items():
    computes = [(s, n) for s in node_sets for n in s.nodes_of_cell(cell_name)]
    if computes:
        cell.discover_hosts(
            hosts=[n.host_name for _, n in computes],
            depends_on=[s.runs[n.name][NOVA] for s, n in computes if NOVA in s.runs[n.name]],
        )

pulumi.export("namespace", settings.namespace)
pulumi.export("cells", [c.name for c in settings.nova.cells])
pulumi.export("deployedHashes", {s.node_set_name: s.deployed_hashes for s in node_sets})
pulumi.export("inSync", {s.node_set_name: s.in_sync for s in node_sets})
outputs.export(settings)

# Last: every registration starts before the SDK waits for them (components/registrations.py).
start_before_waiting()
