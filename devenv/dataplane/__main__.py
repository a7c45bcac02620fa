"""python3 -m devenv.dataplane start|status|boundary [--delete]

start, status: devenv/dataplane/deploy.py (through devenv/dataplane.sh).
boundary: prints the `nft -f` script of the host's boundary (devenv/dataplane/boundary.py),
with --delete the one that removes it; devenv/nodes.sh applies them.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from . import boundary, network
from .deploy import run


def main(argv: Sequence[str]) -> int:
    if list(argv) in (["start"], ["status"]):
        return run(argv[0])
    if list(argv) == ["boundary"]:
        sys.stdout.write(boundary.ruleset(network.load()))
        return 0
    if list(argv) == ["boundary", "--delete"]:
        sys.stdout.write(boundary.delete_script())
        return 0
    print(f"usage: {(__doc__ or '').splitlines()[0]}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
