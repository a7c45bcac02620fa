"""Lets the environment switch off the CLI's automatic log file.

Every command of this CLI writes a debug-level log of its own to
$PULUMI_HOME/logs (gzip, or encrypted once the stack's secrets manager is
known): every property of every resource step, about 0.27 MB per node of a
preview, and most of the engine's CPU per node. With
OPENSTACK_NOVA_PULUMI_LOGS=off (devenv/env.sh's default) the command starts no
such log, as when the CLI cannot create one; any other value, or none, keeps
the CLI's own behaviour. Run on the source tree of pulumi's pkg module; fails
loudly if the code it edits has changed shape.
"""

import sys
from pathlib import Path

START = "autoLogger, logErr = backendlogging.StartLogging(cmd.Context(), nil /* sm */, commandPath)"
SWITCHED = ('if os.Getenv("OPENSTACK_NOVA_PULUMI_LOGS") != "off" {\n'
            "\t\t\t\t" + START + "\n"
            "\t\t\t}")


def main(tree: str) -> int:
    path = Path(tree) / "cmd" / "pulumi" / "pulumi.go"
    text = path.read_text()
    if text.count(START) != 1 or '\t"os"\n' not in text:
        print(f"{path}: the start of the automatic log is not there once; the fix needs a new look", file=sys.stderr)
        return 1
    path.write_text(text.replace(START, SWITCHED))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
