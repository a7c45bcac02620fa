#!/usr/bin/env python3
"""Writes an OCI image layout tarball from a root filesystem directory, with
the standard library only, for `ctr -n k8s.io images import` (no registry).

    oci.py --rootfs DIR --out FILE.tar --name REF [--name REF ...]
           [--entrypoint ARGV] [--cmd ARGV] [--env K=V ...] [--workdir DIR]
           [--user USER] [--label K=V ...] [--mtime EPOCH]
    oci.py --index FILE.tar      prints "REF MANIFEST-DIGEST" per name

ARGV is a JSON array (["/bin/sh", "-c", "..."]) or a string split like a
shell would. The image has one gzip layer; entries are sorted and owners
numeric, so the same tree gives the same layer (with --mtime, the same bytes
whatever the files' times). Device nodes and sockets are left out: the
runtime provides /dev.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import io
import json
import os
import platform
import shlex
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
NAME_ANNOTATION = "io.containerd.image.name"
REF_ANNOTATION = "org.opencontainers.image.ref.name"
CHUNK = 1 << 20
DEFAULT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ARCHES = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le", "s390x": "s390x"}


@dataclass
class ImageConfig:
    """What the runtime reads from the image config."""

    entrypoint: list[str] | None = None
    cmd: list[str] | None = None
    env: list[str] = field(default_factory=lambda: [DEFAULT_PATH])
    workdir: str | None = None
    user: str | None = None
    labels: dict[str, str] = field(default_factory=dict)


@dataclass
class Blob:
    digest: str
    size: int


class _HashingWriter:
    """A write-only file that hashes what passes through it."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.sha = hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.sha.update(data)
        self.out.write(data)
        return len(data)

    def flush(self) -> None:
        self.out.flush()


def _compressor() -> list[str]:
    """pigz uses every core; gzip -1 still runs beside the tar writer. -n: no name or time in the header."""
    if shutil.which("pigz"):
        return ["pigz", "-1", "-n", "-c"]
    return ["gzip", "-1", "-n", "-c"]


def _xattrs(path: str) -> dict[str, str]:
    headers: dict[str, str] = {}
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return headers
    for name in sorted(names):
        if name.startswith("security.selinux"):
            continue
        try:
            value = os.getxattr(path, name, follow_symlinks=False)
        except OSError:
            continue
        headers["SCHILY.xattr." + name] = value.decode("utf-8", "surrogateescape")
    return headers


def _walk(root: str) -> list[str]:
    """Every path below root, relative, parents before children, sorted by name."""
    found: list[str] = []

    def visit(rel: str) -> None:
        base = os.path.join(root, rel) if rel else root
        with os.scandir(base) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            child = f"{rel}/{e.name}" if rel else e.name
            found.append(child)
            if e.is_dir(follow_symlinks=False):
                visit(child)

    visit("")
    return found


def _tarinfo(root: str, rel: str, st: os.stat_result, mtime: int | None) -> tarfile.TarInfo | None:
    mode = st.st_mode
    info = tarfile.TarInfo(rel)
    info.mode = stat.S_IMODE(mode)
    info.uid, info.gid = st.st_uid, st.st_gid
    info.uname = info.gname = ""
    info.mtime = int(st.st_mtime) if mtime is None else mtime
    if stat.S_ISREG(mode):
        info.type, info.size = tarfile.REGTYPE, st.st_size
    elif stat.S_ISDIR(mode):
        info.type = tarfile.DIRTYPE
    elif stat.S_ISLNK(mode):
        info.type, info.linkname = tarfile.SYMTYPE, os.readlink(os.path.join(root, rel))
    elif stat.S_ISFIFO(mode):
        info.type = tarfile.FIFOTYPE
    else:  # devices and sockets
        return None
    xattrs = _xattrs(os.path.join(root, rel))
    if xattrs:
        info.pax_headers = xattrs
    return info


