"""A dynamic provider that counts how many of its creates run at once: each takes
`seconds`, or ends as soon as `together` creates have been running at once,
and reports when it ran and the most it saw running together. Served by the
same plugin as the program's PlaybookRuns (imported by reference, as theirs is)."""

from __future__ import annotations

import threading
import time
from typing import Any

from pulumi.dynamic import CreateResult, ResourceProvider

_changed = threading.Condition()
_running = 0
_peak = 0


class ProbeProvider(ResourceProvider):
    def create(self, props: dict[str, Any]) -> CreateResult:
        global _running, _peak
        start = time.time()
        together = int(props.get("together") or 0)
        with _changed:
            _running += 1
            _peak = max(_peak, _running)
            _changed.notify_all()
            _changed.wait_for(lambda: 0 < together <= _peak, timeout=float(props["seconds"]))
            _running -= 1
            peak = _peak
        outs = {**props, "start": start, "end": time.time(), "peak": peak, "thread": threading.current_thread().name}
        return CreateResult(id_=str(props["name"]), outs=outs)
