"""The sans-IO feed alone: bytes in, what to do out (no sockets, no threads, no index).

A :class:`ReplicaFeed` has no index to touch, no lock to take and no logger:
it answers an :class:`Accepted` (with the replay range and the
:class:`Restart` to carry out first), an :class:`Apply` (the replica, the ops
every backend takes, the scheme to register) or None, counts, and notes what
a transport would log. :class:`FeedDriver` carries the answers out; its retry
of an unavailable index is tested here with a backoff that does not sleep.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from prefixkey import Hasher
from prefixkey.events import (
    END_SEQ,
    BlockStored,
    DecodedOps,
    EventBatch,
    EventDecoder,
    encode_batch,
    seq_frame,
)
from prefixkey.fleet import (
    IndexUnavailableError,
    PrefixIndex,
    ReplicaEndpoint,
    ReplicaId,
    ReplicaScheme,
    SubscriberOptions,
)
from prefixkey.fleet.feed._feed import Accepted, Apply, ReplicaFeed, Restart
from prefixkey.fleet.feed._feed_set import FeedSet

V = "0.31.0"
BLOCK = 4
SCHEME = ReplicaScheme(Hasher(block_size=BLOCK, vllm_version=V, python_hash_seed="0"))


def stored(i: int) -> BlockStored:
    tokens = tuple(range(i * BLOCK, (i + 1) * BLOCK))
    keys = tuple(map(SCHEME.publish, SCHEME.hasher.block_hashes(list(tokens))))
    return BlockStored(keys, None, tokens, BLOCK, medium="GPU", group_idx=0)


def payload(i: int, rank: int | None = 0) -> bytes:
    return encode_batch(EventBatch(float(i), (stored(i),), rank), V)


def message(seq: int, rank: int | None = 0, i: int | None = None) -> list[bytes]:
    """The PUB message of seq ``seq``, carrying ``payload(i)`` (default: ``seq``)."""
    return [b"kv", seq_frame(seq), payload(seq if i is None else i, rank)]


def feed(**changes: Any) -> ReplicaFeed:
    endpoint = ReplicaEndpoint("a", "tcp://127.0.0.1:1", V, scheme=SCHEME,
                               replay_endpoint="tcp://127.0.0.1:2")
    return ReplicaFeed(endpoint, SubscriberOptions().with_changes(changes))


@pytest.fixture(autouse=True)
def _silent(caplog: pytest.LogCaptureFixture) -> Any:
    """The feed logs nothing itself: whatever it would say waits in ``notes``."""
    caplog.set_level(logging.DEBUG, logger="prefixkey")
    yield
    assert caplog.get_records("call") == []


def test_a_message_in_order_is_an_apply_of_its_ops() -> None:
    f = feed()
    accepted = f.accept(message(0), 5.0)
    assert accepted == Accepted("kv", 0, payload(0), 5.0, None, None)
    todo = f.plan(accepted.topic, accepted.seq, accepted.payload, "pub", 5.0)
    assert todo == Apply("kv", 0, "pub", 5.0, ReplicaId("a", 0),
                         EventDecoder(V).ops(payload(0)), None, SCHEME, False)
    assert f.counters["batches"] == 0  # counted once carried out
    f.applied(todo)
    assert f.counters["batches"] == 1 and f.counters["events"] == 1
    assert not f.notes


def test_the_event_objects_are_built_only_when_wanted() -> None:
    f = feed()
    f.wants_batch = True
    todo = f.plan("kv", 0, payload(0), "pub", 0.0)
    assert todo is not None and todo.batch == EventBatch(0.0, (stored(0),), 0)
    assert todo.decoded == DecodedOps.of_batch(todo.batch) == EventDecoder(V).ops(payload(0))


def test_a_gap_answers_the_range_to_replay() -> None:
    f = feed()
    f.accept(message(0), 0.0)
    accepted = f.accept(message(3), 0.0)
    assert accepted is not None and accepted.replay == (1, 3) and accepted.restart is None
    assert (f.counters["gaps"], f.counters["missing_batches"],
            f.counters["replay_requests"]) == (1, 2, 1)
    assert [(level, text % args) for level, text, args in f.notes] == [
        (logging.WARNING, "gap, seq 1-2 missing")]


def test_a_replay_exchange_answers_applies_and_its_end() -> None:
    f = feed()
    f.accept(message(0), 0.0)
    accepted = f.accept(message(3), 0.0)
    assert accepted is not None
    exchange = f.replay_exchange(accepted)
    todo = f.on_reply(exchange, [b"", b"kv", seq_frame(1), payload(1)], 1.0)
    assert todo is not None and todo.via == "replay" and todo.seq == 1
    exchange.recovered += 1  # what the driver does once applied
    assert f.on_reply(exchange, [b"", b"kv", seq_frame(9), payload(9)], 1.0) is None  # outside
    assert f.on_reply(exchange, [b"", b"", END_SEQ, b""], 1.0) is None and exchange.ended
    f.replay_finished(exchange)
    assert (f.counters["replay_completed"], f.counters["replayed_batches"],
            f.counters["lost_batches"]) == (1, 1, 1)


def test_a_publisher_restart_answers_the_ranks_to_clear() -> None:
    f = feed()
    for seq in range(3):
        accepted = f.accept(message(seq), 0.0)
        assert accepted is not None
        assert f.plan(accepted.topic, seq, accepted.payload, "pub", 0.0) is not None
    accepted = f.accept(message(0, i=99), 0.0)  # another batch at seq 0: a new process
    assert accepted is not None
    assert accepted.restart == Restart("kv", "seq back to 0", (0,), True, None)
    assert f.counters["restarts"] == 1 and f.ranks == {}
    f.restarted(accepted.restart, 7, False)
    assert f.counters["cleared_entries"] == 7
    assert [text % args for _, text, args in f.notes] == [
        "publisher restarted (seq back to 0): new epoch, 7 entries cleared"]
    kept = feed(restart_policy="keep")
    kept.accept(message(0), 0.0)
    kept.accept(message(1), 0.0)
    again = kept.accept(message(0, i=99), 0.0)
    assert again is not None and again.restart is not None and not again.restart.clear


def test_duplicates_bad_framing_and_bad_payloads_are_counted_not_applied() -> None:
    f = feed()
    f.accept(message(0), 0.0)
    assert f.accept(message(0), 0.0) is None
    assert f.accept([b"kv", b"\x00"], 0.0) is None
    assert f.plan("kv", 1, payload(1)[:-1], "pub", 0.0) is None
    assert (f.counters["duplicates"], f.counters["framing_errors"],
            f.counters["decode_errors"]) == (1, 1, 1)
    assert dict(f.decode_errors_by_type) == {"MalformedPayloadError": 1}
    assert [level for level, _, _ in f.notes] == [logging.DEBUG, logging.WARNING,
                                                  logging.WARNING]


def test_ranks_past_max_ranks_are_not_applied() -> None:
    f = feed(max_ranks=1)
    assert f.plan("kv", 0, payload(0, rank=0), "pub", 0.0) is not None
    assert f.plan("kv", 1, payload(1, rank=1), "pub", 0.0) is None
    assert f.counters["rank_overflows"] == 1


def test_the_queue_bound_is_answered_not_logged() -> None:
    f = feed(queue_size=1)
    assert f.admit(message(0)) is not None
    assert f.admit(message(1)) is None and f.counters["dropped"] == 1
    assert [level for level, _, _ in f.notes] == [logging.WARNING]


def test_a_backlog_is_not_an_idle_period() -> None:
    # Issue 23: a replica heard from every second, whose worker ran 30 s behind, counted
    # an idle period (and a warning) per message taken, though it never fell silent.
    f = feed(idle_timeout=5.0, queue_size=100)
    for t in range(60):
        assert f.admit(message(t), 100.0 + t) is not None  # received at 100 + t
        if t >= 30:  # the worker takes the one received 30 s ago
            f.taken(sum(map(len, message(t - 30))))
            assert f.accept(message(t - 30), 100.0 + t - 30) is not None
        f.check_idle(100.0 + t + 0.5, 0.0)
    assert f.counters["idle_periods"] == 0
    idle = [f.idle]
    f.check_idle(200.0, 0.0)  # silence, truly
    idle.append(f.idle)
    f.admit(message(60), 201.0)  # heard from again (queued, not yet taken)
    f.check_idle(201.5, 0.0)
    idle.append(f.idle)
    assert idle == [False, True, False] and f.counters["idle_periods"] == 1


def test_learning_asks_for_the_events_and_answers_what_to_apply() -> None:
    endpoint = ReplicaEndpoint("a", "tcp://127.0.0.1:1", V)
    f = ReplicaFeed(endpoint, SubscriberOptions())
    todo = f.plan("kv", 0, payload(0), "pub", 0.0)
    assert todo is not None and todo.learn and todo.batch is not None and todo.scheme is None
    batches, scheme = f.learned(todo)
    assert scheme is not None and scheme.key == SCHEME.key
    assert batches == [(ReplicaId("a", 0), todo.decoded)]
    after = f.plan("kv", 1, payload(1), "pub", 0.0)
    assert after is not None and not after.learn and after.batch is None
    assert after.scheme is scheme


# -- the driver: the effects, without threads -------------------------------------------


class Flaky(PrefixIndex):
    """Unavailable for its first ``failures`` applies."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    def apply_ops(self, replica: ReplicaId | str, decoded: DecodedOps) -> None:
        if self.failures:
            self.failures -= 1
            raise IndexUnavailableError("down")
        super().apply_ops(replica, decoded)


