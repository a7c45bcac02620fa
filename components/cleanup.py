"""`NovaServiceCleanup`: deletes the service records of control-plane pods that are gone."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components import k8s as kube
from components.jobs import JOB_CONFIG_DIR, config_job
from components.render import CLEANUP_SCRIPT, config_hash, names, service_cleanup_files
from components.render.keystone import CLOUDS_YAML
from components.settings import Nova


@dataclass(frozen=True)
class ServiceCleanupSpec:
    """What the cleanup Job runs with: whose records it keeps, and as whom it calls the compute API."""

    nova: Nova  # the replicas of the scheduler and of each cell's conductor, and nova's service user
    namespace: str
    image: str  # runs the script (openstacksdk): nova-api's image
    password: pulumi.Output[str]  # the service user's (secret)
    skip_await: bool = False


class NovaServiceCleanup(pulumi.ComponentResource):
    """A Secret with the cleanup script, its plan (the replicas of each scheduler and
    conductor StatefulSet) and the nova user's credentials, and a Job that runs it.

    A changed plan (a scale-down, a cell gone) replaces the Job, so it runs again
    once `after` (the StatefulSets' rollouts, the compute API and its catalog
    entry) is done; with nothing changed it does not run at all.
    """

    def __init__(
        self, name: str, spec: ServiceCleanupSpec, after: Sequence[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("openstack-nova:controlplane:NovaServiceCleanup", name, {}, opts)
        ns, skip = spec.namespace, spec.skip_await
        labels = kube.labels("nova-service-cleanup")
        secret_name = f"{names.SERVICE_CLEANUP_JOB}-config"
        files: pulumi.Output[dict[str, str]] = pulumi.Output.secret(
            spec.password.apply(lambda pw: service_cleanup_files(spec.nova, pw)))
        self.config_secret = k8s.core.v1.Secret(
            f"{name}-config",
            metadata=kube.object_meta(secret_name, ns, labels, skip),
            string_data=files,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.job = config_job(
            f"{name}-job", job_name=names.SERVICE_CLEANUP_JOB, namespace=ns, image=spec.image,
            command=["python3", f"{JOB_CONFIG_DIR}/{CLEANUP_SCRIPT}"], config_secret=secret_name,
            # openstacksdk finds the nova user's cloud here
            env={"OS_CLIENT_CONFIG_FILE": f"{JOB_CONFIG_DIR}/{CLOUDS_YAML}", "CLEANUP_CONFIG_DIR": JOB_CONFIG_DIR},
            labels=labels, skip_await=skip,
            annotations={kube.CONFIG_HASH_ANNOTATION: kube.unsecret_hash(files.apply(config_hash))},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.config_secret, *after]),
        )
        self.register_outputs({})
