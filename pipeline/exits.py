"""How a process of svmbench ends once its work is written: `fast_exit`, the one way out that skips
the interpreter's teardown.

Why not `sys.exit`: after the last result is on disk and the cluster is closed, CPython's
teardown frees every module and object one by one (numba, pandas, matplotlib, Dask), which costs a
user a visible pause for nothing. `os._exit` skips it, but also skips what must still happen:
the atexit handlers (logging's flush and close, `weakref.finalize` callbacks such as temporary
directories' removal, Dask's own) and the flush of Python's stream buffers. `fast_exit` does
those, then `os._exit`.

A forked child (the report's process, the kept cluster's command child) inherited its parent's
atexit handlers, which are the parent's to run: ``forked=True`` flushes the streams and leaves
the handlers alone, as a child of `os.fork` must (`os._exit` is the documented way out of one).
"""
from __future__ import annotations

import atexit
import logging
import os
import sys


def fast_exit(code: int, forked: bool = False) -> None:
    """End this process with `code` now, everything written: the atexit handlers (not in a forked
    child), logging, then stdout and stderr flushed, then `os._exit`. Never returns."""
    if not forked:
        # CPython keeps its atexit handlers private (`atexit._run_exitfuncs` is how the
        # interpreter itself runs them at exit); elsewhere the ordinary exit does it all.
        run_handlers = getattr(atexit, "_run_exitfuncs", None)
        if run_handlers is None:
            sys.exit(code)
        run_handlers()
        logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass     # a reader gone (a closed pipe) or no stream at all: nothing left to say
    os._exit(code)


def mute_streams() -> None:
    """Point stdout and stderr (descriptors 1 and 2) at /dev/null: their reader is gone (a killed
    command's pipes), and what is still written, the streams' flush at exit among it, must not fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
