"""What the service-cleanup Job deletes: service records of control-plane pods that are gone.

nova-scheduler and nova-conductor register a service record under their host,
the pod name (`nova-scheduler-2`). When a StatefulSet scales down, or a cell
and its conductor leave the stack, the record stays and shows "down" for ever.
As nova-operator does after each rollout, a Job lists the records of these
binaries through the compute API and deletes those of pods that no longer
exist: a host named like one of this program's StatefulSets whose ordinal is
at or above the StatefulSet's replicas, or whose StatefulSet is gone.
nova-compute records are never listed here (removing a node deletes its own).
"""

from __future__ import annotations

import json
import re
from typing import Any

from components.settings import Nova

from . import names
from .engine import TEMPLATES
from .keystone import CLOUDS_YAML, clouds_yaml

CLEANUP_SCRIPT = "nova-service-cleanup.py"
CLEANUP_PLAN = "nova-service-cleanup.json"
# 2.53: service ids are UUIDs, so a delete finds its record in whichever cell holds it
MICROVERSION = "2.53"


def service_cleanup_plan(nova: Nova) -> dict[str, Any]:
    """Per binary: which StatefulSet names are this program's (`owned`, a regex) and
    the replicas of each that runs now. No secrets."""
    conductors = {names.conductor(c.name): c.conductor.replicas for c in nova.cells}
    schedulers = {names.SCHEDULER: nova.scheduler.replicas}
    return {
        "microversion": MICROVERSION,
        "binaries": {
            "nova-scheduler": {"owned": re.escape(names.SCHEDULER), "statefulsets": schedulers},
            # any cell's, so a conductor of a cell the stack dropped counts as gone
            "nova-conductor": {"owned": names.conductor(names.CELL_NAME_PATTERN), "statefulsets": conductors},
        },
    }


def service_cleanup_files(nova: Nova, password: str) -> dict[str, str]:
    """The files of the cleanup Job's Secret: the script, its plan and the nova user's credentials."""
    return {
        CLEANUP_SCRIPT: (TEMPLATES / CLEANUP_SCRIPT).read_text(),
        CLEANUP_PLAN: json.dumps(service_cleanup_plan(nova), indent=2, sort_keys=True) + "\n",
        CLOUDS_YAML: clouds_yaml(nova.keystone, password),
    }
