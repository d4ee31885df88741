"""``SubscriberOptions``: one record of the subscribers' options, and the old keywords.

The defaults, the checks (typed errors naming the option) and the meaning are
written once; ``Subscriber``, ``AsyncSubscriber`` and ``FeedSet`` take a record,
each option as a keyword over it, or both.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from prefixkey.errors import InvalidRequestError
from prefixkey.fleet import ReplicaEndpoint, SubscriberOptions
from prefixkey.fleet.feed._feed_set import FeedSet

ENDPOINTS = [ReplicaEndpoint("a", "tcp://127.0.0.1:1", "0.31.0")]


def test_the_defaults_are_the_documented_ones() -> None:
    opts = SubscriberOptions()
    assert (opts.queue_size, opts.queue_bytes, opts.replay_timeout, opts.idle_timeout,
            opts.restart_policy, opts.catch_up, opts.max_jump, opts.max_ranks,
            opts.learn_schemes, opts.retry_seconds) == (
        10_000, 64 * 1024 * 1024, 2.0, 30.0, "clear", True, 10_000, 8, True, 30.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.queue_size = 1  # type: ignore[misc]


@pytest.mark.parametrize(("name", "value"), [
    ("queue_size", 0), ("queue_bytes", 1.5), ("max_jump", True), ("max_ranks", -1),
    ("rcvhwm", -1), ("max_message_bytes", 0), ("reconnect_ivl_ms", "100"),
    ("replay_timeout", 0), ("idle_timeout", float("inf")), ("retry_seconds", -1.0),
    ("retry_seconds", float("nan")), ("catch_up", 1), ("learn_schemes", None),
    ("restart_policy", "drop"),
])
def test_a_bad_value_is_refused_naming_the_option(name: str, value: Any) -> None:
    with pytest.raises(InvalidRequestError) as info:
        SubscriberOptions(**{name: value})
    assert info.value.field == name and str(info.value).startswith(f"{name}: ")
    with pytest.raises(InvalidRequestError) as again:
        SubscriberOptions().with_changes({name: value})
    assert again.value.field == name


def test_an_unknown_option_is_refused_naming_it() -> None:
    with pytest.raises(InvalidRequestError) as info:
        FeedSet(ENDPOINTS, index=None, queue_sise=10)
    assert info.value.field == "queue_sise" and "queue_size" in str(info.value)


def test_keywords_apply_over_a_record() -> None:
    base = SubscriberOptions(queue_size=5, max_ranks=2)
    feeds = FeedSet(ENDPOINTS, index=None, options=base, max_ranks=3, retry_seconds=1)
    assert feeds.options == SubscriberOptions(queue_size=5, max_ranks=3, retry_seconds=1.0)
    assert feeds.feeds[0].options is feeds.options
    assert feeds.driver.retry_seconds == 1.0
    with pytest.raises(InvalidRequestError) as info:
        FeedSet(ENDPOINTS, index=None, options={"queue_size": 5})  # type: ignore[arg-type]
    assert info.value.field == "options"


def test_the_threaded_subscriber_takes_the_old_keywords_and_a_record() -> None:
    pytest.importorskip("zmq")
    from prefixkey.fleet import Subscriber

    sub = Subscriber(ENDPOINTS, queue_size=7, idle_timeout=0.5, rcvhwm=10)
    try:
        assert sub.options == SubscriberOptions(queue_size=7, idle_timeout=0.5, rcvhwm=10)
        assert sub.stats()["queue_capacity"] == 7
    finally:
        sub.close()
    sub = Subscriber(ENDPOINTS, options=SubscriberOptions(max_jump=3))
    try:
        assert sub.options.max_jump == 3
    finally:
        sub.close()
    with pytest.raises(InvalidRequestError) as info:
        Subscriber(ENDPOINTS, queue_bytes=0)
    assert info.value.field == "queue_bytes"


def test_the_asyncio_subscriber_takes_the_same() -> None:
    pytest.importorskip("zmq")
    from prefixkey.fleet import AsyncSubscriber

    async def main() -> SubscriberOptions:
        sub = AsyncSubscriber(ENDPOINTS, queue_size=7, options=SubscriberOptions(max_ranks=2))
        await sub.close()
        return sub.options

    assert asyncio.run(main()) == SubscriberOptions(queue_size=7, max_ranks=2)
    with pytest.raises(InvalidRequestError) as info:
        AsyncSubscriber(ENDPOINTS, restart_policy="never")
    assert info.value.field == "restart_policy"
