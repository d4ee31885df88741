"""A first-come, first-served reentrant lock: readers and appliers take turns.

``threading.RLock`` is not fair: a thread that releases it and takes it again
at once (a router ranking in a loop) nearly always wins over a thread already
waiting (the subscriber's worker applying a batch), so the waiter starves.
:class:`FairLock` hands the lock to the longest waiter on release, so each
holder waits at most for the holders queued before it.
"""

from __future__ import annotations

import threading
from collections import deque

from ...errors import PrefixKeyError

__all__ = ["FairLock", "LockOwnershipError"]


class LockOwnershipError(PrefixKeyError, RuntimeError):
    """A :class:`FairLock` released by a thread that does not hold it."""


class FairLock:
    """A reentrant lock granted in arrival order (direct hand-off on release)."""

    __slots__ = ("_count", "_mutex", "_owner", "_waiters")

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._owner: int | None = None
        self._count = 0
        self._waiters: deque[tuple[int, threading.Lock]] = deque()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        me = threading.get_ident()
        with self._mutex:
            if self._owner == me:
                self._count += 1
                return True
            if self._owner is None and not self._waiters:
                self._owner, self._count = me, 1
                return True
            if not blocking:
                return False
            turn = threading.Lock()
            turn.acquire()
            entry = (me, turn)
            self._waiters.append(entry)
        # release() makes us the owner before it releases our turn.
        if turn.acquire(timeout=timeout):
            return True
        with self._mutex:
            if self._owner == me:  # handed over while the wait timed out
                return True
            self._waiters.remove(entry)
            return False

    def release(self) -> None:
        with self._mutex:
            if self._owner != threading.get_ident():
                raise LockOwnershipError("release of a FairLock not held by this thread")
            self._count -= 1
            if self._count:
                return
            if self._waiters:
                self._owner, turn = self._waiters.popleft()
                self._count = 1
                turn.release()
            else:
                self._owner = None

    def __enter__(self) -> FairLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
