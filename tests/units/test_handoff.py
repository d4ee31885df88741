"""The gateways' loop-to-thread hand-off: results, errors, context, threads, close."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from prefixkey.gateways._handoff import Handoff

WHO: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="nobody")


def test_a_call_runs_in_a_worker_thread_with_the_callers_context() -> None:
    handoff = Handoff(threads=2)

    def where(x: int) -> tuple[int, int, str]:
        return x * 2, threading.get_ident(), WHO.get()

    async def main() -> tuple[tuple[int, int, str], int]:
        WHO.set("caller")
        return await handoff.call(where, 21), threading.get_ident()

    (value, worker, who), loop_thread = asyncio.run(main())
    handoff.close()
    assert value == 42 and worker != loop_thread and who == "caller"


def test_an_error_reaches_the_awaiting_task() -> None:
    handoff = Handoff()

    def fails() -> None:
        raise KeyError("no such replica")

    async def main() -> None:
        await handoff.call(fails)

    with pytest.raises(KeyError, match="no such replica"):
        asyncio.run(main())
    handoff.close()


def test_concurrent_calls_all_complete_on_at_most_threads_threads() -> None:
    handoff = Handoff(threads=3)
    gate = threading.Barrier(3, timeout=10)
    seen: set[int] = set()

    def work(i: int) -> int:
        seen.add(threading.get_ident())
        if i < 3:
            gate.wait()  # three calls at once: each needs its own thread
        return i

    async def main() -> list[int]:
        return list(await asyncio.gather(*(handoff.call(work, i) for i in range(20))))

    assert asyncio.run(main()) == list(range(20))
    assert len(seen) == 3
    handoff.close()


def test_calls_after_close_start_new_threads() -> None:
    handoff = Handoff(threads=1)

    async def twice() -> list[threading.Thread]:
        first = await handoff.call(threading.current_thread)
        handoff.close()
        return [first, await handoff.call(threading.current_thread)]

    first, second = asyncio.run(twice())
    assert first is not second  # the objects (an ident may be reused)
    first.join(timeout=10)
    assert not first.is_alive()
    handoff.close()
