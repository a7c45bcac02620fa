"""What the whole program registers with the engine, as `pulumi preview` compares it with a stack's
state: each resource's URN, type, parent, custom-ness, dependencies, providers, aliases and inputs
(secrets kept as the engine gets them), for the dev stack's config and for a richer one (TLS, Ceph
files from extraMounts, a custom service, a node's secret snippet).

A recording of it (tests/unit/data/program_shape/) pins that a change of the program's structure
moves, renames and re-runs nothing an existing stack holds.

    .venv/bin/python -m tests.unit.program_shape --write   # record the current program
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

from components.ansible_runner.playbook import roles_fingerprint
from tests.unit.engine import EngineMonitor
from tests.unit.test_components import ReadingMocks, RecordingMocks
from tests.unit.test_rotation import _dev_config, run_main

DATA = Path(__file__).parent / "data" / "program_shape"
ROOT = Path(__file__).resolve().parents[2]
TMP, CHECKOUT = "<tmp>", "<checkout>"
_URN_PREFIX = re.compile(r"urn:pulumi:[^:\"]*::[^:\"]*::")
_ROOT_STACK = re.compile(r"pulumi:pulumi:Stack::[^\"]*\"")
# what pulumi_kubernetes' Provider takes from the shell when the stack config says nothing of it
# (make test's shell has the environment's $KUBECONFIG): the shape is the stack config's alone
_PROVIDER_ENV = re.compile(r"KUBECONFIG|PULUMI_K8S_\w+")


def _rich(config: dict[str, Any]) -> dict[str, Any]:
    """The dev stack with libvirt's TLS, Ceph files from extraMounts, a custom service and a secret snippet."""
    node_set = config["dataplane"]["nodeSets"]["edpm-compute"]
    node_set["tlsEnabled"] = True
    node_set["services"] = ["ssh-known-hosts", "ceph-client", "neutron-metadata", "libvirt", "nova", "motd"]
    node_set["nodes"]["edpm-compute-1"]["customServiceConfig"] = {
        "nova": "[DEFAULT]\ntransport_url = rabbit://u:p@h:5672/\n"}
    config["dataplane"]["customServices"] = {"motd": {"playbook": "motd.yml", "files": {"motd": "hello\n"}}}
    config["dataplane"]["migrationSSHKey"] = {"privateKey": "migration-key", "publicKey": "migration-key.pub"}
    config["extraMounts"] = [{"propagation": ["Compute"],
                              "volumes": [{"name": "ceph", "secret": {"secretName": "ceph-conf-files"}},
                                          {"name": "nova", "configMap": {"name": "ceph-nova"}}],
                              "mounts": [{"name": "ceph", "mountPath": "/etc/ceph"},
                                         {"name": "nova", "mountPath": "/var/lib/openstack/configs/nova"}]}]
    return config


VARIANTS: dict[str, tuple[Callable[[dict[str, Any]], dict[str, Any]], Callable[[], RecordingMocks]]] = {
    "dev": (lambda c: c, RecordingMocks),
    "rich": (_rich, ReadingMocks),
}


def shape(variant: str) -> dict[str, Any]:
    """{urn: what the engine is told of it} for the program run with `variant`'s config."""
    change, make_mocks = VARIANTS[variant]
    shell = {k: v for k, v in os.environ.items() if not _PROVIDER_ENV.fullmatch(k)}
    with tempfile.TemporaryDirectory() as tmp, mock.patch.dict(os.environ, shell, clear=True):
        config = change(_dev_config(Path(tmp)))
        mocks = make_mocks()
        monitor = EngineMonitor(mocks)
        run_main(config, mocks, monitor)
        providers = {urn: mocks.resources[r.name].provider for urn, r in monitor.registered.items()
                     if r.name in mocks.resources}
        shown = {
            r.urn: {"type": r.type, "parent": r.parent, "custom": r.custom,
                    "dependencies": sorted(r.dependencies), "secretOutputs": sorted(r.secret_outputs),
                    "aliases": list(r.aliases), "provider": (providers.get(r.urn) or "").split("::")[0],
                    "inputs": r.inputs}
            for r in monitor.registered.values()
        }
        for shown_resource in shown.values():
            _name_roles_fingerprint(shown_resource["inputs"])
        text = json.dumps(shown, sort_keys=True, default=str).replace(tmp, TMP).replace(str(ROOT), CHECKOUT)
        # what the URNs hold besides the stack's and project's names (which the mocks of a test run
        # before may have set otherwise), and the root stack resource by its type only
        text = _ROOT_STACK.sub("pulumi:pulumi:Stack\"", _URN_PREFIX.sub("urn:", text))
        return json.loads(text)


def _name_roles_fingerprint(inputs: dict[str, Any]) -> None:
    """A playbook run's `roles` input, the hash of its roles' files, by what it is: an edit of a
    role re-runs the playbooks that use it, as meant; a change of the program's structure does not."""
    playbook = inputs.get("playbook")
    if isinstance(playbook, str) and inputs.get("roles") == roles_fingerprint(playbook):
        inputs["roles"] = f"<roles of {playbook}>"


def recorded(variant: str) -> dict[str, Any]:
    return json.loads((DATA / f"{variant}.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="record the current program's shape")
    if parser.parse_args().write:
        DATA.mkdir(parents=True, exist_ok=True)
        for variant in VARIANTS:
            (DATA / f"{variant}.json").write_text(json.dumps(shape(variant), indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
