"""A lean hand-off from an event loop to worker threads, and back.

``asyncio.to_thread`` goes through ``run_in_executor``: a copied context, a
``concurrent.futures`` future chained to an asyncio one, the pool's own
bookkeeping. A gateway hands every request off once (rendering must not
hold the loop), so :class:`Handoff` keeps only what that needs: a queue
its threads wait on and the loop's future, resolved with
``call_soon_threadsafe``. It halves the loop thread's CPU time per hand-off
(benchmarks/GATEWAYS.md). Threads start on first use (up to ``threads``:
rendering's tokenizer can release the GIL, so calls may overlap) and are
daemons; :meth:`close` stops them.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Handoff"]

_T = TypeVar("_T")

_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", contextvars.Context,
             Callable[..., Any], tuple[Any, ...]]


def _resolve(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if future.cancelled():
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


class Handoff:
    """Run calls in worker threads, awaited on the caller's loop."""

    __slots__ = ("_busy", "_jobs", "_lock", "_name", "_threads", "_width")

    def __init__(self, threads: int = 4, name: str = "prefixkey-handoff") -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._width = max(1, threads)
        self._busy = 0  # calls queued or running: a thread is added while all are busy
        self._lock = threading.Lock()
        self._name = name

    def call(self, fn: Callable[..., _T], *args: Any) -> asyncio.Future[_T]:
        """``fn(*args)`` in a worker thread, in this context; await the result on the loop."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_T] = loop.create_future()
        with self._lock:
            self._busy += 1
            threads = self._threads
            if not threads or (self._busy > len(threads) and len(threads) < self._width):
                thread = threading.Thread(target=self._work, args=(self._jobs,), daemon=True,
                                          name=f"{self._name}-{len(threads)}")
                threads.append(thread)
                thread.start()
            self._jobs.put((loop, future, contextvars.copy_context(), fn, args))
        return future

    def _work(self, jobs: queue.SimpleQueue[_Job | None]) -> None:
        while True:
            job = jobs.get()
            if job is None:
                return
            loop, future, context, fn, args = job
            try:
                value, ok = context.run(fn, *args), True
            except BaseException as exc:  # handed to the awaiting task, as to_thread does
                value, ok = exc, False
            with self._lock:
                self._busy -= 1
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody awaits
                loop.call_soon_threadsafe(_resolve, future, ok, value)
            del job, future, value

    def close(self) -> None:
        """Stop the threads once the calls queued so far have run (later calls start others)."""
        with self._lock:
            threads, self._threads = self._threads, []
            jobs, self._jobs = self._jobs, queue.SimpleQueue()  # later calls: new threads
        for _ in threads:
            jobs.put(None)
