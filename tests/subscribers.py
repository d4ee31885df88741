"""Both subscribers behind one synchronous surface, for the end-to-end and soak suites.

:class:`LoopSubscriber` runs an :class:`~prefixkey.fleet.AsyncSubscriber` on an
event loop of its own thread, so that a test body written for the threaded
:class:`~prefixkey.fleet.Subscriber` (``with …``, ``stats()``, ``lock``,
``wait_until``) drives the asyncio code unchanged. The ``make`` fixture
(tests/conftest.py) gives a test each of :data:`KINDS` in turn, through
:func:`make_subscriber`. The subscribers need pyzmq: they are imported on first
use, so that the conftest imports this module at no cost (and where pyzmq is missing).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

if TYPE_CHECKING:
    from prefixkey.fleet import (
        AsyncSubscriber,
        FairLock,
        ReplicaEndpoint,
        Subscriber,
        SubscriberStats,
    )

T = TypeVar("T")
KINDS = ("thread", "asyncio")


class LoopSubscriber:
    def __init__(self, replicas: list[ReplicaEndpoint], **options: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        from prefixkey.fleet import AsyncSubscriber  # needs pyzmq

        self.sub: AsyncSubscriber = AsyncSubscriber(replicas, **options)
        self.lock: FairLock = self.sub.lock
        self.index = self.sub.index

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def __enter__(self) -> LoopSubscriber:
        self._run(self.sub.start())
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.loop.is_closed():
            return
        self._run(self.sub.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.loop.close()

    @property
    def running(self) -> bool:
        return self.sub.running

    def stats(self) -> SubscriberStats:
        return self.sub.stats()

    def prometheus_text(self) -> str:
        return self.sub.prometheus_text()

    def wait_until(self, predicate: Callable[[SubscriberStats], bool], timeout: float = 5.0,
                   interval: float = 0.01) -> bool:
        # The loop's own wait, with room for a busy loop to come back to it.
        return self._run(self.sub.wait_until(predicate, timeout, interval), timeout + 30.0)


AnySubscriber: TypeAlias = "Subscriber | LoopSubscriber"


def make_subscriber(kind: str) -> Callable[..., AnySubscriber]:
    """A constructor with :class:`Subscriber`'s signature for ``kind`` ("thread", "asyncio")."""
    def make(replicas: list[ReplicaEndpoint], **options: Any) -> AnySubscriber:
        if kind == "thread":
            from prefixkey.fleet import Subscriber  # needs pyzmq

            return Subscriber(replicas, **options)
        return LoopSubscriber(replicas, **options)
    return make

