"""The live feed: replicas' KV events from their ZMQ publishers into an index.

:class:`~._feed.ReplicaFeed` is one publisher's sequencing, bounds, replay
bookkeeping and decoding, sans-IO (bytes in, what to do out);
:class:`~._driver.FeedDriver` carries its answers out on the index (lock,
retries, ``on_batch``, logging). Both transports share them:
:class:`Subscriber` (threads) and :class:`AsyncSubscriber` (asyncio), configured
by one :class:`SubscriberOptions`. A replica's scheme is learned from its events
when none is configured (:mod:`._learning`); :class:`LoRAPaths` follows its
adapters. The transports need pyzmq (extra ``zmq``) and load on first use of
their names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._endpoints import ReceivedBatch, ReplicaEndpoint, data_parallel_endpoints, offset_endpoint
from ._fair_lock import FairLock
from ._learning import AmbiguousSchemeWarning, FleetWarning, SchemeNotLearnedWarning
from ._lora import LoRAPathChangedWarning, LoRAPaths, LoRAPollError, fetch_lora_paths
from ._options import SubscriberOptions

if TYPE_CHECKING:
    from ._async_subscriber import AsyncSubscriber
    from ._subscriber import Subscriber, SubscriberStateError

#: The names that need pyzmq, and their modules: imported on first use.
_LAZY = {
    "AsyncSubscriber": "_async_subscriber",
    "Subscriber": "_subscriber",
    "SubscriberStateError": "_subscriber",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        from ..._extras import needs_extra

        with needs_extra("zmq", f"prefixkey.fleet.{name}"):
            return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "AmbiguousSchemeWarning",
    "AsyncSubscriber",
    "FairLock",
    "FleetWarning",
    "LoRAPathChangedWarning",
    "LoRAPaths",
    "LoRAPollError",
    "ReceivedBatch",
    "ReplicaEndpoint",
    "SchemeNotLearnedWarning",
    "Subscriber",
    "SubscriberOptions",
    "SubscriberStateError",
    "data_parallel_endpoints",
    "fetch_lora_paths",
    "offset_endpoint",
]
