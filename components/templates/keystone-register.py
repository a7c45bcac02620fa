"""Registers nova's service and endpoints in Keystone; run by the keystone-registration Job.

Reads what to register from keystone-registration.json and authenticates as
cloud `nova` of clouds.yaml (the nova service user). Converges: a missing
service or endpoint is created, an endpoint with another URL is updated,
nothing else is touched. Uses openstacksdk, which every nova image ships.
"""

import json
import os
import sys

import openstack
import openstack.config

CONFIG_DIR = os.environ.get("REGISTRATION_CONFIG_DIR", "/var/lib/openstack/config")


def main() -> int:
    with open(os.path.join(CONFIG_DIR, "keystone-registration.json")) as f:
        want = json.load(f)
    # nova's region may be one Keystone itself is not listed in (a region of its own, as the
    # real-cluster guide makes): Keystone is reached where the service user authenticates,
    # not looked up in the catalog under nova's region.
    auth_url = openstack.config.OpenStackConfig().get_one(cloud="nova").auth["auth_url"]
    conn = openstack.connect(cloud="nova", identity_endpoint_override=auth_url)
    identity = conn.identity
    services = [s for s in identity.services() if s.type == want["type"] and s.name == want["name"]]
    if services:
        service = services[0]
        print(f"service {service.name} ({service.type}) exists: {service.id}")
    else:
        service = identity.create_service(name=want["name"], type=want["type"],
                                          description=want["description"], is_enabled=True)
        print(f"service {service.name} ({service.type}) created: {service.id}")
    for interface, url in sorted(want["endpoints"].items()):
        found = [e for e in identity.endpoints(service_id=service.id, interface=interface)
                 if e.region_id == want["region"]]
        if not found:
            identity.create_endpoint(service_id=service.id, interface=interface, url=url,
                                     region_id=want["region"], is_enabled=True)
            print(f"endpoint {interface} created: {url}")
            continue
        for endpoint in found[1:]:
            identity.delete_endpoint(endpoint)
            print(f"endpoint {interface} duplicate removed: {endpoint.id}")
        if found[0].url != url:
            identity.update_endpoint(found[0], url=url)
            print(f"endpoint {interface} updated: {found[0].url} -> {url}")
        else:
            print(f"endpoint {interface} unchanged: {url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
