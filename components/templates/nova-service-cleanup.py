"""Deletes the service records of control-plane pods that no longer exist; run by the
nova-service-cleanup Job once the StatefulSets have rolled out.

Reads nova-service-cleanup.json (per binary: the regex of this deployment's
StatefulSet names and the replicas each runs) and authenticates as cloud `nova`
of clouds.yaml. A record is stale when its host is `<statefulset>-<ordinal>`,
the StatefulSet is this deployment's, and it no longer runs that ordinal.
Anything else is left alone, and only the binaries of the plan are listed:
never nova-compute. Converges: a second run finds nothing to delete.
"""

import contextlib
import json
import os
import re
import sys
from typing import Any

CONFIG_DIR = os.environ.get("CLEANUP_CONFIG_DIR", "/var/lib/openstack/config")
# a StatefulSet pod's name: the StatefulSet's, a dash, its ordinal
POD = re.compile(r"(?P<statefulset>.+)-(?P<ordinal>0|[1-9][0-9]*)")


def stale_services(binary: str, services: list[dict[str, Any]], rule: dict[str, Any]) -> list[dict[str, Any]]:
    """The records among `services` (of `binary`) whose pod its StatefulSet no longer runs."""
    stale = []
    for service in services:
        pod = POD.fullmatch(service["host"])
        if service["binary"] != binary or pod is None:
            continue
        if not re.fullmatch(rule["owned"], pod["statefulset"]):
            continue  # not a pod of this deployment
        replicas = rule["statefulsets"].get(pod["statefulset"])
        if replicas is None or int(pod["ordinal"]) >= replicas:
            stale.append(service)
    return stale


def compute_api(microversion: str) -> Any:
    import openstack
    from keystoneauth1 import adapter

    cloud = openstack.connect(cloud="nova")
    return adapter.Adapter(
        cloud.session, service_type="compute", interface=cloud.config.get_interface("compute"),
        region_name=cloud.config.get_region_name("compute"), default_microversion=microversion,
        # the API may have just rolled: retry connections and 503s before failing the Job
        connect_retries=6, status_code_retries=6,
    )


def main() -> int:
    from keystoneauth1 import exceptions

    with open(os.path.join(CONFIG_DIR, "nova-service-cleanup.json")) as f:
        plan = json.load(f)
    api = compute_api(plan["microversion"])
    for binary, rule in sorted(plan["binaries"].items()):
        services = api.get("/os-services", params={"binary": binary}).json()["services"]
        stale = stale_services(binary, services, rule)
        for service in stale:
            with contextlib.suppress(exceptions.NotFound):  # deleted since it was listed
                api.delete(f"/os-services/{service['id']}")
            print(f"deleted {binary} {service['host']} ({service['state']}, {service['id']})")
        kept = sorted(s["host"] for s in services if s not in stale)
        print(f"{binary}: kept {', '.join(kept) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
