"""`python -m langhost` (installed) or `python -m devenv.langhost` (in the checkout)."""

import sys

from .server import main

sys.exit(main(sys.argv[1:]))
