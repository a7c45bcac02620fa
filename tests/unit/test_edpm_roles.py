"""The EDPM roles' own pieces, without a node: their API (argument specs against
defaults), the Quadlet units they write, the scripts they ship."""

from __future__ import annotations

import importlib.util
import json
import os
import pwd
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from components.render import compute_config_json
from tests.unit.quadlet import render_unit, unit_lines

ROLES = Path(__file__).resolve().parents[2] / "ansible" / "roles"
NOVA = ROLES / "edpm_nova"


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


@pytest.mark.parametrize("role", sorted(p.name for p in ROLES.iterdir() if (p / "defaults").is_dir()))
def test_argument_specs_document_every_default_as_it_is(role: str) -> None:
    defaults = _yaml(ROLES / role / "defaults" / "main.yml")
    options = _yaml(ROLES / role / "meta" / "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert set(defaults) <= set(options), f"undocumented: {set(defaults) - set(options)}"
    for name, value in defaults.items():
        assert options[name].get("default") == value, name


def test_nova_compute_unit_mounts_what_upstreams_does() -> None:
    unit = render_unit("edpm_nova", "edpm_nova_compute", edpm_nova_extra_bind_mounts=["/opt/vendor:/opt/vendor:ro"])
    volumes = unit_lines(unit, "Volume")
    assert volumes == [
        "/var/lib/kolla/config_files/nova_compute.json:/var/lib/kolla/config_files/config.json:ro",
        "/var/lib/openstack/nova:/var/lib/kolla/config_files/src:ro",
        "/var/lib/openstack/config/ceph:/var/lib/kolla/config_files/src/ceph:ro",
        "/etc/localtime:/etc/localtime:ro",
        "/lib/modules:/lib/modules:ro",
        "/dev:/dev",
        "/var/lib/libvirt:/var/lib/libvirt",
        "/run/libvirt:/run/libvirt:shared",
        "/var/lib/nova:/var/lib/nova:shared",
        "/var/lib/iscsi:/var/lib/iscsi",
        "/etc/iscsi:/etc/iscsi:ro",
        "/etc/multipath:/etc/multipath:z",
        "/etc/multipath.conf:/etc/multipath.conf:ro",
        "/etc/nvme:/etc/nvme",
        "/etc/ssh/ssh_known_hosts:/etc/ssh/ssh_known_hosts:ro",
        "/opt/vendor:/opt/vendor:ro",
    ]
    # the user and the log driver as podman options: Quadlet's own keys fail on podman 4.4
    # (test_quadlet_units.py runs each podman line's generator over the units)
    assert unit_lines(unit, "User") == [] and unit_lines(unit, "Network") == ["host"]
    assert unit_lines(unit, "PodmanArgs") == ["--privileged --pid=host", "--user=nova --log-driver=journald"]
    assert unit_lines(unit, "Environment") == ["KOLLA_CONFIG_STRATEGY=COPY_ALWAYS"]
    # the ownership step runs first, and nova_compute does not start without it
    assert unit_lines(unit, "Requires") == ["edpm_nova_compute_init.service"]
    assert "edpm_nova_compute_init.service" in unit_lines(unit, "After")[0].split()


def test_nova_compute_starts_without_the_migration_key_kolla_copied_last_time() -> None:
    """kolla backs up a file it overwrites into the container: the key on the volume goes first."""
    unit = render_unit("edpm_nova", "edpm_nova_compute")
    copies = {c["source"].rsplit("/", 1)[-1]: c["dest"] for c in json.loads(compute_config_json())["config_files"]}
    assert unit_lines(unit, "ExecStartPre") == [f"/usr/bin/rm -f {copies['ssh-privatekey']}"]


def test_nova_compute_init_unit_runs_the_ownership_step_as_root_and_skips_compute_id() -> None:
    unit = render_unit("edpm_nova", "edpm_nova_compute_init")
    assert unit_lines(unit, "User") == ["root"] and unit_lines(unit, "Network") == ["none"]
    assert unit_lines(unit, "PodmanArgs") == ["--security-opt label=disable --log-driver=journald"]
    assert unit_lines(unit, "Exec") == ["python3 /sbin/nova_statedir_ownership.py"]
    assert unit_lines(unit, "Environment") == ["NOVA_STATEDIR_OWNERSHIP_SKIP=/var/lib/nova/compute_id",
                                               "__OS_DEBUG=false"]
    assert unit_lines(unit, "Volume") == [
        "/var/lib/nova:/var/lib/nova:shared",
        "/var/lib/_nova_secontext:/var/lib/_nova_secontext:shared,z",
        "/var/lib/openstack/nova/nova_statedir_ownership.py:/sbin/nova_statedir_ownership.py:ro,z",
    ]
    assert unit_lines(unit, "Type") == ["oneshot"] and unit_lines(unit, "RemainAfterExit") == ["yes"]


def test_the_role_lays_out_its_own_files_next_to_the_callers() -> None:
    defaults = _yaml(NOVA / "defaults" / "main.yml")
    assert defaults["edpm_nova_role_files"] == ["ssh-config", "run-on-host", "nova_statedir_ownership.py"]
    assert all((NOVA / "files" / name).is_file() for name in defaults["edpm_nova_role_files"])
    assert (defaults["edpm_nova_user_id"], defaults["edpm_nova_libvirt_group_id"]) == (42436, 42473)
    tasks = {t["name"]: t for t in _yaml(NOVA / "tasks" / "configure.yml")}
    user = tasks["Create the nova user, in the libvirt group"]["ansible.builtin.user"]
    assert (user["groups"], user["append"]) == (["libvirt"], True)


def test_the_nova_users_ssh_checks_host_keys_and_offers_the_migration_key_only() -> None:
    """Live migration and resize over SSH, as the nova user the migration key is authorized for."""
    lines = [line.split() for line in (NOVA / "files" / "ssh-config").read_text().splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    assert lines[0] == ["Host", "*"]
    copies = {c["source"].rsplit("/", 1)[1]: c["dest"] for c in json.loads(compute_config_json())["config_files"]}
    assert copies["ssh-config"] == "/var/lib/nova/.ssh/config"
    # host keys only from the node's known hosts (the stack's, mounted): no key is taken on first sight
    assert dict(lines[1:]) == {"User": "nova", "IdentityFile": copies["ssh-privatekey"], "IdentitiesOnly": "yes",
                               "StrictHostKeyChecking": "yes"}
    authorize = {t["name"]: t for t in _yaml(NOVA / "tasks" / "configure.yml")}[
        "Authorize the migration key for the nova user"]["ansible.builtin.copy"]
    assert (authorize["dest"], authorize["owner"]) == ("/home/nova/.ssh/authorized_keys", "nova")


def _tasks(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every task, those of blocks too."""
    found = []
    for task in tasks or []:
        found.append(task)
        for part in ("block", "rescue", "always"):
            found += _tasks(task.get(part, []))
    return found


def test_files_the_caller_calls_secret_are_copied_with_neither_a_log_nor_a_diff() -> None:
    copying = {}
    for path in sorted(ROLES.glob("*/tasks/*.yml")):
        for task in _tasks(_yaml(path)):
            loop = str(task.get("loop", ""))
            # the copies of the files among the secret ones (the others loop over the difference)
            if "intersect(" in loop and "secret_files" in loop and "ansible.builtin.copy" in task:
                copying[f"{path.relative_to(ROLES)}: {task['name']}"] = (task.get("no_log"), task.get("diff"))
    assert copying == {
        "edpm_neutron_metadata/tasks/configure.yml: Copy the agent's secret config files": (True, False),
        "edpm_nova/tasks/configure.yml: Copy nova's secret files": (True, False),
    }


def test_run_on_host_runs_the_command_it_is_installed_as_in_pid_1s_namespaces(tmp_path: Path) -> None:
    wrapper = tmp_path / "iscsiadm"
    wrapper.write_bytes((NOVA / "files" / "run-on-host").read_bytes())
    wrapper.chmod(0o755)
    fake = tmp_path / "bin" / "nsenter"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"}
    out = subprocess.run([str(wrapper), "-m", "session", "-P", "1"], env=env, capture_output=True, text=True,
                         check=True).stdout.split("\n")[:-1]
    assert out == ["--target", "1", "--mount", "--uts", "--ipc", "--net", "--pid", "--",
                   "iscsiadm", "-m", "session", "-P", "1"]


# --- the state directory ownership step ----------------------------------------------


def _ownership() -> ModuleType:
    path = NOVA / "files" / "nova_statedir_ownership.py"
    spec = importlib.util.spec_from_file_location("nova_statedir_ownership", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


OLD = 4242  # nova's uid and gid before an upgrade
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="changes owners: needs root")


def _owner(path: Path) -> tuple[int, int]:
    info = os.lstat(path)
    return info.st_uid, info.st_gid


@pytest.fixture()
def state_dir(tmp_path: Path) -> Path:
    """A state directory of root's: two directories, files of root and of the old nova ids."""
    top = tmp_path / "nova"
    (top / "instances" / "uuid").mkdir(parents=True)
    (top / "instances" / "uuid" / "disk").write_text("")
    (top / "compute_id").write_text("id\n")
    (top / "root-file").write_text("")
    os.chown(top / "instances" / "uuid" / "disk", OLD, OLD)
    os.chown(top / "compute_id", OLD, OLD)
    outside = tmp_path / "outside"
    outside.mkdir()
    (top / "link").symlink_to(outside)
    return top


@root_only
def test_ownership_step_gives_directories_to_nova_and_leaves_files(state_dir: Path) -> None:
    step = _ownership()
    nova = pwd.getpwnam("nobody")
    changed = step.run(str(state_dir), user="nobody")
    target = (nova.pw_uid, nova.pw_gid)
    assert _owner(state_dir) == _owner(state_dir / "instances") == _owner(state_dir / "instances" / "uuid") == target
    assert _owner(state_dir / "instances" / "uuid" / "disk") == (OLD, OLD)
    assert _owner(state_dir / "root-file") == (0, 0)
    # a symlink is not followed: its target keeps its owner
    assert _owner(state_dir.parent / "outside") == (0, 0) and _owner(state_dir / "link") == (0, 0)
    assert changed == 3
    assert step.run(str(state_dir), user="nobody") == 0


@root_only
def test_after_an_upgrade_files_of_the_old_ids_move_except_the_skipped(state_dir: Path) -> None:
    step = _ownership()
    marker = state_dir / "upgrade_marker"
    marker.write_text("")
    os.chown(marker, OLD, OLD)
    skip = step.skipped_paths(str(state_dir), os.pathsep.join(["compute_id", "/elsewhere"]))
    assert skip == frozenset({str(state_dir / "compute_id"), "/elsewhere"})
    step.run(str(state_dir), user="nobody", skip=skip)
    target = (pwd.getpwnam("nobody").pw_uid, pwd.getpwnam("nobody").pw_gid)
    assert _owner(state_dir / "instances" / "uuid" / "disk") == target
    assert _owner(state_dir / "compute_id") == (OLD, OLD)  # skipped
    assert _owner(state_dir / "root-file") == (0, 0)  # not nova's before the upgrade
    assert not marker.exists()


def test_ownership_step_reports_what_it_changed(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    step = _ownership()
    me = pwd.getpwuid(os.geteuid()).pw_name
    monkeypatch.setattr(step, "NOVA_USER", me)
    (tmp_path / "sub").mkdir()
    step.main([str(tmp_path)])  # always 0: what it did is in what it prints
    assert capsys.readouterr().out.splitlines()[-1] == "nova_statedir: changed the owner of 0 paths"


def test_the_directories_nova_mounts_get_container_file_t_as_upstreams_and_libvirts_keep_their_own() -> None:
    """Where SELinux labels files (tests of the condition: test_edpm_libvirt_role.py)."""
    configure = {t["name"]: t for t in _yaml(NOVA / "tasks" / "configure.yml")}
    labelled = [i["path"] for i in configure["Create nova's directories"]["loop"] if i.get("setype")]
    assert labelled == ["{{ edpm_nova_config_dest }}", "{{ edpm_nova_config_dest }}/ceph",
                        "{{ edpm_nova_ceph_config_dir }}", "/var/lib/nova", "/var/lib/nova/instances"]
    volumes = _yaml(NOVA / "vars" / "main.yml")["edpm_nova_quadlet_volumes"]
    assert [v["host"] for v in volumes if v.get("setype") == "container_file_t"] == [
        "/var/lib/iscsi", "/etc/iscsi", "/etc/multipath", "/etc/nvme"]
    # libvirt's own directories keep libvirt's labels (upstream restores /run/libvirt's)
    assert not [v for v in volumes if "libvirt" in v["host"] and v.get("setype")]
    install = {t["name"]: t for t in _yaml(NOVA / "tasks" / "install.yml")}
    assert install["Write nova's Quadlet units and pull nova_compute's image"]["vars"][
        "edpm_container_quadlet_directories"] == [{"host": "/var/lib/_nova_secontext", "setype": "container_file_t"}]
