"""A plugin for RunPlugin's tests: prints its arguments, one variable of its
environment, its working directory and its venv, then exits with the code it
was given."""

import os
import sys

print("args", *sys.argv[1:], flush=True)
print("env", os.environ.get("PLUGIN_GREETING"), flush=True)
print("cwd", os.getcwd(), flush=True)
print("venv", sys.prefix, flush=True)
print("to stderr", file=sys.stderr, flush=True)
sys.exit(int(sys.argv[-1]))
