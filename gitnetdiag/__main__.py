"""``python -m gitnetdiag``: the command line, then a quick exit.

After a diagnosis the interpreter holds numpy, matplotlib and the whole engine; tearing
those modules down takes 0.4-0.9 s on a loaded 2-core machine (measured: the "exit" row
of ``benchmarks/time_to_diagnosis.py``), time in which nothing is measured or written.
So once the command returned, or exited, with everything it printed flushed, the
threads it left joined and the ``atexit`` functions run, the process ends at once
with the command's exit status. An uncaught exception still takes the usual way
(its traceback). In-process callers of :func:`gitnetdiag.cli.main` are not affected.
"""

import atexit
import os
import sys
import threading

from gitnetdiag.cli import main


def _status(code: object) -> int:
    """The exit status ``sys.exit(code)`` gives: None 0, an int itself, else 1 (printed)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    sys.stderr.write(f"{code}\n")
    return 1


def _exit_now(status: int) -> None:
    # What the interpreter's own shutdown does first: the hooks that tell executors' worker
    # threads to stop (concurrent.futures registers them there), then the non-daemon
    # threads joined. A plain join of every thread would wait forever on a pool's idle
    # worker whose executor was never shut down.
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()
    else:
        for thread in threading.enumerate():
            if thread is not threading.current_thread() and not thread.daemon:
                thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: 120, as the interpreter's exit
            if stream is sys.stdout and status == 0:
                status = 120
    os._exit(status)


try:
    main()
except SystemExit as exc:
    _exit_now(_status(exc.code))
_exit_now(0)
