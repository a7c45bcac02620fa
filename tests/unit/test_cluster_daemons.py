"""devenv/cluster.sh's daemons run under devenv/supervise.py: the functions that start, find and stop them,
against a stand-in daemon (no cluster needed). Also shellcheck on cluster.sh."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.cluster_daemons import DEVENV, ENSURE, NAME, bash, kill_ours, ours
from tests.unit.supervising import alive, pid_in, wait_for

SHELLCHECK = shutil.which("shellcheck")


@pytest.fixture
def kube_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    kill_ours(tmp_path)


def _start(kube_dir: Path) -> int:
    assert bash(kube_dir, f'start_daemon {NAME} "$KUBE_DIR/{NAME}.log"').returncode == 0
    assert wait_for(lambda: pid_in(kube_dir / f"{NAME}.pid") is not None)
    pid = pid_in(kube_dir / f"{NAME}.pid")
    assert pid is not None
    return pid


def test_a_daemon_starts_under_its_supervisor_and_its_pid_file_names_the_daemon(kube_dir: Path) -> None:
    _start(kube_dir)
    checked = bash(kube_dir, f"daemon_up {NAME}; daemon_current {NAME}; supervised {NAME}; supervisor_up {NAME}")
    assert checked.returncode == 0, checked.stderr


def test_a_daemon_that_dies_is_started_again_and_the_pid_file_follows(kube_dir: Path) -> None:
    first = _start(kube_dir)
    os.kill(first, signal.SIGKILL)
    assert wait_for(lambda: pid_in(kube_dir / f"{NAME}.pid") not in (None, first), 5)
    assert bash(kube_dir, f"daemon_up {NAME} && supervised {NAME}").returncode == 0
    log = (kube_dir / f"{NAME}.log").read_text()
    assert f"supervise {NAME}: pid {first} was killed by SIGKILL after" in log


def test_stop_daemon_stops_the_supervisor_first_so_nothing_comes_back(kube_dir: Path) -> None:
    daemon = _start(kube_dir)
    assert bash(kube_dir, f"stop_daemon {NAME}").returncode == 0
    assert not alive(daemon)
    time.sleep(1.5)  # longer than the first backoff
    assert ours(kube_dir) == []
    assert not (kube_dir / f"{NAME}.pid").exists() and not (kube_dir / f"{NAME}.supervisor.pid").exists()
    assert "got SIGTERM: passing it to pid" in (kube_dir / f"{NAME}.log").read_text()
    assert bash(kube_dir, f"daemon_up {NAME} || supervisor_up {NAME}").returncode == 1


def test_a_supervisor_left_without_pid_files_is_found_by_its_argv_and_stopped(kube_dir: Path) -> None:
    _start(kube_dir)
    (kube_dir / f"{NAME}.pid").unlink()
    (kube_dir / f"{NAME}.supervisor.pid").unlink()
    assert bash(kube_dir, f"stale_left {NAME}").returncode == 0
    assert bash(kube_dir, f"stop_daemon {NAME}").returncode == 0
    time.sleep(1.5)
    assert ours(kube_dir) == []


def test_a_daemon_running_without_a_supervisor_is_current_but_not_supervised(kube_dir: Path) -> None:
    # as the daemons of an environment started before the supervisors came in
    assert bash(kube_dir, f'spawn "$KUBE_DIR/{NAME}.pid" "$KUBE_DIR/{NAME}.log" "${{ARGV[@]}}"').returncode == 0
    assert wait_for(lambda: pid_in(kube_dir / f"{NAME}.pid") is not None)
    assert wait_for(lambda: bash(kube_dir, f"daemon_current {NAME}").returncode == 0, 5)
    assert bash(kube_dir, f"supervised {NAME}").returncode == 1
    assert bash(kube_dir, f"stop_daemon {NAME}").returncode == 0
    assert ours(kube_dir) == []


@pytest.mark.skipif(SHELLCHECK is None, reason="shellcheck is not installed (make lint installs it)")
def test_cluster_sh_passes_shellcheck() -> None:
    checked = subprocess.run([str(SHELLCHECK), "-x", "devenv/cluster.sh", "devenv/lib.sh"], cwd=DEVENV.parent,
                             capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout


def test_ensure_daemon_leaves_a_supervised_healthy_daemon_alone(kube_dir: Path) -> None:
    daemon = _start(kube_dir)
    assert wait_for(lambda: bash(kube_dir, f"daemon_current {NAME}").returncode == 0, 5)
    ensured = bash(kube_dir, ENSURE)
    assert (ensured.returncode, ensured.stdout) == (0, "started:\n"), ensured.stderr
    assert pid_in(kube_dir / f"{NAME}.pid") == daemon and alive(daemon)


def test_ensure_daemon_starts_a_daemon_running_without_a_supervisor_again_under_one(kube_dir: Path) -> None:
    # the one restart of each daemon when an environment of before the supervisors is started again
    assert bash(kube_dir, f'spawn "$KUBE_DIR/{NAME}.pid" "$KUBE_DIR/{NAME}.log" "${{ARGV[@]}}"').returncode == 0
    assert wait_for(lambda: bash(kube_dir, f"daemon_current {NAME}").returncode == 0, 5)
    unsupervised = pid_in(kube_dir / f"{NAME}.pid")
    ensured = bash(kube_dir, ENSURE)
    assert ensured.returncode == 0, ensured.stderr
    assert ensured.stdout == f"bash: starting {NAME} again under its supervisor: it runs without one\nstarted: {NAME}\n"
    assert unsupervised is not None and not alive(unsupervised)
    # the stand-in is "healthy" at once, so ensure_daemon returns before the supervisor has started it
    assert wait_for(lambda: bash(kube_dir, f"daemon_current {NAME} && supervised {NAME}").returncode == 0, 5)
