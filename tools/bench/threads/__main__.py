"""The provider-threads item's program: `count` dynamic resources that depend on
nothing, each created in `seconds` (tools/bench/threads/probe.py), so that
`pulumi up --parallel` above `count` leaves only the dynamic provider to limit
how many are created at once."""

import pulumi
from pulumi.dynamic import Resource

from tools.bench.threads.probe import ProbeProvider


class Probe(Resource):
    """A dynamic resource of the SDK's own type (dynamic:Resource), served by the plugin that serves
    PlaybookRun."""


config = pulumi.Config()
seconds = config.require_float("seconds")
for index in range(config.require_int("count")):
    Probe(ProbeProvider(), f"probe{index}", {"name": f"probe{index}", "seconds": seconds})
