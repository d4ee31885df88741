"""``PrefixIndex.ingest``'s result and replica function, and the feed on ``ingest``.

``ingest`` returns what the subscriber's feed needs of a payload
(:class:`~prefixkey.fleet.Ingested`), takes the replica as a function of the
batch's rank, and builds the batch only when asked. The feed takes that path
for an in-memory index; fed the same messages, it must count, register,
apply and call back exactly as the decode + ``apply`` path it takes for any
other backend (here the same index behind a backend that is not a
``PrefixIndex``).
"""

from __future__ import annotations

from typing import Any, cast

import msgpack
import pytest

from prefixkey import Hasher
from prefixkey.events import (
    AllBlocksCleared,
    BlockRemoved,
    BlockStored,
    EventBatch,
    EventDecoder,
    EventFieldError,
    MalformedPayloadError,
    encode_batch,
    seq_frame,
)
from prefixkey.fleet import (
    FairLock,
    Ingested,
    PrefixIndex,
    PrefixIndexBackend,
    ReceivedBatch,
    ReplicaEndpoint,
    ReplicaId,
    ReplicaScheme,
)
from prefixkey.fleet.feed._feed_set import FeedSet

V = "0.31.0"
BLOCK = 4
SCHEME = ReplicaScheme(Hasher(block_size=BLOCK, vllm_version=V, python_hash_seed="0"))


def chain_start(i: int, scheme: ReplicaScheme = SCHEME) -> BlockStored:
    """A BlockStored of two blocks of their own, with the keys ``scheme`` computes."""
    tokens = tuple(range(i * 2 * BLOCK, (i + 1) * 2 * BLOCK))
    keys = tuple(map(scheme.publish, scheme.hasher.block_hashes(list(tokens))))
    return BlockStored(keys, None, tokens, BLOCK, medium="GPU", group_idx=0)


def payload(events: list[Any], rank: int | None = 0, ts: float = 1.0,
            version: str = V) -> bytes:
    return encode_batch(EventBatch(ts, tuple(events), rank), version)


# -- the result and the replica function ------------------------------------------------


def test_the_result_carries_the_warnings_rank_and_event_count() -> None:
    index, decoder = PrefixIndex(), EventDecoder(V)
    index.register(ReplicaId("a", 3), SCHEME)
    events = [chain_start(0), BlockRemoved(chain_start(0).block_hashes[1:], medium="GPU")]
    data = payload(events, rank=3)
    decoded = EventDecoder(V).decode(data)
    got = index.ingest("a", decoder, data)
    assert got == Ingested(decoded.warnings, 3, 2, None)
    assert got.batch is None  # not built unless asked for
    assert len(index) == 1 and index.stats()["events"] == 2


def test_the_batch_is_the_decoded_one_when_asked_for() -> None:
    index = PrefixIndex()
    index.register("a", SCHEME)
    data = payload([chain_start(1), AllBlocksCleared(), chain_start(2)])
    got = index.ingest("a", EventDecoder(V), data, batch=True)
    assert got.batch == EventDecoder(V).decode_batch(data)
    assert got.events == 3 and len(index) == 2


def test_an_ignored_field_is_a_warning_of_the_result() -> None:
    raw = msgpack.unpackb(payload([chain_start(0)]))
    raw[1][0]["from_the_future"] = 1
    data = msgpack.packb(raw)
    index = PrefixIndex()
    index.register("a", SCHEME)
    got = index.ingest("a", EventDecoder(V), data)
    assert got.warnings == EventDecoder(V).decode(data).warnings
    assert len(got.warnings) == 1 and "from_the_future" in got.warnings[0]


