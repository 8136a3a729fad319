"""The suite's SIGTERM handler (tests/conftest.py, `_interrupt`) belongs to the test process: a
child forked from it (a multiprocessing pool's worker) dies of SIGTERM, as `Pool.terminate`
expects, instead of raising KeyboardInterrupt where it waits (which left a pool worker blocked
on its queue's lock and make test hung)."""
import multiprocessing
import signal
import time


def _sleep():
    time.sleep(60)


def test_a_forked_child_dies_of_sigterm():
    p = multiprocessing.get_context("fork").Process(target=_sleep)
    p.start()
    time.sleep(0.5)
    p.terminate()
    p.join(timeout=10)
    assert p.exitcode == -signal.SIGTERM
