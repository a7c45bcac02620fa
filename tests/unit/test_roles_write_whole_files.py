"""A node never loads a half-written file: the roles write files only through
modules that write a temporary file and rename it over the old one (Ansible's
atomic_move), and the one exception is pinned here with its reason."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
ANSIBLE = ROOT / "ansible"

# Modules that write a file's content: each writes a temporary file and renames it.
RENAMING = {"ansible.builtin.copy", "ansible.builtin.template", "ansible.builtin.blockinfile",
            "ansible.builtin.lineinfile"}
# Modules that write no file content (directories, modes, services, facts, reads).
NO_CONTENT = {"ansible.builtin.file", "ansible.builtin.systemd_service", "ansible.builtin.set_fact",
              "ansible.builtin.import_role", "ansible.builtin.import_tasks", "ansible.builtin.include_tasks",
              "ansible.builtin.stat", "ansible.builtin.meta", "ansible.builtin.assert", "ansible.builtin.find",
              "ansible.builtin.debug", "ansible.builtin.group", "ansible.builtin.user", "ansible.builtin.package",
              "ansible.builtin.slurp", "ansible.builtin.tempfile", "ansible.builtin.getent",
              "ansible.builtin.setup", "ansible.builtin.include_role"}
# Commands, and why none leaves a file half-written where a running service reads it.
COMMANDS = {
    "Delete the nova-compute service record through the compute API": "writes nothing on the node",
    "Compare the known hosts with the node's": "reads only",
    "List the users of libvirt's SASL database": "reads only",
    "Read the state of the daemons' sockets": "reads only",
    "Read podman's version": "reads only",
    "List libvirt's secrets": "reads only",
    "Read the values libvirt holds for the Ceph secrets": "reads only",
    "Read the os_enable_vtpm boolean": "reads only",
    "Look for container labels under /run/libvirt": "reads only",
    "Define the Ceph secrets": "libvirt's secret daemon writes its own store",
    "Set the secrets' values from the files": "libvirt's secret daemon writes its own store",
    "Remove the Ceph secrets of clusters no longer given": "libvirt's secret daemon writes its own store",
    "Stop libvirt's default network": "writes nothing on the node's disk",
    "Forget the failed state of the stopped services": "systemd's state in memory only",
    "Let swtpm run guests' vTPM": "SELinux's tools commit the policy store as a transaction",
    "Give /run/libvirt back its own label": "changes labels, not content",
    "Look for the images the units run": "reads only",
    "Pull the images the units run": "podman's image store writes a layer whole before it names the image",
    "Write the migration user's password into libvirt's SASL database":
        "the SASL library updates its database record by record under its own lock",
    # The exception: the nova_compute container bind-mounts this one file, and a renamed
    # file would never reach it (it keeps the old inode). Nothing of nova loads it; ssh
    # reads it at a migration's connection.
    "Write the known hosts in place": "in place on purpose, for the bind mount",
}


def _tasks(tasks: Any) -> Iterator[dict[str, Any]]:
    for task in tasks or []:
        if isinstance(task, dict):
            yield task
            for key in ("block", "rescue", "always"):
                yield from _tasks(task.get(key))


def all_tasks() -> Iterator[tuple[str, dict[str, Any]]]:
    for path in sorted(ANSIBLE.glob("roles/*/tasks/*.yml")) + sorted(ANSIBLE.glob("roles/*/handlers/*.yml")):
        for task in _tasks(yaml.safe_load(path.read_text())):
            yield str(path.relative_to(ANSIBLE)), task
    for path in sorted(ANSIBLE.glob("playbooks/*.yml")):
        for play in yaml.safe_load(path.read_text()):
            for task in _tasks([*(play.get("tasks") or []), *(play.get("handlers") or [])]):
                yield str(path.relative_to(ANSIBLE)), task


def test_roles_write_files_only_by_rename_and_the_exception_is_known() -> None:
    commands = set()
    for where, task in all_tasks():
        modules = [k for k in task if k.startswith("ansible.")]
        for module in modules:
            if module in ("ansible.builtin.command", "ansible.builtin.shell"):
                commands.add(task["name"])
                assert task["name"] in COMMANDS, (where, task["name"], "a new command: say why it is safe")
            else:
                assert module in RENAMING | NO_CONTENT, (where, task.get("name"), module)
            assert not task.get("unsafe_writes"), (where, task.get("name"))
    assert commands == set(COMMANDS)


PLAYBOOK = """\
- name: Write files the way the roles do
  hosts: all
  gather_facts: false
  tasks:
    - name: Copy
      ansible.builtin.copy:
        content: "new\\n"
        dest: "{{ dir }}/copied.conf"
        mode: "0600"
    - name: Template
      ansible.builtin.template:
        src: "{{ dir }}/template.j2"
        dest: "{{ dir }}/templated.conf"
        mode: "0644"
    - name: Block
      ansible.builtin.blockinfile:
        path: "{{ dir }}/blocked"
        block: new
"""


def test_ansibles_file_modules_replace_files_by_rename(tmp_path: Path) -> None:
    """A reader holding the old file keeps reading it whole; the next open sees the new one whole."""
    files = {name: tmp_path / name for name in ("copied.conf", "templated.conf", "blocked")}
    for path in files.values():
        path.write_text("old\n")
    (tmp_path / "template.j2").write_text("new\n")
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    readers = {name: open(path) for name, path in files.items()}  # noqa: SIM115
    before = {name: path.stat().st_ino for name, path in files.items()}
    env = {**os.environ, "ANSIBLE_HOME": str(tmp_path / "home"), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"),
           "ANSIBLE_REMOTE_TEMP": str(tmp_path / "remote-tmp"), "ANSIBLE_NOCOLOR": "1"}
    ansible = Path(sys.executable).parent / "ansible-playbook"
    proc = subprocess.run([str(ansible), "-i", "localhost,", "-c", "local", "-e", f"dir={tmp_path}",
                           "-e", f"ansible_python_interpreter={sys.executable}", str(tmp_path / "play.yml")],
                          env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name, path in files.items():
        assert path.stat().st_ino != before[name], name  # a new file, renamed over the old
        assert "new" in path.read_text(), name
        assert readers[name].read() == "old\n", name  # the old one, whole, for whoever had it open
        readers[name].close()
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".ansible_tmp")]
