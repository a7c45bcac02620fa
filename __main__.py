"""Wiring: stack config -> settings -> components."""

import pulumi

from components import k8s as kube
from components.controlplane import NovaControlPlane
from components.dataplane import EdpmNodeSet
from components.settings import SettingsError
from components.settings.source import from_pulumi_config

try:
    settings = from_pulumi_config()
except SettingsError as err:
    # The user's mistake: one readable message, no traceback, nothing changed.
    raise pulumi.RunError(f"invalid stack config:\n{err}") from None

provider = kube.provider("kubernetes", settings.kubernetes)
control_plane = NovaControlPlane("nova", settings, opts=pulumi.ResourceOptions(providers=[provider]))
node_sets = {s.name: EdpmNodeSet(s.name, s) for s in settings.dataplane.node_sets}

pulumi.export("namespace", settings.namespace)
pulumi.export("cells", [c.name for c in settings.nova.cells])
pulumi.export("deployedHashes", {name: s.deployed_hashes for name, s in node_sets.items()})
