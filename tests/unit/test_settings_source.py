"""from_pulumi_config: raw Pulumi runtime config in, settings out (no mocks: the SDK's own config store)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from pulumi.runtime import config as runtime_config

from components.settings import SettingsError
from components.stackconfig import from_pulumi_config


@pytest.fixture
def stack_config() -> Iterator[Any]:
    def set_config(values: dict[str, Any], secret: list[str]) -> None:
        encoded = {
            f"openstack-nova:{k}": v if isinstance(v, str) else json.dumps(v) for k, v in values.items()
        }
        runtime_config.set_all_config(encoded, [f"openstack-nova:{k}" for k in secret])

    yield set_config
    runtime_config.set_all_config({}, [])


def test_reads_and_decodes_keys(stack_config: Any) -> None:
    stack_config({"namespace": "edpm", "nova": {"keystone": {"password": "pw"}}}, secret=["nova"])
    settings = from_pulumi_config()
    assert settings.namespace == "edpm"
    assert settings.nova.keystone.internal_url == "http://keystone-internal.edpm.svc:5000"
    assert settings.nova.keystone.password is not None
    assert settings.nova.keystone.password.reveal() == "pw"


def test_plain_text_key_and_unknown_key(stack_config: Any) -> None:
    stack_config({"nova": {"keystone": {"password": "pw"}}, "nodeSets": {}}, secret=[])
    with pytest.raises(SettingsError) as caught:
        from_pulumi_config()
    paths = {p.path for p in caught.value.problems}
    assert paths == {"openstack-nova:nova.keystone.password", "openstack-nova:nodeSets"}


def test_non_json_value_is_a_type_problem(stack_config: Any) -> None:
    stack_config({"nova": "not json"}, secret=[])
    with pytest.raises(SettingsError) as caught:
        from_pulumi_config()
    assert str(caught.value.problems[0]) == "openstack-nova:nova: expected an object, got a string"