def write_layer(rootfs: str, out: IO[bytes], mtime: int | None = None) -> tuple[Blob, str]:
    """Streams rootfs as a gzip tar into out; returns the blob and the uncompressed digest (diff_id)."""
    proc = subprocess.Popen(_compressor(), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    compressed = hashlib.sha256()
    size = 0

    def drain() -> None:
        nonlocal size
        assert proc.stdout is not None
        while chunk := proc.stdout.read(CHUNK):
            compressed.update(chunk)
            out.write(chunk)
            size += len(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    raw = _HashingWriter(proc.stdin)
    try:
        _write_tar(rootfs, raw, mtime)
    finally:
        proc.stdin.close()
        reader.join()
    if proc.wait() != 0:
        raise RuntimeError(f"{_compressor()[0]} exited {proc.returncode}")
    return Blob("sha256:" + compressed.hexdigest(), size), "sha256:" + raw.sha.hexdigest()


def _write_tar(root: str, raw: _HashingWriter, mtime: int | None) -> None:
    seen: dict[tuple[int, int], str] = {}
    with tarfile.open(fileobj=raw, mode="w|", format=tarfile.PAX_FORMAT, bufsize=CHUNK) as tar:  # type: ignore[call-overload]
        for rel in _walk(root):
            path = os.path.join(root, rel)
            st = os.lstat(path)
            info = _tarinfo(root, rel, st, mtime)
            if info is None:
                continue
            if info.type == tarfile.REGTYPE and st.st_nlink > 1:
                key = (st.st_dev, st.st_ino)
                if key in seen:
                    info.type, info.linkname, info.size = tarfile.LNKTYPE, seen[key], 0
                else:
                    seen[key] = rel
            if info.type == tarfile.REGTYPE:
                with open(path, "rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)


def _json_blob(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _config_doc(cfg: ImageConfig, diff_id: str, mtime: int | None) -> dict[str, Any]:
    runtime: dict[str, Any] = {"Env": cfg.env}
    if cfg.entrypoint is not None:
        runtime["Entrypoint"] = cfg.entrypoint
    if cfg.cmd is not None:
        runtime["Cmd"] = cfg.cmd
    if cfg.workdir:
        runtime["WorkingDir"] = cfg.workdir
    if cfg.user:
        runtime["User"] = cfg.user
    if cfg.labels:
        runtime["Labels"] = cfg.labels
    doc: dict[str, Any] = {
        "architecture": ARCHES.get(platform.machine(), platform.machine()),
        "os": "linux",
        "config": runtime,
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    }
    if mtime is not None:
        doc["created"] = _rfc3339(mtime)
    return doc


def _rfc3339(epoch: int) -> str:
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o644, 0
    tar.addfile(info, io.BytesIO(data))


def _add_dir(tar: tarfile.TarFile, name: str) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
    tar.addfile(info)


def build_image(rootfs: str, out: str, names: list[str], cfg: ImageConfig, mtime: int | None = None) -> str:
    """Writes the image layout tarball to out (atomically); returns the manifest digest."""
    out_dir = os.path.dirname(os.path.abspath(out))
    with tempfile.NamedTemporaryFile(dir=out_dir, prefix=".layer-", delete=True) as layer_file:
        layer, diff_id = write_layer(rootfs, layer_file, mtime)
        layer_file.flush()
        config = _json_blob(_config_doc(cfg, diff_id, mtime))
        manifest = _json_blob({
            "schemaVersion": 2,
            "mediaType": MEDIA_MANIFEST,
            "config": {"mediaType": MEDIA_CONFIG, "digest": _digest(config), "size": len(config)},
            "layers": [{"mediaType": MEDIA_LAYER, "digest": layer.digest, "size": layer.size}],
        })
        index = _json_blob(_index_doc(names, _digest(manifest), len(manifest)))
        tmp = out + ".tmp"
        with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tar:
            # index.json first: --index reads it without going through the layer.
            _add_bytes(tar, "index.json", index)
            _add_bytes(tar, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
            _add_dir(tar, "blobs")
            _add_dir(tar, "blobs/sha256")
            _add_bytes(tar, "blobs/sha256/" + _digest(manifest)[7:], manifest)
            _add_bytes(tar, "blobs/sha256/" + _digest(config)[7:], config)
            info = tarfile.TarInfo("blobs/sha256/" + layer.digest[7:])
            info.size, info.mode, info.mtime = layer.size, 0o644, 0
            layer_file.seek(0)
            tar.addfile(info, layer_file)
        os.replace(tmp, out)
    return _digest(manifest)


def _index_doc(names: list[str], digest: str, size: int) -> dict[str, Any]:
    return {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [
            {"mediaType": MEDIA_MANIFEST, "digest": digest, "size": size,
             "annotations": {NAME_ANNOTATION: name, REF_ANNOTATION: name}}
            for name in names
        ],
    }


def read_index(path: str) -> list[tuple[str, str]]:
    """(name, manifest digest) of each image in a layout tarball written by build_image."""
    with tarfile.open(path, "r|") as tar:
        for member in tar:
            if member.name.lstrip("./") == "index.json":
                f = tar.extractfile(member)
                assert f is not None
                doc = json.load(f)
                return [(m.get("annotations", {}).get(NAME_ANNOTATION, ""), m["digest"]) for m in doc["manifests"]]
    raise ValueError(f"{path}: no index.json")


def _argv(value: str | None) -> list[str] | None:
    if value is None:
        return None
    if value.lstrip().startswith("["):
        parsed = json.loads(value)
        if not isinstance(parsed, list) or not all(isinstance(a, str) for a in parsed):
            raise argparse.ArgumentTypeError(f"not a JSON array of strings: {value}")
        return parsed
    return shlex.split(value)


def _pairs(values: list[str], what: str) -> list[tuple[str, str]]:
    out = []
    for v in values:
        key, sep, val = v.partition("=")
        if not sep or not key:
            raise SystemExit(f"oci.py: {what} '{v}' is not K=V")
        out.append((key, val))
    return out


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="oci.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--index", metavar="FILE.tar", help="print the names and manifest digest of a written image")
    p.add_argument("--rootfs", help="root filesystem directory")
    p.add_argument("--out", help="OCI image layout tarball to write")
    p.add_argument("--name", action="append", default=[], help="full image reference; repeat for more names")
    p.add_argument("--entrypoint")
    p.add_argument("--cmd")
    p.add_argument("--env", action="append", default=[], help="K=V, added to PATH's default")
    p.add_argument("--workdir")
    p.add_argument("--user")
    p.add_argument("--label", action="append", default=[])
    p.add_argument("--mtime", type=int, help="time stamp of every entry (and of the config), seconds since 1970")
    args = p.parse_args(argv)
    if args.index is None and not (args.rootfs and args.out and args.name):
        p.error("--rootfs, --out and at least one --name are needed (or --index FILE.tar)")
    return args


def main(argv: list[str]) -> int:
    args = _parse(argv)
    if args.index:
        for name, digest in read_index(args.index):
            print(name, digest)
        return 0
    if not Path(args.rootfs).is_dir():
        print(f"oci.py: {args.rootfs} is not a directory", file=sys.stderr)
        return 1
    cfg = ImageConfig(entrypoint=_argv(args.entrypoint), cmd=_argv(args.cmd), workdir=args.workdir, user=args.user,
                      labels=dict(_pairs(args.label, "label")))
    env = dict(kv.split("=", 1) for kv in cfg.env)
    env.update(_pairs(args.env, "env"))
    cfg.env = [f"{k}={v}" for k, v in env.items()]
    digest = build_image(args.rootfs, args.out, args.name, cfg, args.mtime)
    print(f"{args.out}: {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
