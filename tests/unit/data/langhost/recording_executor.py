"""Stands in for the SDK's pulumi-language-python-exec in the host's tests: writes
what the host ran it with to $RECORD_TO, then leaves as its program's name says
(`exit-N`: with code N; `sleep`: after a minute)."""

import json
import os
import sys
import time
from pathlib import Path

program = next(a for a in reversed(sys.argv[1:]) if "/" in a or a == ".")
Path(os.environ["RECORD_TO"]).write_text(json.dumps({
    "argv": sys.argv[1:],
    "cwd": os.getcwd(),
    "executable": sys.executable,
    "env": {k: os.environ.get(k) for k in ("PULUMI_CONFIG", "PULUMI_CONFIG_SECRET_KEYS", "VIRTUAL_ENV")},
}))
name = os.path.basename(program)
if name == "sleep":
    time.sleep(60)
sys.exit(int(name.removeprefix("exit-")) if name.startswith("exit-") else 0)
