"""Converges keystone to what nova's neighbours promise; run by the keystone setup Job.

Reads keystone-setup.json (project, roles, service users with their passwords,
catalog services with their endpoints) and acts as cloud `default` of
clouds.yaml (the admin). Creates what is missing, sets every listed user's
password and roles, fixes endpoint URLs; touches nothing else. openstacksdk,
not the openstack CLI: the CLI takes a new password only in its arguments or
from a terminal.
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request
from typing import Any

import openstack

CONFIG_DIR = os.environ.get("SETUP_CONFIG_DIR", "/var/lib/openstack/config")
DOMAIN = "default"
WAIT_SECONDS = 180


def wait_for_keystone(url: str) -> None:
    """Until keystone answers at all: a new Service can take a moment to resolve and route."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        try:
            urllib.request.urlopen(url, timeout=5).close()
            return
        except urllib.error.HTTPError:
            return  # an answer, even 300 Multiple Choices
        except OSError as e:
            if time.monotonic() > deadline:
                raise SystemExit(f"keystone does not answer at {url}: {e}") from e
            print(f"waiting for keystone at {url}: {e}", flush=True)
            time.sleep(2)


def ensure_project(identity: Any, name: str) -> Any:
    project = identity.find_project(name, domain_id=DOMAIN)
    if project is None:
        project = identity.create_project(name=name, domain_id=DOMAIN, description=f"{name} project")
        print(f"project {name} created")
    return project


def ensure_role(identity: Any, name: str) -> Any:
    role = identity.find_role(name)
    if role is None:
        role = identity.create_role(name=name)
        print(f"role {name} created")
    return role


def ensure_user(identity: Any, want: dict[str, Any], project: Any, roles: dict[str, Any]) -> None:
    user = identity.find_user(want["name"], domain_id=DOMAIN)
    if user is None:
        user = identity.create_user(name=want["name"], domain_id=DOMAIN, password=want["password"],
                                    default_project_id=project.id, is_enabled=True)
        print(f"user {want['name']} created")
    else:
        identity.update_user(user, password=want["password"], is_enabled=True)
        print(f"user {want['name']}: password set")
    for name in want["roles"]:
        identity.assign_project_role_to_user(project, user, roles[name])
    print(f"user {want['name']}: roles {', '.join(want['roles'])} on project {project.name}")


def ensure_service(identity: Any, want: dict[str, Any], region: str) -> None:
    found = [s for s in identity.services() if s.type == want["type"] and s.name == want["name"]]
    service = found[0] if found else identity.create_service(
        name=want["name"], type=want["type"], description=want["description"], is_enabled=True)
    if not found:
        print(f"service {want['name']} ({want['type']}) created")
    for interface, url in sorted(want["endpoints"].items()):
        endpoints = [e for e in identity.endpoints(service_id=service.id, interface=interface)
                     if e.region_id == region]
        if not endpoints:
            identity.create_endpoint(service_id=service.id, interface=interface, url=url,
                                     region_id=region, is_enabled=True)
            print(f"endpoint {want['name']} {interface} created: {url}")
        elif endpoints[0].url != url:
            identity.update_endpoint(endpoints[0], url=url)
            print(f"endpoint {want['name']} {interface} updated: {url}")


def main() -> int:
    with open(os.path.join(CONFIG_DIR, "keystone-setup.json")) as f:
        want = json.load(f)
    wait_for_keystone(want["keystone_url"])
    identity = openstack.connect(cloud="default").identity
    project = ensure_project(identity, want["project"])
    roles = {name: ensure_role(identity, name) for name in want["roles"]}
    for user in want["users"]:
        ensure_user(identity, user, project, roles)
    for service in want["services"]:
        ensure_service(identity, service, want["region"])
    print("keystone setup converged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
