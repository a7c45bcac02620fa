"""Where the bench runs the CLI: the local environment's toolchain and venv, and
for previews a Pulumi home, file backend and project copy of the bench's own,
so the environment's stacks and state are never touched."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
BENCH_PASSPHRASE = "openstack-nova-bench"  # protects only the bench's made-up passwords


def local_env() -> dict[str, str]:
    """This process's environment plus what `make env` exports (toolchain, venv, backend)."""
    out = subprocess.run([str(ROOT / "devenv" / "env.sh")], capture_output=True, text=True, check=True).stdout
    env = dict(os.environ)
    env.pop("PULUMI_CONFIG", None)
    for line in out.splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        value = value.strip("'")
        if name == "PATH":
            value = value.replace("'\"$PATH\"", "").replace("\"$PATH\"", "").rstrip(":") + ":" + os.environ["PATH"]
        env[name] = value
    return env


def _link_plugins(shared_home: Path, home: Path) -> None:
    """The environment's provider plugins in the bench's Pulumi home: hard links (a copy
    across file systems), so the CLI never has to download one."""
    for plugin in (shared_home / "plugins").glob("*"):
        if not plugin.is_dir() or plugin.name.endswith(".partial"):
            continue
        target = home / "plugins" / plugin.name
        target.mkdir(parents=True, exist_ok=True)
        for item in plugin.iterdir():
            if item.is_file() and not (target / item.name).exists():
                try:
                    os.link(item, target / item.name)
                except OSError:
                    shutil.copy2(item, target / item.name)


def isolated_env(base: Mapping[str, str], workdir: Path) -> dict[str, str]:
    """`base` pointed at a Pulumi home, backend and passphrase below `workdir`."""
    home, state = workdir / "pulumi-home", workdir / "state"
    state.mkdir(parents=True, exist_ok=True)
    _link_plugins(Path(base["PULUMI_HOME"]), home)
    passphrase = workdir / "passphrase"
    fd = os.open(passphrase, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(BENCH_PASSPHRASE)
    # KUBECONFIG: the provider would take it, and render mode refuses a kubeconfig
    env = {k: v for k, v in base.items() if k not in ("PULUMI_CONFIG_PASSPHRASE", "KUBECONFIG")}
    env.update({
        "PULUMI_HOME": str(home),
        "PULUMI_BACKEND_URL": f"file://{state}",
        "PULUMI_CONFIG_PASSPHRASE_FILE": str(passphrase),
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "OPENSTACK_NOVA_ANSIBLE_LOG_DIR": str(workdir / "ansible-logs"),
    })
    return env


def copy_project(dest: Path) -> Path:
    """A copy of the project without its stacks, sharing the venv."""
    skip = shutil.ignore_patterns(".git", ".venv", "__pycache__", ".*_cache", "Pulumi.*.yaml")
    shutil.copytree(ROOT, dest, ignore=skip)
    venv = ROOT / ".venv"
    (dest / ".venv").symlink_to(os.readlink(venv) if venv.is_symlink() else venv)
    return dest


def write_stack(project: Path, stack: str, document: Mapping[str, Any]) -> Path:
    path = project / "stacks" / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump(dict(document), sort_keys=False))
    return path


def read_stack(project: Path, stack: str) -> dict[str, Any]:
    loaded = yaml.safe_load((project / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    return dict(loaded or {})


def shim_venv(dest: Path, *, python: str | None = None, scripts: Mapping[str, str] | None = None) -> Path:
    """A stand-in for the project's venv: the same interpreter and packages, with `scripts`
    (name -> shell script) in its bin/ and, when given, `python` as its interpreter (a shell
    script that receives the real interpreter as $REAL_PYTHON). Pulumi.yaml of a project
    copy points at it to profile the program or stand in for ansible-playbook."""
    real = (ROOT / ".venv").resolve()
    (dest / "bin").mkdir(parents=True, exist_ok=True)
    shutil.copy2(real / "pyvenv.cfg", dest / "pyvenv.cfg")
    for name in ("lib", "lib64", "include"):
        if (real / name).exists() and not (dest / name).exists():
            (dest / name).symlink_to(real / name)
    for item in (real / "bin").iterdir():
        link = dest / "bin" / item.name
        if not link.exists() and not link.is_symlink():
            # a link to the interpreter keeps the venv's name, so sys.executable points here
            link.symlink_to(item.resolve() if item.name.startswith("python") else item)
    if python is not None:
        _write_script(dest / "bin" / "python", f"REAL_PYTHON={shlex.quote(str(real / 'bin' / 'python'))}\n{python}")
    for name, body in (scripts or {}).items():
        _write_script(dest / "bin" / name, body)
    return dest


def _write_script(path: Path, body: str) -> None:
    if path.is_symlink() or path.exists():
        path.unlink()
    path.write_text(f"#!/bin/bash\n{body}\n")
    path.chmod(0o755)


def use_venv(project: Path, venv: Path) -> None:
    """Points the project copy's Pulumi.yaml at `venv`."""
    document = yaml.safe_load((project / "Pulumi.yaml").read_text())
    document["runtime"]["options"]["virtualenv"] = str(venv)
    (project / "Pulumi.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