@pytest.mark.parametrize("failures", [0, 2, 5])
def test_the_driver_retries_an_unavailable_index_with_backoff(
        failures: int, caplog: pytest.LogCaptureFixture) -> None:
    index = Flaky(failures)
    waits: list[float] = []

    def backoff(delay: float) -> bool:  # no sleep: give up after three waits
        waits.append(delay)
        return len(waits) < 4

    endpoint = ReplicaEndpoint("a", "tcp://127.0.0.1:1", V, scheme=SCHEME)
    feeds = FeedSet([endpoint], index=index, backoff=backoff, retry_seconds=60)
    f, driver = feeds.feeds[0], feeds.driver
    accepted = driver.accept(f, message(0), 0.0)
    assert accepted is not None
    applied = driver.apply(f, accepted)
    assert applied == (failures < 4)
    assert waits == [0.05, 0.1, 0.2, 0.4][:min(failures, 4)]
    assert f.counters["apply_retries"] == min(failures, 3)
    assert f.counters["apply_errors"] == (failures >= 4)
    assert (len(index), f.counters["batches"]) == ((1, 1) if applied else (0, 0))
    assert not f.notes  # the driver logged them
    assert len(caplog.records) == (failures > 0) + (failures >= 4)  # sampled: 1st retry
    caplog.clear()
