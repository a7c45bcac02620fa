"""Trusts a node's host key in a node set's known_hosts file (`nodeTemplate.knownHostsFile`),
after checking it against the fingerprint you read on the node itself.

    .venv/bin/python -m tools.known_hosts trust FILE ADDRESS [--port 22] [--name NAME ...] \\
        --fingerprint SHA256:...

It asks the node for its keys (ssh-keyscan), keeps the one whose fingerprint
is the one given, and writes it for ADDRESS (and each NAME) in FILE in place of
any key the file had for them: a new node, or a node whose key was replaced.
Other lines stay as they are. Without --fingerprint, or when the node shows no
key with it, it only prints what the node shows, and changes nothing: a key
is trusted only once someone has compared it with the node's own.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from components.settings.knownhosts import KnownHost, lookup_name, parse, patterns_match


class TrustError(Exception):
    pass


def fingerprint(key: str) -> str:
    """OpenSSH's SHA256 fingerprint of a "<type> <base64>" key."""
    blob = base64.b64decode(key.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def scan(address: str, port: int, timeout: int = 10) -> list[str]:
    """The host keys the node at address:port shows, as "<type> <base64>"."""
    proc = subprocess.run(["ssh-keyscan", "-T", str(timeout), "-p", str(port), address], capture_output=True,
                          text=True, check=False)
    keys = [entry.key for entry in parse(proc.stdout)]
    if not keys:
        raise TrustError(f"{address}:{port} showed no host key (ssh-keyscan: {proc.stderr.strip() or 'no answer'})")
    return keys


def _key_type(key: str) -> str:
    return key.split()[0].removeprefix("ssh-").removeprefix("ecdsa-sha2-").upper()


def choose(keys: Iterable[str], wanted: str) -> str:
    """The key whose fingerprint is `wanted`; an error listing what the node shows otherwise."""
    keys = list(keys)
    for key in keys:
        if fingerprint(key) == wanted:
            return key
    shown = ", ".join(f"{_key_type(k)} {fingerprint(k)}" for k in keys)
    raise TrustError(f"the node shows {shown}; none is {wanted}. Compare with `ssh-keygen -lf "
                     "/etc/ssh/ssh_host_ed25519_key.pub` on the node's console: if it says otherwise, something "
                     "else answers at that address, so trust nothing")


def rewrite(text: str, names: Sequence[str], key: str) -> tuple[str, int]:
    """`text` with the keys it had for `names` dropped and `key` added for them; and how many
    lines were dropped or narrowed."""
    kept, touched = [], 0
    for line in text.splitlines():
        entries = parse(line)
        if not entries or not any(patterns_match(entries[0], n) for n in names):
            kept.append(line)
            continue
        touched += 1
        others = [p for p in entries[0].patterns if not any(patterns_match(KnownHost((p,), ""), n) for n in names)]
        if others:  # a line shared with other hosts keeps them
            kept.append(f"{','.join(others)} {entries[0].key}")
    kept.append(f"{','.join(names)} {key}")
    return "\n".join(kept) + "\n", touched


def write_in_place(path: Path, text: str) -> None:
    """Replaces the file whole (a reader sees the old one or the new one), keeping its mode."""
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def trust(file: Path, address: str, port: int, names: Sequence[str], wanted: str | None) -> str:
    keys = scan(address, port)
    if wanted is None:
        shown = "\n".join(f"  {_key_type(k)} {fingerprint(k)}" for k in keys)
        raise TrustError(f"{address}:{port} shows these keys:\n{shown}\nCompare them with `ssh-keygen -lf "
                         "/etc/ssh/ssh_host_ed25519_key.pub` on the node's console, then run again with "
                         "--fingerprint SHA256:...")
    key = choose(keys, wanted)
    all_names = [lookup_name(address, port), *(lookup_name(n, port) for n in names)]
    text, touched = rewrite(file.read_text() if file.exists() else "", list(dict.fromkeys(all_names)), key)
    write_in_place(file, text)
    replaced = f", in place of {touched} line{'s' * (touched != 1)} it had for them" if touched else ""
    return (f"trusted {_key_type(key)} {wanted} for {', '.join(dict.fromkeys(all_names))} in {file}{replaced}. "
            "Run `pulumi preview`, then `pulumi up`.")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog=".venv/bin/python -m tools.known_hosts", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("trust", help="trust a node's key, checked against the fingerprint given")
    cmd.add_argument("file", type=Path, help="the node set's knownHostsFile")
    cmd.add_argument("address", help="the node's ansibleHost")
    cmd.add_argument("--port", type=int, default=22, help="the node set's ansiblePort (default 22)")
    cmd.add_argument("--name", action="append", default=[], help="another name of the node (repeatable)")
    cmd.add_argument("--fingerprint", help="SHA256:... as the node itself shows it")
    args = parser.parse_args(argv)
    try:
        print(trust(args.file, args.address, args.port, args.name, args.fingerprint))
    except (TrustError, OSError, binascii.Error) as err:
        print(f"known_hosts: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
