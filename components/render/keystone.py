"""What the program registers in Keystone for nova: the compute service and its endpoints.

Upstream, nova-operator asks keystone-operator for this (KeystoneService and
KeystoneEndpoint); here a Job runs a small openstacksdk script as the nova
service user, which Keystone gives the admin role in project `service`.
"""

from __future__ import annotations

import json

from components.settings import Keystone

from . import names
from .engine import TEMPLATES, render

SERVICE_NAME = "nova"
SERVICE_TYPE = "compute"
SERVICE_DESCRIPTION = "Nova Compute Service"
REGISTER_SCRIPT = "keystone-register.py"
CLOUDS_YAML = "clouds.yaml"
REGISTRATION_JSON = "keystone-registration.json"


def compute_endpoints(namespace: str) -> dict[str, str]:
    """The compute API's public and internal endpoint URLs in `namespace`, as nova-operator forms them."""
    return {
        interface: f"http://{names.service_host(service, namespace)}:{names.API_PORT}/v2.1"
        for interface, service in (("public", names.API_PUBLIC_SERVICE), ("internal", names.API_INTERNAL_SERVICE))
    }


def registration(keystone: Keystone, namespace: str) -> dict[str, object]:
    """What the registration Job converges Keystone to (no secrets)."""
    return {
        "name": SERVICE_NAME,
        "type": SERVICE_TYPE,
        "description": SERVICE_DESCRIPTION,
        "region": keystone.region,
        "endpoints": compute_endpoints(namespace),
    }


def clouds_yaml(keystone: Keystone, password: str) -> str:
    """The nova service user as openstacksdk's cloud `nova`, for the Jobs that call OpenStack APIs."""
    return render(CLOUDS_YAML + ".j2", keystone={
        "internal_url": keystone.internal_url, "username": keystone.service_user,
        "password": password, "region": keystone.region,
    })


def keystone_registration_files(keystone: Keystone, namespace: str, password: str) -> dict[str, str]:
    """The files of the registration Job's Secret: the script, what to register, and the credentials."""
    return {
        REGISTER_SCRIPT: (TEMPLATES / REGISTER_SCRIPT).read_text(),
        REGISTRATION_JSON: json.dumps(registration(keystone, namespace), indent=2, sort_keys=True) + "\n",
        CLOUDS_YAML: clouds_yaml(keystone, password),
    }
