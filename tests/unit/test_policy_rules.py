"""The policy pack's checks, on the properties the engine hands a policy."""

from __future__ import annotations

from typing import Any

import pytest

from policy.rules import credentials_in_configmap, readable_secret_volumes

CONFIGMAP = "kubernetes:core/v1:ConfigMap"


@pytest.mark.parametrize("text", [
    "[neutron]\npassword = pw\n",
    "[DEFAULT]\nmetadata_proxy_shared_secret=abc\n",
    "[keystone_authtoken]\n  memcache_secret_key = k\n",
    "[DEFAULT]\ntransport_url = rabbit://nova:pw@rabbitmq:5672/\n",
    "[database]\nconnection = mysql+pymysql://nova:pw@db/nova\n",
])
def test_credentials_in_a_configmap_are_found(text: str) -> None:
    assert list(credentials_in_configmap(CONFIGMAP, {"data": {"nova.conf": text}})) == [
        "ConfigMap key 'nova.conf' sets a credential; put the file in a Secret instead"]


@pytest.mark.parametrize("text", [
    "[DEFAULT]\ndebug = true\n",
    "[DEFAULT]\ntransport_url = rabbit://rabbitmq:5672/\n",  # no credentials in the URL
    "# password = commented out\n",
    "[neutron]\npassword =\n",  # set to nothing
])
def test_config_without_credentials_passes(text: str) -> None:
    assert list(credentials_in_configmap(CONFIGMAP, {"data": {"nova.conf": text}})) == []


def test_only_configmaps_are_checked_for_credentials() -> None:
    secret = {"stringData": {"nova.conf": "password = pw\n"}, "data": {"nova.conf": "password = pw\n"}}
    assert list(credentials_in_configmap("kubernetes:core/v1:Secret", secret)) == []


def _pod(volumes: list[dict[str, Any]]) -> dict[str, Any]:
    return {"volumes": volumes}


@pytest.mark.parametrize(("type_", "wrap"), [
    ("kubernetes:core/v1:Pod", lambda pod: {"spec": pod}),
    ("kubernetes:apps/v1:StatefulSet", lambda pod: {"spec": {"template": {"spec": pod}}}),
    ("kubernetes:apps/v1:Deployment", lambda pod: {"spec": {"template": {"spec": pod}}}),
    ("kubernetes:batch/v1:Job", lambda pod: {"spec": {"template": {"spec": pod}}}),
    ("kubernetes:batch/v1:CronJob", lambda pod: {"spec": {"jobTemplate": {"spec": {"template": {"spec": pod}}}}}),
])
def test_secret_volumes_others_can_read_are_found_in_every_workload(type_: str, wrap: Any) -> None:
    volumes = [
        {"name": "default", "secret": {"secretName": "a"}},  # Kubernetes' default: 0644
        {"name": "group", "secret": {"secretName": "b", "defaultMode": 0o640}},
        {"name": "world", "projected": {"sources": [], "defaultMode": 0o604}},
        {"name": "owner", "secret": {"secretName": "c", "defaultMode": 256.0}},  # 0o400, as a float from the engine
        {"name": "scratch", "emptyDir": {}},
    ]
    assert list(readable_secret_volumes(type_, wrap(_pod(volumes)))) == [
        "volume 'default' gives its Secret's files mode 0644; set defaultMode without bits for others "
        "(e.g. 0o400 or 0o640)",
        "volume 'world' gives its Secret's files mode 0604; set defaultMode without bits for others "
        "(e.g. 0o400 or 0o640)",
    ]


def test_other_kinds_have_no_pod_to_check() -> None:
    assert list(readable_secret_volumes(CONFIGMAP, {"spec": {"volumes": [{"secret": {}}]}})) == []
