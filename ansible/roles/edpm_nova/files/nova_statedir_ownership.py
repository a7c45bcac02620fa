#!/usr/bin/env python3
"""Give the nova user its state directory before nova-compute starts.

The nova_compute_init step runs this as root:

- the state directory and every directory below it end up owned by nova:nova
  (directories made by root on the node, e.g. before the nova user existed);
- files keep their owner, except after an upgrade that changed nova's ids: an
  `upgrade_marker` file in the state directory, owned by the old ids, makes
  every file owned by those ids move to the new ones; the marker is removed
  once the whole tree is done;
- when `../_nova_secontext` exists next to the state directory, the
  directories (and the files moved after an upgrade) get its SELinux context;
- the paths in NOVA_STATEDIR_OWNERSHIP_SKIP (separated by os.pathsep,
  relative to the state directory unless absolute) are left alone; the role
  lists compute_id there, the node's identity, which must never change;
- symlinks are neither followed nor changed.

An entry that vanishes or refuses the change (e.g. a snapshot directory on
NFS) is logged and skipped. The last line says how many paths changed.

Usage: nova_statedir_ownership.py [STATE_DIR]   (default /var/lib/nova)
"""

from __future__ import annotations

import errno
import logging
import os
import pwd
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

STATE_DIR = "/var/lib/nova"
UPGRADE_MARKER = "upgrade_marker"
SECONTEXT_MARKER = "../_nova_secontext"
NOVA_USER = "nova"

LOG = logging.getLogger("nova_statedir")


def _selinux() -> Any:
    try:
        import selinux  # type: ignore[import-not-found]
    except ImportError:
        return None
    return selinux


@dataclass
class Walk:
    """One run over the state directory."""

    target: tuple[int, int]  # nova's uid and gid now
    previous: tuple[int, int] | None  # nova's ids before an upgrade; None: no upgrade
    skip: frozenset[str]
    context: str | None  # the SELinux context to give, if any
    changed: int = 0

    def chown(self, path: str, info: os.stat_result, uid: int, gid: int) -> None:
        if (info.st_uid, info.st_gid) == (uid, gid):
            LOG.debug("%s is already %d:%d", path, uid, gid)
            return
        LOG.info("%s: %d:%d -> %d:%d", path, info.st_uid, info.st_gid, uid, gid)
        os.lchown(path, uid, gid)
        self.changed += 1

    def relabel(self, path: str, is_dir: bool) -> bool:
        """Sets the context; False when a directory's file system has no labels (skip below it)."""
        if self.context is None:
            return False
        try:
            _selinux().lsetfilecon(path, self.context)
        except OSError as err:
            if is_dir and err.errno == errno.EOPNOTSUPP:
                LOG.info("%s: no SELinux labels on this file system", path)
                return False
            raise
        return True

    def entry(self, path: str, info: os.stat_result, label: bool) -> bool:
        """Handles one path; returns whether to label below it."""
        if stat.S_ISDIR(info.st_mode):
            self.chown(path, info, *self.target)
            return self.relabel(path, True) if label else False
        if self.previous is not None and stat.S_ISREG(info.st_mode):
            uid = self.target[0] if info.st_uid == self.previous[0] else info.st_uid
            gid = self.target[1] if info.st_gid == self.previous[1] else info.st_gid
            self.chown(path, info, uid, gid)
            if label:
                self.relabel(path, False)
        return False

    def tree(self, top: str, label: bool) -> None:
        for path, info in _children(top):
            if path in self.skip:
                LOG.info("%s: skipped", path)
                continue
            try:
                label_below = self.entry(path, info, label)
            except OSError as err:
                LOG.warning("%s: left as it is: %s", path, err)
                continue
            if stat.S_ISDIR(info.st_mode):
                self.tree(path, label_below)


def _children(top: str) -> Iterator[tuple[str, os.stat_result]]:
    try:
        names = sorted(os.listdir(top))
    except OSError as err:
        LOG.warning("%s: cannot list it: %s", top, err)
        return
    for name in names:
        path = os.path.join(top, name)
        try:
            yield path, os.lstat(path)  # lstat: a symlink is a symlink, never its target
        except OSError as err:
            LOG.warning("%s: vanished: %s", path, err)


def skipped_paths(state_dir: str, value: str | None) -> frozenset[str]:
    """The paths of NOVA_STATEDIR_OWNERSHIP_SKIP, absolute and normalised."""
    paths = (p for p in (value or "").split(os.pathsep) if p)
    return frozenset(os.path.normpath(os.path.join(state_dir, p)) for p in paths)


def run(state_dir: str, user: str | None = None, skip: frozenset[str] = frozenset()) -> int:
    """Walks `state_dir` for `user` (default nova); returns the number of paths whose owner changed."""
    user = user or NOVA_USER
    entry = pwd.getpwnam(user)
    target = (entry.pw_uid, entry.pw_gid)
    marker = os.path.join(state_dir, UPGRADE_MARKER)
    previous = None
    if os.path.lexists(marker):
        info = os.lstat(marker)
        previous = (info.st_uid, info.st_gid)
        LOG.info("upgrade marker found: files of %d:%d move to %d:%d", *previous, *target)
    context = None
    secontext_marker = os.path.normpath(os.path.join(state_dir, SECONTEXT_MARKER))
    if os.path.exists(secontext_marker):
        selinux = _selinux()
        if selinux is None:
            LOG.warning("%s exists but python has no selinux module: labels are left as they are", secontext_marker)
        else:
            context = selinux.lgetfilecon(secontext_marker)[1]
    walk = Walk(target=target, previous=previous, skip=skip | {marker}, context=context)
    LOG.info("%s and its directories go to %s (%d:%d)", state_dir, user, *target)
    top = os.lstat(state_dir)
    walk.chown(state_dir, top, *target)
    walk.tree(state_dir, walk.relabel(state_dir, True))
    if previous is not None:
        os.unlink(marker)
        LOG.info("removed %s", marker)
    return walk.changed


def main(argv: list[str]) -> int:
    debug = os.environ.get("__OS_DEBUG", "false").lower() == "true"
    logging.basicConfig(stream=sys.stdout, level=logging.DEBUG if debug else logging.INFO,
                        format="%(name)s: %(message)s")
    state_dir = argv[0] if argv else STATE_DIR
    skip = skipped_paths(state_dir, os.environ.get("NOVA_STATEDIR_OWNERSHIP_SKIP"))
    changed = run(state_dir, skip=skip)
    print(f"nova_statedir: changed the owner of {changed} paths")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
