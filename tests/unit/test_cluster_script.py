"""devenv/cluster.sh's arguments, checked before it touches anything (no cluster needed)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

CLUSTER = Path(__file__).resolve().parents[2] / "devenv" / "cluster.sh"
DAEMONS = "etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy"


def _cluster(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OPENSTACK_NOVA_ENV": str(tmp_path / "env")}
    return subprocess.run([str(CLUSTER), *args], capture_output=True, text=True, check=False, timeout=30, env=env)


@pytest.mark.parametrize("args", [["restart"], ["restart", "apiserver"]])
def test_restart_names_the_daemons_it_can_restart(args: list[str], tmp_path: Path) -> None:
    proc = _cluster(tmp_path, *args)
    assert (proc.returncode, proc.stderr) == (1, f"cluster.sh: usage: cluster.sh restart DAEMON, one of: {DAEMONS}\n")
    assert not (tmp_path / "env").exists()


def test_an_unknown_command_shows_every_command(tmp_path: Path) -> None:
    proc = _cluster(tmp_path, "reboot")
    assert (proc.returncode, proc.stderr) == (1, "cluster.sh: usage: cluster.sh start|stop|status|restart DAEMON\n")
