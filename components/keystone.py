"""`NovaKeystoneService`: nova's compute service and endpoints in Keystone's catalog."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components import k8s as kube
from components.jobs import JOB_CONFIG_DIR, config_job
from components.render import config_hash, keystone_registration_files
from components.render.keystone import CLOUDS_YAML, REGISTER_SCRIPT
from components.settings import Keystone

JOB_NAME = "nova-keystone-registration"


@dataclass(frozen=True)
class KeystoneServiceSpec:
    """What the registration Job registers, where it runs and as whom."""

    keystone: Keystone  # the region and URLs to register, and nova's service user
    namespace: str  # where the Job runs; the endpoints name its compute API Services
    image: str  # runs the script (openstacksdk): nova-api's image
    password: pulumi.Output[str]  # the service user's (secret)
    skip_await: bool = False


class NovaKeystoneService(pulumi.ComponentResource):
    """A Secret with what to register and the nova user's credentials, and a Job
    that registers it; a changed endpoint or password re-runs the Job."""

    def __init__(self, name: str, spec: KeystoneServiceSpec, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("openstack-nova:keystone:NovaKeystoneService", name, {}, opts)
        ns, skip = spec.namespace, spec.skip_await
        labels = kube.labels("nova-keystone")
        files: pulumi.Output[dict[str, str]] = pulumi.Output.secret(
            spec.password.apply(lambda pw: keystone_registration_files(spec.keystone, ns, pw)))
        self.config_secret = k8s.core.v1.Secret(
            f"{name}-config",
            metadata=kube.object_meta(f"{JOB_NAME}-config", ns, labels, skip),
            string_data=files,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.job = config_job(
            f"{name}-registration", job_name=JOB_NAME, namespace=ns, image=spec.image,
            command=["python3", f"{JOB_CONFIG_DIR}/{REGISTER_SCRIPT}"], config_secret=f"{JOB_NAME}-config",
            # openstacksdk finds the nova user's cloud here
            env={"OS_CLIENT_CONFIG_FILE": f"{JOB_CONFIG_DIR}/{CLOUDS_YAML}"},
            labels=labels, skip_await=skip,
            annotations={kube.CONFIG_HASH_ANNOTATION: kube.unsecret_hash(files.apply(config_hash))},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.config_secret]),
        )
        self.register_outputs({})
