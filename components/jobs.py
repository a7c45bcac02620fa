"""nova-manage Jobs: db sync, cell mapping, host discovery."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s

from components import k8s as kube

CONF_DIR = "/etc/nova/nova.conf.d"
# Every Job reads the files the config Secrets project into CONF_DIR.
NOVA_MANAGE = f"nova-manage --config-dir {CONF_DIR}"
# A service config Secret's nova.conf and database client config, as a Job mounts them.
SERVICE_CONF_FILES = {"01-nova.conf": "01-nova.conf", "my.cnf": "my.cnf"}


def manage_job(
    resource_name: str,
    *,
    job_name: str,
    namespace: str,
    image: str,
    script: str,
    config_sources: Sequence[tuple[str, Mapping[str, str]]],
    labels: Mapping[str, str],
    skip_await: bool,
    annotations: Mapping[str, pulumi.Input[str]],
    opts: pulumi.ResourceOptions,
) -> k8s.batch.v1.Job:
    """A Job running `script` with nova.conf.d assembled from config Secrets.

    `config_sources` is (secret name, {key: file name}) in load order; a later
    file wins, as oslo.config does. The pod template carries `annotations`
    (config hashes), so a changed input replaces the Job and it runs again.
    """
    projected = [
        {"secret": {"name": secret, "items": [{"key": k, "path": p} for k, p in items.items()]}}
        for secret, items in config_sources
    ]
    return k8s.batch.v1.Job(
        resource_name,
        metadata=kube.object_metadata(job_name, namespace, labels, skip_await),
        spec={
            "backoff_limit": 6,
            "template": {
                "metadata": {"labels": dict(labels), "annotations": dict(annotations)},
                "spec": {
                    "restart_policy": "OnFailure",
                    "containers": [{
                        "name": "nova-manage",
                        "image": image,
                        "command": ["/bin/bash", "-c", script],
                        "volume_mounts": [{"name": "config", "mount_path": CONF_DIR, "read_only": True}],
                    }],
                    "volumes": [{"name": "config", "projected": {"sources": projected}}],
                },
            },
        },
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(delete_before_replace=True)),
    )