def test_the_replica_function_gets_the_published_rank() -> None:
    index = PrefixIndex()
    index.register(ReplicaId("a", 5), SCHEME)
    ranks: list[int | None] = []

    def to(rank: int | None) -> ReplicaId:
        ranks.append(rank)
        return ReplicaId("a", 5)

    index.ingest(to, EventDecoder(V), payload([chain_start(0)], rank=2))
    # 0.9.0 publishes no rank: the function gets None.
    old = ReplicaScheme(Hasher(block_size=BLOCK, vllm_version="0.9.0", python_hash_seed="0",
                                engine_python="3.12"))
    index.ingest(to, EventDecoder("0.9.0"),
                 payload([chain_start(1, old)], rank=None, version="0.9.0"))
    assert ranks == [2, None]
    assert index.replica_size(ReplicaId("a", 5)) == 4


def test_a_replica_function_returning_none_applies_and_counts_nothing() -> None:
    index = PrefixIndex()
    index.register("a", SCHEME)
    before = index.stats()
    got = index.ingest(lambda rank: None, EventDecoder(V), payload([chain_start(0)]))
    assert got == Ingested((), 0, 1, None)
    assert index.stats() == before and len(index) == 0


def test_a_payload_that_fails_calls_no_replica_function_and_applies_nothing() -> None:
    index = PrefixIndex()
    index.register("a", SCHEME)
    called: list[int | None] = []

    def to(rank: int | None) -> ReplicaId:
        called.append(rank)
        return ReplicaId("a")

    raw = msgpack.unpackb(payload([chain_start(0), chain_start(1)]))
    raw[1][1]["token_ids"][3] = True  # a bool token id
    with pytest.raises(EventFieldError) as info:
        index.ingest(to, EventDecoder(V), msgpack.packb(raw))
    assert info.value.field == "events[1].token_ids[3]"
    with pytest.raises(MalformedPayloadError):
        index.ingest(to, EventDecoder(V), payload([chain_start(0)])[:-1])
    assert called == [] and len(index) == 0 and index.stats()["batches"] == 0


# -- the feed: ingest for a PrefixIndex, decode + apply for any other backend -----------


class Elsewhere:
    """The same index behind a backend that is not a PrefixIndex: the feed applies to it."""

    def __init__(self, index: PrefixIndex) -> None:
        self._index = index

    def __getattr__(self, name: str) -> Any:
        if name == "ingest":
            raise AssertionError("a backend other than PrefixIndex is applied to")
        return getattr(self._index, name)


#: The batches of ``_stream`` that apply.
BATCHES = 37


def _stream() -> list[bytes]:
    """Chains on ranks 0-9 (max_ranks 8), an ignored field, a bool token id, removals,
    a clear, a truncated payload, more chains."""
    out = [payload([chain_start(i)], rank=i % 10, ts=float(i)) for i in range(12)]
    raw = msgpack.unpackb(payload([chain_start(20)], rank=1))
    raw[1][0]["from_the_future"] = "x"
    out.append(msgpack.packb(raw))
    raw = msgpack.unpackb(payload([chain_start(21)], rank=1))
    raw[1][0]["token_ids"][0] = False
    out.append(msgpack.packb(raw))
    out.append(payload([BlockRemoved(chain_start(1).block_hashes, medium="GPU")], rank=1))
    out.append(payload([AllBlocksCleared(), chain_start(22)], rank=2))
    out.append(payload([chain_start(23)], rank=3)[:-2])
    # Enough payloads for an inferred era to settle (SETTLE_PAYLOADS) and be ingested after.
    out += [payload([chain_start(30 + i)], rank=0) for i in range(24)]
    return out


def _run(index: PrefixIndexBackend, endpoint: ReplicaEndpoint,
         hook: bool) -> tuple[Any, ...]:
    received: list[ReceivedBatch] = []
    feeds = FeedSet([endpoint], index=index, on_batch=received.append if hook else None,
                    queue_size=100, queue_bytes=1 << 20, restart_policy="clear",
                    catch_up=True, max_jump=1000, max_ranks=8, learn_schemes=True)
    feed = feeds.feeds[0]
    for seq, data in enumerate(_stream()):
        accepted = feed.accept([b"", seq_frame(seq), data], 0.0)
        assert accepted is not None
        feed.apply(accepted.topic, accepted.seq, accepted.payload, "pub", 0.0)
    return (feed.counters, dict(feed.decode_errors_by_type), received)


