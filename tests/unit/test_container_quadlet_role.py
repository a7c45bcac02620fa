"""edpm_container_quadlet, the one place the roles run their containers from, run for
real by Ansible on this machine through a caller role (edpm_nova), with a stand-in
podman: the units it writes are those the Quadlet checks render, an image is pulled
before any restart and a failed pull is tried again, and a podman that cannot run the
units stops the run with the reason."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jinja2
import jinja2.nativetypes
import pytest
import yaml

from components.ansible_runner.playbook import roles_fingerprint
from tests.unit.ansible_run import role_play, run_play
from tests.unit.quadlet import QUADLET_ROLES, ROLES, render_unit, unit_names

PODMAN = """#!/bin/sh
# a stand-in podman: its version, an image store of the names in $STORE, pulls that fail
# $FAILS times before they succeed; every call logged
echo "$*" >> "$LOG"
case "$1" in
  --version) echo "podman version $VERSION" ;;
  image) grep -qxF "$3" "$STORE" ;;
  pull)
    n=$(grep -c '^pull ' "$LOG")
    [ "$n" -gt "$FAILS" ] || { echo "pull failed ($n)" >&2; exit 125; }
    echo "$2" >> "$STORE" ;;
esac
"""

def _run(tmp_path: Path, *, version: str = "4.4.1", fails: int = 0, store: tuple[str, ...] = (),
         generator: bool = True) -> subprocess.CompletedProcess[str]:
    (tmp_path / "store").write_text("".join(f"{image}\n" for image in store))
    (tmp_path / "log").write_text("")
    quadlet = tmp_path / "quadlet"
    if generator:
        quadlet.write_text("")
    extra: dict[str, Any] = {
        "edpm_nova_quadlet_dir": str(tmp_path / "units"),
        "edpm_container_quadlet_generators": [str(quadlet)],
        "edpm_container_quadlet_podman_packages": {},  # nothing installed on this machine
        # nothing created outside tmp_path, no service restarted
        "edpm_container_quadlet_volumes": [], "edpm_container_quadlet_directories": [],
        "edpm_container_quadlet_unit_names": [],
        "edpm_container_quadlet_pull_delay": 0,
    }
    return run_play(tmp_path, role_play("edpm_nova", "install"), extra=extra, stubs={"podman": PODMAN},
                    env={"LOG": str(tmp_path / "log"), "STORE": str(tmp_path / "store"), "VERSION": version,
                         "FAILS": str(fails)})


def _calls(tmp_path: Path) -> list[str]:
    return (tmp_path / "log").read_text().splitlines()


def test_every_role_that_runs_containers_runs_them_through_the_shared_role() -> None:
    assert QUADLET_ROLES == ["edpm_neutron_metadata", "edpm_nova"]
    for role in QUADLET_ROLES:
        texts = "".join(p.read_text() for p in sorted((ROLES / role).rglob("*.yml")))
        for tasks_from in ("tasks_from: podman", "tasks_from: start", "edpm_container_quadlet/tasks/restart.yml"):
            assert tasks_from in texts, (role, tasks_from)
        # the stop entry point of the role stops its units there too
        stop = yaml.safe_load((ROLES / role / "tasks" / "stop.yml").read_text())
        assert stop[0]["ansible.builtin.include_role"] == {"name": "edpm_container_quadlet", "tasks_from": "stop"}
        # no role writes or restarts a unit of its own
        assert "systemd_service" not in texts and ".container\"" not in texts, role


def test_the_units_ansible_writes_are_those_the_quadlet_checks_render_and_the_image_comes_first(
        tmp_path: Path) -> None:
    proc = _run(tmp_path, fails=2)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for unit in unit_names("edpm_nova"):
        written = (tmp_path / "units" / f"{unit}.container").read_text()
        assert written == render_unit("edpm_nova", unit, ansible_managed=written.splitlines()[0][2:]), unit
    image = yaml.safe_load((ROLES / "edpm_nova" / "defaults" / "main.yml").read_text())["edpm_nova_compute_image"]
    # missing, pulled: two failures, then a third pull that succeeds; then the restart
    assert _calls(tmp_path) == ["--version", f"image exists {image}"] + [f"pull {image}"] * 3
    assert "RUNNING HANDLER [edpm_nova : Restart nova-compute]" in proc.stdout
    # again: the image is there, the units are the same: no pull, no restart, no change
    again = _run(tmp_path, store=(image,))
    assert again.returncode == 0 and "RUNNING HANDLER" not in again.stdout, again.stdout
    assert _calls(tmp_path) == ["--version", f"image exists {image}"] and "changed=0" in again.stdout


@pytest.mark.parametrize(("version", "generator", "says"), [
    ("4.3.1", True, "podman 4.3.1 is older than 4.4.0"),
    ("4.9.4", False, "has no Quadlet generator"),
])
def test_a_podman_that_cannot_run_the_units_stops_the_run_with_the_reason(
        tmp_path: Path, version: str, generator: bool, says: str) -> None:
    proc = _run(tmp_path, version=version, generator=generator)
    assert proc.returncode != 0 and says in proc.stdout, proc.stdout
    assert not (tmp_path / "units").exists()


def test_a_change_of_the_shared_role_reruns_the_playbooks_of_the_roles_that_use_it(tmp_path: Path) -> None:
    old, new = tmp_path / "old", tmp_path / "new"  # (fingerprints are cached by directory)
    shutil.copytree(ROLES.parent, old)
    shutil.copytree(ROLES.parent, new)
    restart = new / "roles" / "edpm_container_quadlet" / "tasks" / "restart.yml"
    restart.write_text(restart.read_text() + "\n")
    playbooks = ("nova.yml", "neutron-metadata-stop.yml", "libvirt.yml", "ssh-known-hosts.yml")
    before = {p: roles_fingerprint(p, old) for p in playbooks}
    after = {p: roles_fingerprint(p, new) for p in playbooks}
    assert [p for p in before if before[p] != after[p]] == ["nova.yml", "neutron-metadata-stop.yml", "libvirt.yml"]


def test_a_stopped_service_leaves_no_failed_state_behind() -> None:
    """A container podman stops may exit non-zero: once its unit is gone, systemd forgets the
    service's failed state, so a node that lost a service is not "degraded" for it."""
    stop = yaml.safe_load((ROLES / "edpm_container_quadlet" / "tasks" / "stop.yml").read_text())
    names = [task["name"] for task in stop]
    reset = stop[names.index("Forget the failed state of the stopped services")]
    assert names.index("Stop the services of the units") < names.index("Reload systemd units") < names.index(
        reset["name"])
    assert reset["ansible.builtin.command"]["argv"] == ["systemctl", "reset-failed", "{{ item.item }}.service"]
    assert reset["loop"] == "{{ edpm_container_quadlet_unit_files.results | selectattr('stat.exists') }}"


