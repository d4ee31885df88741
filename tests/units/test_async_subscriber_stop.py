"""AsyncSubscriber.stop() ends every task, even one whose cancellation was lost.

Before Python 3.12 ``asyncio.wait_for`` can swallow a cancellation that lands
as its timeout fires or its inner future completes; a task that lost one
would then keep ``stop()`` waiting forever (seen once in the fleet docs'
snippet test). The subscriber no longer uses ``wait_for``, and ``stop()``
cancels a task again until it is done: a task here swallows one cancellation
on purpose.
"""

from __future__ import annotations

import asyncio

from prefixkey.fleet import AsyncSubscriber, PrefixIndex, ReplicaEndpoint


def test_stop_cancels_again_a_task_that_lost_its_cancellation() -> None:
    swallowed = []

    async def stubborn() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            swallowed.append(True)  # lost, as wait_for can lose it
        await asyncio.sleep(60)

    async def main() -> bool:
        replica = ReplicaEndpoint("gpu-a", "tcp://127.0.0.1:9", "0.31.0")
        sub = AsyncSubscriber([replica], index=PrefixIndex())
        await sub.start()
        sub._tasks.append(asyncio.create_task(stubborn()))
        await asyncio.sleep(0)
        close = asyncio.create_task(sub.close())
        done, _ = await asyncio.wait({close}, timeout=10)
        return close in done and not sub.running

    assert asyncio.run(main())
    assert swallowed == [True]