def _state(index: PrefixIndex) -> tuple[Any, ...]:
    return (index.stats(), {rid: (scheme.key, list(index.entries(rid)))
                            for rid, scheme in index.replicas().items()})


@pytest.mark.filterwarnings("ignore::prefixkey.fleet.AmbiguousSchemeWarning")
@pytest.mark.parametrize("hook", [False, True], ids=["no hook", "on_batch"])
@pytest.mark.parametrize("how", ["scheme", "learned", "era inferred"])
def test_the_feed_ingests_as_it_decodes_and_applies(how: str, hook: bool) -> None:
    endpoint = ReplicaEndpoint("a", "tcp://127.0.0.1:1", None if how == "era inferred" else V,
                               scheme=SCHEME if how == "scheme" else None)
    ingested, applied = PrefixIndex(), PrefixIndex()
    applied.ingest = None  # type: ignore[assignment,method-assign]  # never called here
    slow: list[ReplicaId] = []
    apply = ingested.apply

    def counted(replica: ReplicaId | str, batch: EventBatch) -> None:
        slow.append(cast("ReplicaId", replica))
        apply(replica, batch)

    ingested.apply = counted  # type: ignore[method-assign]
    got = _run(ingested, endpoint, hook)
    # Configured, every batch is ingested; learning (or inferring the era), those up to the
    # scheme (or the era) are applied.
    assert len(slow) == 0 if how == "scheme" else 0 < len(slow) < BATCHES
    want = _run(cast("PrefixIndexBackend", Elsewhere(applied)), endpoint, hook)
    assert got == want
    assert _state(ingested) == _state(applied)
    counters, by_type, received = got
    assert counters["rank_overflows"] == 2 and counters["ignored_fields"] == 1
    assert by_type == {"EventFieldError": 1, "MalformedPayloadError": 1}
    assert counters["batches"] == BATCHES and len(received) == (BATCHES if hook else 0)
    assert len(ingested.replicas()) == 8  # each admitted rank registered (or learned)


class _Held(FairLock):
    """A FairLock that says how deep it is held (one thread here)."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        taken = super().acquire(blocking, timeout)
        self.depth += taken
        return taken

    def release(self) -> None:
        self.depth -= 1
        super().release()


def test_the_feed_decodes_outside_the_lock_and_applies_under_it() -> None:
    index = PrefixIndex()
    feeds = FeedSet([ReplicaEndpoint("a", "tcp://127.0.0.1:1", V, scheme=SCHEME)], index=index,
                    on_batch=None, queue_size=100, queue_bytes=1 << 20, restart_policy="clear",
                    catch_up=True, max_jump=1000, max_ranks=8, learn_schemes=True)
    lock = feeds.options.lock = _Held()
    feed = feeds.feeds[0]
    assert feed.decoder is not None
    seen: list[tuple[str, int]] = []
    ops, apply_ops = feed.decoder._ops, index._apply_ops

    def decoding(payload: bytes) -> Any:
        seen.append(("decode", lock.depth))
        return ops(payload)

    def applying(*args: Any) -> None:
        seen.append(("apply", lock.depth))
        apply_ops(*args)

    feed.decoder._ops = decoding  # type: ignore[method-assign]
    index._apply_ops = applying  # type: ignore[method-assign,assignment]
    for seq, data in enumerate([payload([chain_start(0)]), payload([chain_start(1)])[:-1],
                                payload([chain_start(2)], rank=9)]):
        feed.apply("", seq, data, "pub", 0.0)
    # The truncated payload fails to decode (no lock); rank 9 is a second rank, admitted.
    assert seen == [("decode", 0), ("apply", 1), ("decode", 0), ("decode", 0), ("apply", 1)]
    assert lock.depth == 0 and feed.counters["decode_errors"] == 1 and len(index) == 4
