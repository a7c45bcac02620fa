"""Lets the SDK wait for the program's resources one at a time, not over every Output at once.

The Python SDK runs a synchronous program to its end before any resource's registration has
started: each is a task that has yet to run. Then `wait_for_rpcs` (pulumi/runtime/stack.py)
finds no registration under way, skips the loop that awaits them one after the other, and
waits on every Output the program made instead: `asyncio.wait(..., FIRST_COMPLETED)` over all
that are pending, again each time any of them resolves, until none is left. Each round hooks
a callback on every pending Output and unhooks it again: about 250 Outputs per node (most are
the SDK's own, one per input of each PlaybookRun), and a round for each batch of replies from
the engine, so the program's CPU grew faster than its node count (200 nodes: 34,000 Outputs
pending in the first round, 70 rounds, half of the program's CPU).

`pulumi.run` gives the program an asynchronous entry point, which the SDK awaits after the
module's code and before `wait_for_rpcs`. Yielding once there lets every registration start:
the SDK then awaits them one at a time, as it means to, and by the time it looks at the
Outputs nearly all have resolved. What the program registers, and how, is unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib

import pulumi


async def _yield() -> None:
    await asyncio.sleep(0)


def start_before_waiting() -> None:
    """Called last by the program: its registrations start before the SDK waits for them.

    Under the unit tests' mocks the root stack takes no entry point (`pulumi.runtime.set_mocks`
    finishes it at once) and `pulumi.run` refuses one: the program is the same without it.
    """
    with contextlib.suppress(pulumi.RunError):
        pulumi.run(_yield)
