"""Delete this node's nova-compute service record through the compute API.

Run by the edpm_nova role's stop tasks once nova-compute is stopped, with the
node's own nova config (--config-dir): it authenticates as nova's service user
([service_user]) and finds the compute endpoint in the Keystone catalog.
Deleting a nova-compute service makes nova delete its compute nodes, their
Placement resource providers and the host's cell mapping too; nova refuses
(409) while the host still has instances.

Prints one JSON object: {"host": ..., "deleted": [service ids]}.
Exit 0 when the host has no service record left, 1 otherwise (message on stderr).
"""

from __future__ import annotations

import json
import socket
import sys

from keystoneauth1 import adapter, exceptions, loading
from oslo_config import cfg

AUTH_GROUP = "service_user"
REGION_GROUP = "placement"  # nova's compute config names the region here
# 2.53: service ids are UUIDs, so a delete can never hit another cell's record
MICROVERSION = "2.53"


def compute_api(conf: cfg.ConfigOpts) -> adapter.Adapter:
    auth = loading.load_auth_from_conf_options(conf, AUTH_GROUP)
    session = loading.load_session_from_conf_options(conf, AUTH_GROUP, auth=auth)
    return adapter.Adapter(
        session,
        service_type="compute",
        interface="internal",
        region_name=conf[REGION_GROUP].region_name,
        default_microversion=MICROVERSION,
    )


def main(argv: list[str]) -> int:
    conf = cfg.ConfigOpts()
    conf.register_opt(cfg.StrOpt("host", default=socket.gethostname()))
    conf.register_opt(cfg.StrOpt("region_name"), group=REGION_GROUP)
    loading.register_auth_conf_options(conf, AUTH_GROUP)
    loading.register_session_conf_options(conf, AUTH_GROUP)
    conf(argv, project="nova", default_config_files=[], default_config_dirs=[])

    deleted = []
    try:
        api = compute_api(conf)
        listed = api.get("/os-services", params={"binary": "nova-compute", "host": conf.host})
        for service in listed.json()["services"]:
            api.delete(f"/os-services/{service['id']}")
            deleted.append(service["id"])
    except exceptions.Conflict as error:
        print(f"{conf.host}: nova keeps its nova-compute service record: {error.message} "
              "Once the host has no instances, run `pulumi up` again.", file=sys.stderr)
        return 1
    except exceptions.ClientException as error:
        print(f"{conf.host}: the compute API could not delete the nova-compute service record: {error}. "
              "Once the control plane answers, `pulumi up` tries again.", file=sys.stderr)
        return 1
    finally:
        print(json.dumps({"host": conf.host, "deleted": deleted}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
