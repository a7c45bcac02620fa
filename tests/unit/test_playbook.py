"""PlaybookRun's decisions, without running Ansible: when a node is configured
again, and what may never change."""

from __future__ import annotations

from typing import Any

import pytest

from components.playbook import PlaybookError, _PlaybookProvider

PROPS: dict[str, Any] = {
    "playbook": "nova.yml",
    "host": {"name": "edpm-compute-1", "address": "192.168.122.101", "port": 22, "user": "root"},
    "host_vars": {}, "ssh_private_key": "key", "known_hosts": "", "vars": {},
    "files": {"01-nova.conf": "[DEFAULT]\n"}, "public_files": {"25-nova-extra.conf": "[libvirt]\n"},
    "pinned": {"cell": "cell2"}, "pinned_reason": "remove the node first.", "in_sync": True,
}


def diff(olds: dict[str, Any], news: dict[str, Any]) -> bool:
    return bool(_PlaybookProvider().diff("id", olds, news).changes)


def test_nothing_changed_means_no_run() -> None:
    assert diff(PROPS, dict(PROPS)) is False


@pytest.mark.parametrize("key", ["public_files", "files", "host_vars", "ssh_private_key", "known_hosts"])
def test_a_changed_input_means_a_run(key: str) -> None:
    assert diff(PROPS, {**PROPS, key: {"other": "value"}}) is True


def test_drift_found_by_refresh_means_a_run() -> None:
    assert diff({**PROPS, "in_sync": False}, dict(PROPS)) is True


def test_a_pinned_value_cannot_change() -> None:
    with pytest.raises(PlaybookError) as err:
        diff(PROPS, {**PROPS, "pinned": {"cell": "cell1"}})
    assert str(err.value) == (
        "edpm-compute-1: cell is 'cell2' on the node and cannot become 'cell1'. remove the node first.")


def test_outputs_alone_do_not_mean_a_run() -> None:
    assert diff({**PROPS, "deployed_hash": "a", "last_run": "x"}, {**PROPS, "deployed_hash": None}) is False
