"""Wiring: stack config -> settings -> components."""

import pulumi

from components import k8s as kube
from components import outputs
from components.controlplane import NovaControlPlane, control_plane_spec
from components.dataplane import EdpmDataPlane, control_plane_files
from components.registrations import start_before_waiting
from components.settings import SettingsError
from components.stackconfig import from_pulumi_config

try:
    settings = from_pulumi_config()
except SettingsError as err:
    # The user's mistake: one readable message, no traceback, nothing changed.
    raise pulumi.RunError(f"invalid stack config:\n{err}") from None

provider = kube.provider("kubernetes", settings.kubernetes)
control_plane = NovaControlPlane("nova", control_plane_spec(settings),
                                 opts=pulumi.ResourceOptions(providers=[provider]))
data_plane = EdpmDataPlane(settings, control_plane_files(control_plane), provider=provider,
                           namespace=control_plane.namespace, cells=control_plane.cells)

pulumi.export("namespace", settings.namespace)
pulumi.export("cells", list(control_plane.cells))
# the records the data plane's DNS needs, for a site whose DNS is not fed from the cluster
pulumi.export("dataPlaneDns", control_plane.data_plane_dns)
pulumi.export("deployedHashes", data_plane.deployed_hashes)
pulumi.export("inSync", data_plane.in_sync)
outputs.export(settings)

# Last: every registration starts before the SDK waits for them (components/registrations.py).
start_before_waiting()
