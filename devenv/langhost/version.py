"""The host's version: the Pulumi release pinned in devenv/versions.env.

The CLI compares a language host's version with its own, so the host reports
the pin instead of carrying a copy of it. In the checkout the file is
devenv/versions.env; the toolchain installs a copy beside the package.
"""

from __future__ import annotations

import re
from pathlib import Path

VERSIONS_ENV = Path(__file__).resolve().parent.parent / "versions.env"
_ASSIGNMENT = re.compile(r"^\s*([A-Z_][A-Z0-9_]*)=(.*)$")


def read_versions(path: Path = VERSIONS_ENV) -> dict[str, str]:
    """The KEY=VALUE pins of a versions.env (comments and blank lines skipped)."""
    pins: dict[str, str] = {}
    for line in path.read_text().splitlines():
        match = _ASSIGNMENT.match(line)
        if match:
            pins[match.group(1)] = match.group(2).strip().strip("'\"")
    return pins


def host_version(path: Path = VERSIONS_ENV) -> str:
    try:
        version = read_versions(path).get("PULUMI_VERSION", "")
    except OSError as err:
        raise SystemExit(f"pulumi-language-python: cannot read {path} ({err.strerror}): "
                         "reinstall the host with `devenv/toolchain.sh langhost`") from None
    if not re.fullmatch(r"\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?", version):
        raise SystemExit(f"pulumi-language-python: {path} sets no valid PULUMI_VERSION "
                         f"(found {version!r}): set it to the pinned Pulumi release, e.g. 3.259.0")
    return version
