"""The engine's floor: as many trivial resources as the program has, and no logic.

Dynamic resources with one small input, served by the same dynamic provider
plugin as the program's PlaybookRuns, in chains of `chain` (a node's services
depend on each other), under one component.
"""

import pulumi
from pulumi.dynamic import Resource

from tools.bench.floor.noop import NoopProvider


class Trivial(Resource):
    """A dynamic resource of the SDK's own type (dynamic:Resource), served by the plugin that serves
    PlaybookRun."""


config = pulumi.Config()
count = config.require_int("resources")
chain = config.get_int("chain") or 5
parent = pulumi.ComponentResource("bench:floor:Group", "group")
previous: Trivial | None = None
for index in range(count):
    after = [previous] if previous is not None and index % chain else []
    previous = Trivial(NoopProvider(), f"r{index}", {"value": str(index)},
                        pulumi.ResourceOptions(parent=parent, depends_on=after))
parent.register_outputs({})
