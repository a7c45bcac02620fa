"""The scan of a node's whole disk for secret values, run ON the node (python3 of the node's
own OS, over SSH): standard library only, so that its source is sent as is through SSH's stdin
with a call of `run_scan` after it, which carries the needles and the allow-list
(no secret in a command line).

It walks `/` as a real compute's disk would be scanned, and reads the journal through
journalctl too. What it leaves out, each with its reason, is in `PSEUDO_FSTYPES`,
`skipped_mounts` and `MAX_BYTES`.
"""

from __future__ import annotations

import base64
import fnmatch
import json
import os
import stat
import subprocess
from collections.abc import Iterable, Iterator
from typing import Any

# Files larger than this are not read, to keep a scan within minutes. What that leaves out on a
# test node: guests' disks and base images under /var/lib/nova/instances (what a guest wrote,
# not what the node was given), and journal files past 64 MiB (journald lets one grow to 1/8 of
# SystemMaxUse, at most 128 MiB: their entries are read through `journalctl -o export` instead).
MAX_BYTES = 64 << 20

# Filesystems that are views of the kernel, not disk: nothing written to them survives a reboot
# or is stored anywhere a disk scan could find it.
PSEUDO_FSTYPES = frozenset({
    "proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "mqueue", "securityfs", "debugfs",
    "tracefs", "bpf", "fusectl", "configfs", "hugetlbfs", "pstore", "autofs", "binfmt_misc",
    "efivarfs", "nsfs", "rpc_pipefs",
})
# /dev holds device nodes, and /dev/shm memory that a disk scan of a real node does not see.
PSEUDO_PATHS = ("/proc", "/sys", "/dev")

# journald's Compress= is on by default (journald.conf(5)): a field larger than 512 bytes is
# stored compressed (zstd), so a secret inside a long message is not in the journal files' raw
# bytes. Smaller fields are stored as they are. The export format prints every field decompressed.
JOURNAL_COMMAND = ("journalctl", "--no-pager", "--merge", "-o", "export")
JOURNAL_PLACE = "journal (journalctl -o export)"
CHUNK = 1 << 20


def unescape_mount_path(field: str) -> str:
    """A path of /proc/self/mountinfo, its octal escapes (space, tab, newline, backslash) undone."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def skipped_mounts(mountinfo: str) -> dict[str, str]:
    """Mount point -> why the walk does not enter it, from the text of /proc/self/mountinfo."""
    skipped: dict[str, str] = {}
    for line in mountinfo.splitlines():
        head, _, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if len(fields) < 6 or not rest:
            continue
        point, options, fstype = unescape_mount_path(fields[4]), fields[5].split(","), rest[0]
        if point == "/":
            continue
        if fstype in PSEUDO_FSTYPES or any(point == p or point.startswith(p + "/") for p in PSEUDO_PATHS):
            skipped[point] = f"pseudo filesystem ({fstype})"
        elif "ro" in options:
            # e.g. /var/lib/shared-images, the image store the host binds read-only into every node
            # (devenv/nodes.sh): image content built before any stack, which nothing on the node
            # can write to
            skipped[point] = "read-only mount: image content the node cannot write"
        elif fstype == "overlay":
            # a running container's root as podman mounts it: its image layers (read-only) under
            # its writable layer, which the walk reads in /var/lib/containers/storage/overlay/*/diff
            skipped[point] = "a container's merged root (its writable layer is read where it is stored)"
    return skipped


def under(path: str, points: Iterable[str]) -> bool:
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in points)


def files_to_read(roots: Iterable[str], skip: Iterable[str], max_bytes: int = MAX_BYTES,
                  ) -> Iterator[tuple[str, os.stat_result]]:
    """(path, lstat) of every regular file under `roots`, not under `skip`, of at most `max_bytes`:
    sockets, pipes, devices and symbolic links are not files with content of their own."""
    skipped = tuple(skip)
    for root in roots:
        for dirpath, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not under(os.path.join(dirpath, d), skipped))
            for name in sorted(names):
                path = os.path.join(dirpath, name)
                if under(path, skipped):
                    continue
                try:
                    info = os.lstat(path)
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode) and info.st_size <= max_bytes:
                    yield path, info


def holding(data: bytes, needles: list[bytes]) -> list[int]:
    """The indexes of the needles found in `data`."""
    return [i for i, needle in enumerate(needles) if needle in data]


def holding_in_stream(chunks: Iterable[bytes], needles: list[bytes]) -> list[int]:
    """The indexes of the needles found in a stream read in chunks (a needle may span two)."""
    keep = max((len(n) for n in needles), default=1) - 1
    found: set[int] = set()
    tail = b""
    for chunk in chunks:
        window = tail + chunk
        found.update(holding(window, needles))
        tail = window[-keep:] if keep else b""
    return sorted(found)


def allowed(path: str, mode: int, uid: int, allow: Iterable[tuple[str, int, int]]) -> bool:
    """Whether a file may hold a secret: its path matches an allowed pattern (fnmatch: `*` crosses
    `/`) and it has that entry's permission bits and owner."""
    return any(fnmatch.fnmatchcase(path, pattern) and stat.S_IMODE(mode) == want_mode and uid == want_uid
               for pattern, want_mode, want_uid in allow)


def scan(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every file (and the journal) holding a needle that the allow-list does not allow."""
    needles = [n.encode() for n in spec["needles"]]
    allow = [(p, int(m), int(u)) for p, m, u in spec["allow"]]
    with open("/proc/self/mountinfo") as handle:
        skip = [*skipped_mounts(handle.read()), *PSEUDO_PATHS]
    for path, info in files_to_read(spec.get("roots", ["/"]), skip, spec.get("max_bytes", MAX_BYTES)):
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            continue  # gone since the walk saw it
        except OSError as error:
            # a file the scan cannot read is a file it did not check: said, not passed over
            yield {"path": path, "error": f"unreadable: {error.strerror}"}
            continue
        hits = holding(data, needles)
        if hits and not allowed(path, info.st_mode, info.st_uid, allow):
            yield {"path": path, "hits": hits, "mode": oct(stat.S_IMODE(info.st_mode)), "uid": info.st_uid}
    journal = subprocess.Popen(JOURNAL_COMMAND, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = journal.stdout
    assert out is not None
    hits = holding_in_stream(iter(lambda: out.read(CHUNK), b""), needles)
    if journal.wait() != 0:
        yield {"path": JOURNAL_PLACE, "error": f"journalctl exited {journal.returncode}"}
    elif hits:
        yield {"path": JOURNAL_PLACE, "hits": hits}


def run_scan(encoded: str) -> None:
    """Prints, one JSON line each, what `scan` finds for its spec (base64 of JSON: needles,
    allow): the caller appends the call to this module's source, which SSH's stdin carries."""
    for found in scan(json.loads(base64.b64decode(encoded))):
        print(json.dumps(found), flush=True)
