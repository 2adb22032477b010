"""Where a command's time goes: one JSON line per step, appended to the file that the
environment variable ``GITNETDIAG_STEPS`` names (``benchmarks/time_to_diagnosis.py`` sets it
and prints the table). Unset, nothing is recorded or written.

Each line: ``{"step": NAME, "start": S, "end": S, "pid": N}``, seconds of the system's
monotonic clock (``time.monotonic()``: one clock for every process of the machine, which a
step of the wall clock does not move), so that the steps of the re-executed process (``--lab``
enters the lab's client namespace) and of the threads beside the transfers line up on one
time axis.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator

STEPS_ENV = "GITNETDIAG_STEPS"


def record_step(name: str, start: float, end: float | None = None) -> None:
    """Append the step ``name`` (``start`` to ``end``, now when None) to the steps file."""
    path = os.environ.get(STEPS_ENV)
    if not path:
        return
    end = time.monotonic() if end is None else end
    line = json.dumps({"step": name, "start": start, "end": end, "pid": os.getpid()})
    with contextlib.suppress(OSError), open(path, "a", encoding="utf-8") as out:
        out.write(line + "\n")  # one write of one line: processes and threads interleave whole


@contextlib.contextmanager
def step(name: str) -> Iterator[None]:
    """Record the block as the step ``name``."""
    start = time.monotonic()
    try:
        yield
    finally:
        record_step(name, start)


def started() -> None:
    """Record this process's start-up (interpreter start to now) as a step."""
    if not os.environ.get(STEPS_ENV):
        return
    with contextlib.suppress(OSError, ValueError, IndexError):
        with open("/proc/self/stat", encoding="ascii") as stat:
            ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime", encoding="ascii") as uptime:
            up = float(uptime.read().split()[0])
        age = up - ticks / os.sysconf("SC_CLK_TCK")
        record_step("start-up (interpreter, imports, options)", time.monotonic() - age)
