"""One shared worker pool for the engine's whole-column work (Arrow and numpy release the GIL).

A persistent pool avoids paying thread start-up on every small operation; work
submitted from inside a worker runs inline, so nesting can never deadlock.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")
R = TypeVar("R")

WORKERS = max(2, min(8, os.cpu_count() or 2))
_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()
_local = threading.local()


def _get_pool() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="tableformat", initializer=_mark_worker)
        return _pool


def _mark_worker() -> None:
    _local.worker = True


def pmap(fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """map() over the pool, in order; inline for a single item or when already on a worker.

    When a task fails, the error is raised only after the tasks already running have stopped
    (those not started never run): a caller that cleans up after a failure (deletes the
    files written) then sees everything the tasks did."""
    items = list(items)
    if len(items) <= 1 or getattr(_local, "worker", False):
        return [fn(x) for x in items]
    pool = _get_pool()
    futures = [pool.submit(fn, x) for x in items]
    try:
        return [f.result() for f in futures]
    except BaseException:
        for f in futures:
            f.cancel()
        wait(futures)
        raise


def pmap_iter(fn: Callable[[T], R], items: Iterable[T], window: int = WORKERS) -> Iterator[R]:
    """Like pmap, but yields results in order while keeping at most `window` tasks in flight."""
    items = list(items)
    if len(items) <= 1 or getattr(_local, "worker", False):
        for x in items:
            yield fn(x)
        return
    pool = _get_pool()
    pending = []
    for x in items:
        pending.append(pool.submit(fn, x))
        if len(pending) > window:
            yield pending.pop(0).result()
    for f in pending:
        yield f.result()
