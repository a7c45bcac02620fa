"""The roles' Quadlet units under podman's own generator of each podman line users' nodes
run (QUADLET_VERSIONS: RHEL 9.2's 4.4, 9.4's 4.9, 5.x): a key one of them does not know
makes it write no service at all (`systemctl restart` then finds no unit), and a key it
reads otherwise than meant makes podman run the container otherwise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.quadlet import (
    ROOT,
    Generator,
    every_unit,
    generate,
    generators,
    podman_run,
    render_unit,
    service_values,
    unit_lines,
)


@pytest.fixture(scope="module")
def quadlets() -> dict[str, Generator]:
    """podman's generator of each podman line, built first if missing (it takes Go)."""
    try:
        return {generator.version: generator for generator in generators()}
    except RuntimeError as err:
        problem = str(err)
    pytest.fail(problem, pytrace=False)


def _dev_stack_images() -> dict[str, Any]:
    """The images the dev stack gives its nodes (the program's defaults where it names none)."""
    images = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())["config"]["openstack-nova:images"]
    chosen = {"edpm_nova_compute_image": images.get("compute"),
              "edpm_neutron_metadata_agent_image": images.get("neutronMetadataAgent")}
    return {name: image for name, image in chosen.items() if image}


# What a node can vary that the templates branch on or fill in.
VARIANTS: dict[str, dict[str, Any]] = {
    "role defaults": {},
    "extra bind mounts": {"edpm_nova_extra_bind_mounts": ["/opt/vendor:/opt/vendor:ro", "/srv/plugins:/srv/plugins"]},
    "no health check": {"edpm_neutron_metadata_healthcheck": False},
    "dev stack images": _dev_stack_images(),
    "own directories": {"edpm_nova_config_dest": "/srv/nova", "edpm_nova_ceph_config_dir": "/srv/ceph",
                        "edpm_nova_statedir_ownership_skip": ["/var/lib/nova/compute_id", "/var/lib/nova/keep"],
                        "edpm_neutron_metadata_agent_lib_dir": "/srv/neutron",
                        "edpm_neutron_metadata_agent_config_dir": "/srv/neutron-conf"},
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_podman_line_turns_every_unit_into_a_service(variant: str, quadlets, tmp_path: Path) -> None:
    units = every_unit(**VARIANTS[variant])
    problems = []
    for version, generator in quadlets.items():
        generated = generate(generator.path, units, tmp_path / version)
        problems += [f"podman {version}: {problem}" for problem in generated.problems]
    assert problems == []


def test_the_check_fails_on_a_key_podman_4_4_does_not_know(quadlets, tmp_path: Path) -> None:
    unit = render_unit("edpm_nova", "edpm_nova_compute_init")
    unit = unit.replace("[Container]\n", "[Container]\nLogDriver=journald\n")
    units = {"edpm_nova_compute_init.container": unit}
    old = generate(quadlets["4.4.1"].path, units, tmp_path / "old")
    assert [p for p in old.problems if "unsupported key 'LogDriver'" in p] and old.services == {}
    assert "no edpm_nova_compute_init.service generated from edpm_nova_compute_init.container" in old.problems
    # podman 5 knows the key
    new = generate(quadlets["5.4.2"].path, units, tmp_path / "new")
    assert new.problems == [] and list(new.services) == ["edpm_nova_compute_init.service"]


def test_the_check_takes_any_message_and_any_missing_service_for_a_problem(tmp_path: Path) -> None:
    """Stand-in generators: one that writes nothing and says nothing, one that warns."""
    silent, warning = tmp_path / "silent", tmp_path / "warning"
    silent.write_text("#!/bin/sh\n")
    warning.write_text("#!/bin/sh\necho 'quadlet-generator[1]: Warning: x.container: something'>&2\n"
                       "printf -- '---x.service---\\n[Service]\\n'\n")
    for stub in (silent, warning):
        stub.chmod(0o755)
    assert generate(silent, {"x.container": ""}, tmp_path / "a").problems == [
        "no x.service generated from x.container"]
    assert generate(warning, {"x.container": ""}, tmp_path / "b").problems == [
        "quadlet-generator[1]: Warning: x.container: something"]


# How podman runs each container: for each unit, each option's value (None: a flag alone).
MEANT: dict[str, dict[str, str | None]] = {
    "edpm_nova_compute": {"--user": "nova", "--network": "host", "--privileged": None, "--pid": "host",
                          "--log-driver": "journald", "--env": "KOLLA_CONFIG_STRATEGY=COPY_ALWAYS"},
    "edpm_nova_compute_init": {"--user": "root", "--network": "none", "--security-opt": "label=disable",
                               "--log-driver": "journald"},
    "edpm_ovn_metadata_agent": {"--user": "root", "--network": "host", "--privileged": None, "--pid": "host",
                                "--cgroupns": "host", "--log-driver": "journald",
                                "--health-cmd": "/openstack/healthcheck", "--env": "KOLLA_CONFIG_STRATEGY=COPY_ALWAYS",
                                "--label": "managed_by=edpm_ansible"},
    "edpm_ovn_metadata_agent_init": {"--user": "root", "--network": "none", "--security-opt": "label=disable",
                                     "--log-driver": "journald", "--label": "managed_by=edpm_ansible"},
}
COMMANDS = {"edpm_nova_compute_init": ["python3", "/sbin/nova_statedir_ownership.py"],
            "edpm_ovn_metadata_agent_init": ["/usr/bin/chown", "-R", "neutron:neutron", "/var/lib/neutron"]}
ONESHOT = {"edpm_nova_compute_init", "edpm_ovn_metadata_agent_init"}
# Options podman takes many times: the one meant is among them.
REPEATED = {"--env", "--label", "--security-opt"}


def test_every_podman_line_runs_the_containers_as_the_units_mean(quadlets, tmp_path: Path) -> None:
    """A key a generator accepts but reads otherwise (podman 4.4 takes `User=nova` for uid 0)
    shows in the podman command line it writes."""
    units = every_unit(**VARIANTS["extra bind mounts"])
    assert {f"{unit}.container" for unit in MEANT} == set(units), "say what each unit means"
    for version, generator in quadlets.items():
        services = generate(generator.path, units, tmp_path / version).services
        for unit, meant in MEANT.items():
            service = services[f"{unit}.service"]
            (image,) = unit_lines(units[f"{unit}.container"], "Image")
            run = podman_run(service, image)
            for flag, value in meant.items():
                if flag in REPEATED:
                    assert value in run.values(flag), (version, unit, flag)
                    continue
                found = run.last(flag)
                # podman 4.4 writes a user as its uid
                assert (found if (flag, found) != ("--user", "0") else "root") == value, (version, unit, flag)
            # every volume of the unit (nova_compute's extra bind mounts too), in order
            assert run.values("-v") == unit_lines(units[f"{unit}.container"], "Volume"), (version, unit)
            assert run.command == COMMANDS.get(unit, []), (version, unit)
            # podman's pull policy "missing": a restart starts from the image the role pulled before
            # it (Quadlet's Pull= is unknown to podman 4.4, whose generator would then write nothing)
            assert run.values("--pull") == [], (version, unit)
            assert service_values(service, "Service", "Type") == ["oneshot" if unit in ONESHOT else "notify"], (
                version, unit)