def _with_role_vars(facts: dict[str, Any]) -> dict[str, Any]:
    """`facts` and the role's vars/main.yml, derived from them as Ansible templates them (to values)."""
    env = jinja2.nativetypes.NativeEnvironment(undefined=jinja2.StrictUndefined)
    env.tests["match"] = lambda value, pattern: re.match(pattern, value) is not None
    derived = yaml.safe_load((ROLES / "edpm_container_quadlet" / "vars" / "main.yml").read_text())
    result = dict(facts)
    for name, template in derived.items():
        result[name] = env.from_string(template.strip()).render(result)
    return result


def test_the_mounted_directories_under_run_are_made_again_at_every_boot() -> None:
    """/run is a tmpfs: the agent's /run/netns is gone after a reboot, and its unit would not start
    (a refresh found the node drifted after every restart); systemd-tmpfiles makes it at boot."""
    start = yaml.safe_load((ROLES / "edpm_container_quadlet" / "tasks" / "start.yml").read_text())
    task = next(t for t in start if t["name"] == "Have the mounted directories under /run made again at every boot")
    names = [t["name"] for t in start]
    assert names.index(task["name"]) < names.index("Write the Quadlet units")
    env = jinja2.Environment(trim_blocks=True, undefined=jinja2.StrictUndefined)
    env.tests["match"] = lambda value, pattern: re.match(pattern, value) is not None
    agent = yaml.safe_load((ROLES / "edpm_neutron_metadata" / "vars" / "main.yml").read_text())
    facts = {"edpm_container_quadlet_units": {"edpm_ovn_metadata_agent_init": "", "edpm_ovn_metadata_agent": ""},
             "edpm_container_quadlet_volumes": [
                 {**v, "host": v["host"].replace("{{ edpm_neutron_metadata_agent_lib_dir }}", "/var/lib/neutron")}
                 for v in agent["edpm_neutron_metadata_quadlet_volumes"]],
             "edpm_container_quadlet_directories": [], "edpm_container_quadlet_tmpfiles_dir": "/etc/tmpfiles.d"}
    facts = _with_role_vars(facts)
    copy = task["ansible.builtin.copy"]
    assert env.from_string(copy["dest"]).render(facts) == "/etc/tmpfiles.d/edpm_ovn_metadata_agent.conf"
    assert env.from_string(copy["content"]).render(facts) == "d /run/netns 0755 root root -\n"
    assert env.from_string("{{ " + task["when"] + " }}").render(facts) == "True"
    # nova's units mount nothing under /run that the role makes: no file
    nova = _with_role_vars({**facts, "edpm_container_quadlet_volumes": [
        {"host": "/var/lib/nova", "create": "directory"}, {"host": "/run/libvirt", "create": ""}]})
    assert env.from_string("{{ " + task["when"] + " }}").render(nova) == "False"
