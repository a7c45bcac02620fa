"""Jobs: nova-manage (db sync, cell mapping, host discovery, the db purge CronJob) and the Keystone registration."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s

from components import k8s as kube

CONF_DIR = "/etc/nova/nova.conf.d"
# Every nova-manage Job reads the files the config Secrets project into CONF_DIR.
NOVA_MANAGE = f"nova-manage --config-dir {CONF_DIR}"
# A service config Secret's nova.conf and database client config, as a Job mounts them.
SERVICE_CONF_FILES = {"01-nova.conf": "01-nova.conf", "my.cnf": "my.cnf"}
# Where a Job that runs from one config Secret finds its files.
JOB_CONFIG_DIR = "/var/lib/openstack/config"
# As upstream's Jobs: retried in place, six times at most.
BACKOFF_LIMIT = 6


def _job(
    resource_name: str,
    *,
    job_name: str,
    namespace: str,
    labels: Mapping[str, str],
    skip_await: bool,
    annotations: Mapping[str, pulumi.Input[str]],
    container: k8s.core.v1.ContainerArgs,
    volumes: Sequence[k8s.core.v1.VolumeArgs],
    opts: pulumi.ResourceOptions,
) -> k8s.batch.v1.Job:
    """A Job whose pod template carries `annotations` (input hashes): a changed
    input replaces the Job, so it runs again."""
    return k8s.batch.v1.Job(
        resource_name,
        metadata=kube.object_meta(job_name, namespace, labels, skip_await),
        spec=k8s.batch.v1.JobSpecArgs(
            backoff_limit=BACKOFF_LIMIT,
            template=k8s.core.v1.PodTemplateSpecArgs(
                metadata=k8s.meta.v1.ObjectMetaArgs(labels=dict(labels), annotations=dict(annotations)),
                spec=k8s.core.v1.PodSpecArgs(restart_policy="OnFailure", containers=[container],
                                             volumes=list(volumes)),
            ),
        ),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(delete_before_replace=True)),
    )


def _manage_pod(
    *, image: str, script: str, config_sources: Sequence[tuple[str, Mapping[str, str]]],
    env: Mapping[str, str] | None,
) -> tuple[k8s.core.v1.ContainerArgs, list[k8s.core.v1.VolumeArgs]]:
    """The container (and its volume) running `script` with nova.conf.d assembled from
    config Secrets; see manage_job."""
    projected = [
        k8s.core.v1.VolumeProjectionArgs(secret=k8s.core.v1.SecretProjectionArgs(
            name=secret, items=[k8s.core.v1.KeyToPathArgs(key=k, path=p) for k, p in items.items()]))
        for secret, items in config_sources
    ]
    container = k8s.core.v1.ContainerArgs(
        name="nova-manage", image=image, image_pull_policy="IfNotPresent",
        command=["/bin/bash", "-c", script],
        env=[k8s.core.v1.EnvVarArgs(name=k, value=v) for k, v in (env or {}).items()] or None,
        volume_mounts=[k8s.core.v1.VolumeMountArgs(name="config", mount_path=CONF_DIR, read_only=True)],
    )
    volume = k8s.core.v1.VolumeArgs(
        name="config", projected=k8s.core.v1.ProjectedVolumeSourceArgs(sources=projected, default_mode=0o400))
    return container, [volume]


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
    env: Mapping[str, str] | None = None,
) -> k8s.batch.v1.Job:
    """A Job running `script` with nova.conf.d assembled from config Secrets.

    `config_sources` is (secret name, {key: file name}) in load order; a later
    file wins, as oslo.config does. `env`: plain (not secret) values the script reads.
    """
    container, volumes = _manage_pod(image=image, script=script, config_sources=config_sources, env=env)
    return _job(
        resource_name, job_name=job_name, namespace=namespace, labels=labels, skip_await=skip_await,
        annotations=annotations, container=container, volumes=volumes, opts=opts,
    )


def manage_cron_job(
    resource_name: str,
    *,
    job_name: str,
    namespace: str,
    schedule: str,
    image: str,
    script: str,
    config_sources: Sequence[tuple[str, Mapping[str, str]]],
    env: Mapping[str, str],
    labels: Mapping[str, str],
    skip_await: bool,
    opts: pulumi.ResourceOptions,
) -> k8s.batch.v1.CronJob:
    """A CronJob running `script` as manage_job does, one run at a time: a run still
    going when the next is due makes the next one skip."""
    container, volumes = _manage_pod(image=image, script=script, config_sources=config_sources, env=env)
    return k8s.batch.v1.CronJob(
        resource_name,
        metadata=kube.object_meta(job_name, namespace, labels, skip_await),
        spec=k8s.batch.v1.CronJobSpecArgs(
            schedule=schedule,
            concurrency_policy="Forbid",
            job_template=k8s.batch.v1.JobTemplateSpecArgs(
                metadata=k8s.meta.v1.ObjectMetaArgs(labels=dict(labels)),
                spec=k8s.batch.v1.JobSpecArgs(
                    parallelism=1, completions=1, backoff_limit=BACKOFF_LIMIT,
                    template=k8s.core.v1.PodTemplateSpecArgs(
                        metadata=k8s.meta.v1.ObjectMetaArgs(labels=dict(labels)),
                        spec=k8s.core.v1.PodSpecArgs(restart_policy="OnFailure", containers=[container],
                                                     volumes=volumes),
                    ),
                ),
            ),
        ),
        opts=opts,
    )


def config_job(
    resource_name: str,
    *,
    job_name: str,
    namespace: str,
    image: str,
    command: Sequence[str],
    config_secret: str,
    env: Mapping[str, str],
    labels: Mapping[str, str],
    skip_await: bool,
    annotations: Mapping[str, pulumi.Input[str]],
    opts: pulumi.ResourceOptions,
) -> k8s.batch.v1.Job:
    """A Job running `command` with one Secret's files in JOB_CONFIG_DIR (readable by root
    only); `env`: plain (not secret) values the command reads."""
    return _job(
        resource_name, job_name=job_name, namespace=namespace, labels=labels, skip_await=skip_await,
        annotations=annotations,
        container=k8s.core.v1.ContainerArgs(
            name=job_name, image=image, image_pull_policy="IfNotPresent", command=list(command),
            env=[k8s.core.v1.EnvVarArgs(name=k, value=v) for k, v in env.items()] or None,
            volume_mounts=[k8s.core.v1.VolumeMountArgs(name="config", mount_path=JOB_CONFIG_DIR, read_only=True)],
        ),
        volumes=[k8s.core.v1.VolumeArgs(name="config", secret=k8s.core.v1.SecretVolumeSourceArgs(
            secret_name=config_secret, default_mode=0o400))],
        opts=opts,
    )
