"""The ZMQ subscriber against real sockets on loopback (tcp://127.0.0.1, random ports).

Test publishers behave like vLLM's ZmqEventPublisher: a PUB socket sending
``[topic, seq, payload]`` and a ROUTER replay socket answering in the release's
framing. Every wait polls the subscriber's stats with a bounded timeout; the
slow-joiner problem is handled by re-sending the first message until the
subscriber has it (the re-sends are counted duplicates).
"""

from __future__ import annotations

import io
import json
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import msgpack
import pytest

zmq = pytest.importorskip("zmq", reason="needs pyzmq: pip install -e '.[test]' (or the zmq extra)")

from fake_publisher import FakePublisher  # noqa: E402
from subscribers import AnySubscriber  # noqa: E402

from prefixkey import Hasher, Request  # noqa: E402
from prefixkey.cli import main  # noqa: E402
from prefixkey.events import (  # noqa: E402
    AllBlocksCleared,
    BlockRemoved,
    BlockStored,
    EventDecoder,
    KVCacheEvent,
    StreamSequence,
    decode_recording,
    parse_recording_line,
    recording_line,
    wire_era,
)
from prefixkey.fleet import (  # noqa: E402
    PrefixIndex,
    ReceivedBatch,
    ReplicaEndpoint,
    ReplicaScheme,
    Router,
    Subscriber,
    data_parallel_endpoints,
    offset_endpoint,
    prometheus_text,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "events"
TIMEOUT = 8.0
BLOCK = 16


# ----------------------------------------------------------------------------- helpers


def encode_batch(version: str, ts: float, events: Sequence[KVCacheEvent], rank: int = 0) -> bytes:
    """A KVEventBatch payload in the release's wire layout (as msgspec writes it)."""
    era, _ = wire_era(version)
    out: list[Any] = []
    for ev in events:
        tag = type(ev).__name__
        if isinstance(ev, BlockStored):
            names, required = era.block_stored_fields, era.block_stored_required
        elif isinstance(ev, BlockRemoved):
            names, required = era.block_removed_fields, era.block_removed_required
        else:
            names, required = (), 0
        values = [(n, getattr(ev, n)) for n in names]
        if era.event_encoding == "array":
            out.append([tag, *(v for _, v in values)])
        else:
            out.append({"type": tag, **{n: v for i, (n, v) in enumerate(values)
                                       if i < required or v is not None}})
    batch = [ts, out, rank] if era.batch_has_dp_rank else [ts, out]
    return bytes(msgpack.packb(batch, use_bin_type=True))


@pytest.fixture
def publishers(ctx: Any) -> Iterator[list[FakePublisher]]:
    made: list[FakePublisher] = []
    yield made
    for p in made:
        p.close()


def wait(sub: AnySubscriber, predicate: Callable[[Mapping[str, Any]], bool], what: str) -> None:
    assert sub.wait_until(predicate, TIMEOUT), f"timed out waiting for {what}: {sub.stats()}"


def count(sub: AnySubscriber, replica: str, key: str) -> int:
    return int(cast("Mapping[str, Any]", sub.stats()["replicas"][replica])[key])


def hello(sub: AnySubscriber, pairs: Sequence[tuple[FakePublisher, str, list[bytes]]],
          key: str = "batches", at_least: int = 1) -> None:
    """Re-send each publisher's message until the subscriber counted it (slow joiner)."""
    deadline = time.monotonic() + TIMEOUT
    pending = list(pairs)
    while pending:
        assert time.monotonic() < deadline, f"hello timed out: {sub.stats()}"
        for pub, _, frames in pending:
            pub.send(frames)
        names = [n for _, n, _ in pending]
        def done(s: Mapping[str, Any], names: list[str] = names) -> bool:
            return all(s["replicas"][n][key] >= at_least for n in names)

        if sub.wait_until(done, 0.05):
            return
        stats = cast("Mapping[str, Mapping[str, int]]", sub.stats()["replicas"])
        pending = [p for p in pending if stats[p[1]][key] < at_least]


def hasher(version: str) -> Hasher:
    return Hasher(block_size=BLOCK, python_hash_seed="0", vllm_version=version)


def stored(scheme: ReplicaScheme, request: Request) -> BlockStored:
    keys = tuple(map(scheme.publish, scheme.hasher.block_hashes(request)))
    return BlockStored(keys, None, tuple(request.token_ids), BLOCK, medium="GPU",
                       group_idx=0)


# ----------------------------------------------------------------------------- tests


def test_route_follow_evictions_and_clears_across_replicas(
    ctx: Any, publishers: list[FakePublisher], make: Callable[..., AnySubscriber]
) -> None:
    versions = {"a": "0.31.0", "b": "0.24.0", "c": "0.22.0"}
    pubs = {name: FakePublisher(ctx, v, topic="kv" if name == "a" else "")
            for name, v in versions.items()}
    publishers.extend(pubs.values())
    index = PrefixIndex()
    schemes = {name: ReplicaScheme(hasher(v)) for name, v in versions.items()}
    replicas = [ReplicaEndpoint(n, pubs[n].endpoint, versions[n], topic=pubs[n].topic.decode(),
                                scheme=schemes[n]) for n in versions]
    system = list(range(1000, 1000 + 4 * BLOCK))
    r1 = Request([*system, *range(1, 33), 5])
    r2 = Request([*range(7000, 7064), 9])
    router = Router(index)

    def best(request: Request) -> tuple[str, int]:
        with sub.lock:
            top = router.route(request)[0]
        return top.replica.name, top.hit_tokens

    with make(replicas, index=index, context=ctx) as sub:
        def pub(name: str, *events: KVCacheEvent) -> list[bytes]:
            return pubs[name].publish(encode_batch(versions[name], time.time(), events),
                                      send=False)

        hello(sub, [(pubs["a"], "a", pub("a", stored(schemes["a"], r2))),
                    (pubs["b"], "b", pub("b", stored(schemes["b"], r1))),
                    (pubs["c"], "c", pub("c"))])
        assert best(r1) == ("b", 6 * BLOCK)
        assert best(r2) == ("a", 4 * BLOCK)

        # b evicts r1's last two blocks; c caches r1 entirely: c now holds more.
        b_keys = stored(schemes["b"], r1).block_hashes
        pubs["b"].send(pub("b", BlockRemoved(b_keys[-2:], medium="GPU", group_idx=0)))
        pubs["c"].send(pub("c", stored(schemes["c"], r1)))
        wait(sub, lambda s: s["replicas"]["b"]["batches"] == 2
             and s["replicas"]["c"]["batches"] == 2, "eviction and store")
        assert best(r1) == ("c", 6 * BLOCK)
        with sub.lock:
            hits = {d.replica.name: d.hit_tokens for d in router.route(r1)}
        assert hits["b"] == 4 * BLOCK

        # c clears its cache: b is best for r1 again.
        pubs["c"].send(pub("c", AllBlocksCleared()))
        wait(sub, lambda s: s["replicas"]["c"]["batches"] == 3, "clear")
        stats = sub.stats()
        assert stats["replicas"]["c"]["index_size"] == 0
        assert best(r1) == ("b", 4 * BLOCK)
        assert stats["totals"]["decode_errors"] == stats["totals"]["gaps"] == 0
        assert stats["totals"]["batches"] == 6
        assert stats["replicas"]["b"]["index_size"] == 4


def test_publisher_restart_is_a_new_epoch(
    ctx: Any, publishers: list[FakePublisher], make: Callable[..., AnySubscriber]
) -> None:
    scheme = ReplicaScheme(hasher("0.31.0"))
    index = PrefixIndex()
    pub = FakePublisher(ctx, "0.31.0")
    publishers.append(pub)
    r_old, r_new = Request(list(range(100, 164))), Request(list(range(500, 564)))
    endpoint = ReplicaEndpoint("a", pub.endpoint, "0.31.0", scheme=scheme)
    with make([endpoint], index=index, context=ctx) as sub:
        hello(sub, [(pub, "a", pub.publish(encode_batch("0.31.0", 1.0, [
            stored(scheme, r_old)]), send=False))])
        pub.publish(encode_batch("0.31.0", 2.0, [stored(scheme, Request(list(range(32))))]))
        wait(sub, lambda s: s["replicas"]["a"]["batches"] == 2, "two batches")
        assert sub.stats()["replicas"]["a"]["index_size"] == 6
        # The publisher process restarts: a new socket on the same port, seq from 0.
        pub.close()
        publishers.remove(pub)
        pub2 = FakePublisher(ctx, "0.31.0", port=pub.port)
        publishers.append(pub2)
        hello(sub, [(pub2, "a", pub2.publish(encode_batch("0.31.0", 3.0, [
            stored(scheme, r_new)]), send=False))], key="restarts")
        wait(sub, lambda s: s["replicas"]["a"]["batches"] == 3, "the new epoch's batch")
        a = sub.stats()["replicas"]["a"]
        assert a["restarts"] == 1 and a["epochs"] == 1
        assert a["cleared_entries"] == 6
        assert a["index_size"] == 4  # only the new epoch's blocks
        with sub.lock:
            decision = Router(index).route(r_old)[0]
        assert decision.hit_tokens == 0


@pytest.mark.parametrize("version", ["0.24.0", "0.31.0"])  # replies without / with the topic
def test_gap_recovered_by_replay(
    ctx: Any, publishers: list[FakePublisher], make: Callable[..., AnySubscriber], version: str
) -> None:
    pub = FakePublisher(ctx, version, topic="kv", replay=True)
    publishers.append(pub)
    scheme = ReplicaScheme(hasher(version))
    index = PrefixIndex()
    seen: list[tuple[int, str]] = []
    endpoint = ReplicaEndpoint("a", pub.endpoint, version, replay_endpoint=pub.replay_endpoint,
                               topic="kv", scheme=scheme)
    lost = Request(list(range(300, 332)))
    record = io.StringIO()
    with make([endpoint], index=index, context=ctx, record=record,
              on_batch=lambda rb: seen.append((rb.seq, rb.via))) as sub:
        hello(sub, [(pub, "a", pub.publish(encode_batch(version, 1.0, []), send=False))])
        pub.publish(encode_batch(version, 2.0, [stored(scheme, lost)]), send=False)  # dropped
        pub.publish(encode_batch(version, 3.0, [AllBlocksCleared()][:0]))
        wait(sub, lambda s: s["replicas"]["a"]["batches"] == 3, "the recovered batch")
        a = sub.stats()["replicas"]["a"]
        assert (a["gaps"], a["missing_batches"], a["replay_requests"], a["replay_completed"],
                a["replayed_batches"], a["lost_batches"]) == (1, 1, 1, 1, 1, 0)
        assert a["index_size"] == 2
        assert pub.replay_requests == [1]
    assert [s for s, _ in seen if s > 0] == [1, 2]
    assert (1, "replay") in seen and (2, "pub") in seen
    # The recording holds the PUB messages and every replay reply: seq 1, seq 2 (buffered
    # too, not missing) and the end marker.
    vias = [json.loads(line)["via"] for line in record.getvalue().splitlines()]
    assert vias.count("replay") == 3 and vias.count("pub") >= 2


def test_late_join_catches_up_through_replay(
    ctx: Any, publishers: list[FakePublisher], make: Callable[..., AnySubscriber]
) -> None:
    pub = FakePublisher(ctx, "0.31.0", replay=True)
    publishers.append(pub)
    for i in range(3):  # published before anyone subscribed
        pub.publish(encode_batch("0.31.0", float(i), [
            BlockStored((i,), None, tuple(range(BLOCK)), BLOCK, medium="GPU")]), send=False)
    index = PrefixIndex()
    endpoint = ReplicaEndpoint("a", pub.endpoint, "0.31.0", replay_endpoint=pub.replay_endpoint,
                               scheme=ReplicaScheme(hasher("0.31.0")))
    with make([endpoint], index=index, context=ctx) as sub:
        hello(sub, [(pub, "a", pub.publish(encode_batch("0.31.0", 3.0, []), send=False))])
        wait(sub, lambda s: s["replicas"]["a"]["batches"] == 4, "history")
        a = sub.stats()["replicas"]["a"]
        assert a["late_joins"] == 1 and a["replayed_batches"] == 3 and a["gaps"] == 0
        assert a["index_size"] == 3


def test_garbage_is_counted_and_the_next_batch_applies(
    ctx: Any, publishers: list[FakePublisher], make: Callable[..., AnySubscriber]
) -> None:
    pub = FakePublisher(ctx, "0.31.0")
    publishers.append(pub)
    index = PrefixIndex()
    scheme = ReplicaScheme(hasher("0.31.0"))
    endpoint = ReplicaEndpoint("a", pub.endpoint, "0.31.0", scheme=scheme)
    good = encode_batch("0.31.0", 1.0, [BlockStored((1, 2), None, tuple(range(32)), BLOCK,
                                                    medium="GPU")])
    with make([endpoint], index=index, context=ctx) as sub:
        first = pub.publish(good, send=False)
        hello(sub, [(pub, "a", first)])
        pub.send(first)  # a duplicate by seq and payload: skipped
        pub.publish(good[:-7])  # truncated msgpack
        wrong = msgpack.unpackb(good)
        wrong[1][0]["block_hashes"] = "not a list"  # wrong type
        pub.publish(msgpack.packb(wrong))
        pub.publish(msgpack.packb([1.0, [{"type": "BlockExploded"}], 0]))
        pub.publish(b"\xc1")  # never-used msgpack byte
        pub.send([b"", b"\x00" * 3, b"payload"])  # bad seq frame
        pub.send([b"only-one-frame"])
        pub.publish(encode_batch("0.31.0", 2.0, [BlockRemoved((1,), medium="GPU")]))
        wait(sub, lambda s: s["replicas"]["a"]["batches"] == 2, "the good batch")
        wait(sub, lambda s: s["replicas"]["a"]["duplicates"] >= 1, "the duplicate")
        a = sub.stats()["replicas"]["a"]
        assert a["decode_errors"] == 4
        assert a["decode_errors_by_type"] == {
            "MalformedPayloadError": 2, "EventFieldError": 1, "UnknownEventTypeError": 1}
        assert a["framing_errors"] == 2
        assert a["gaps"] == 0 and a["restarts"] == 0
        with sub.lock:
            assert dict(index.table("a")) == {2: 1}
        assert sub.running


def test_full_queue_drops_are_counted_and_replayed(
    ctx: Any, publishers: list[FakePublisher]
) -> None:
    # Threaded only: a callback that blocks stalls the whole event loop of the asyncio
    # subscriber, its receiver included, so its queue cannot fill this way.
    pub = FakePublisher(ctx, "0.31.0", replay=True)
    publishers.append(pub)
    entered, release = threading.Event(), threading.Event()
    order: list[int] = []

    def on_batch(rb: ReceivedBatch) -> None:
        order.append(rb.seq)
        if rb.seq == 1:
            entered.set()
            release.wait(TIMEOUT)

    endpoint = ReplicaEndpoint("a", pub.endpoint, "0.31.0", replay_endpoint=pub.replay_endpoint)
    batch = encode_batch("0.31.0", 1.0, [])
    with Subscriber([endpoint], on_batch=on_batch, queue_size=2, context=ctx) as sub:
        hello(sub, [(pub, "a", pub.publish(batch, send=False))])
        pub.publish(encode_batch("0.31.0", 1.5, []))
        assert entered.wait(TIMEOUT)
        for i in range(4):  # seq 2, 3 are queued; 4, 5 are dropped
            pub.publish(encode_batch("0.31.0", 2.0 + i, []))
        wait(sub, lambda s: s["replicas"]["a"]["dropped"] == 2, "two drops")
        release.set()
        # Seq 6 only once 2 and 3 left the queue: into a still-full queue it would be a
        # third drop, which no later batch's gap would reveal.
        wait(sub, lambda s: s["replicas"]["a"]["batches"] == 4, "the queued batches")
        pub.publish(encode_batch("0.31.0", 9.0, []))
        wait(sub, lambda s: s["replicas"]["a"]["batches"] == 7, "all seven batches")
        a = sub.stats()["replicas"]["a"]
        assert (a["dropped"], a["gaps"], a["replayed_batches"], a["lost_batches"]) == (2, 1, 2, 0)
    assert order == [0, 1, 2, 3, 4, 5, 6]


def test_every_fixture_era_over_real_sockets(
    ctx: Any, publishers: list[FakePublisher], make: Callable[..., AnySubscriber]
) -> None:
    fixtures = sorted(FIXTURES.glob("*.jsonl"))
    batches: dict[str, list[bytes]] = {}
    for path in fixtures:
        lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        batches[path.stem] = [bytes.fromhex(x["payload_hex"]) for x in lines]
    pubs = {v: FakePublisher(ctx, v) for v in batches}
    publishers.extend(pubs.values())
    expected_events = sum(len(EventDecoder(v).decode_batch(p).events)
                          for v, ps in batches.items() for p in ps)
    replicas = [ReplicaEndpoint(v, pubs[v].endpoint, v) for v in batches]
    with make(replicas, context=ctx) as sub:
        hello(sub, [(pubs[v], v, pubs[v].publish(ps[0], send=False))
                    for v, ps in batches.items()])
        for v, ps in batches.items():
            for payload in ps[1:]:
                pubs[v].publish(payload)
        wait(sub, lambda s: all(s["replicas"][v]["batches"] == len(ps)
                                for v, ps in batches.items()), "every fixture batch")
        totals = sub.stats()["totals"]
    assert len(batches) >= 13
    assert totals["events"] == expected_events
    assert totals["decode_errors"] == totals["gaps"] == totals["lost_batches"] == 0


def test_idle_replica_is_reported(
    ctx: Any, publishers: list[FakePublisher], make: Callable[..., AnySubscriber]
) -> None:
    pub = FakePublisher(ctx, "0.31.0")
    publishers.append(pub)
    with make([ReplicaEndpoint("quiet", pub.endpoint)], idle_timeout=0.2,
                    context=ctx) as sub:
        wait(sub, lambda s: s["replicas"]["quiet"]["idle"], "idle")
        assert count(sub, "quiet", "idle_periods") == 1
        assert "prefixkey_subscriber_idle{replica=\"quiet\"} 1" in sub.prometheus_text()


# ----------------------------------------------------------------------------- sans-IO parts


class _SlowRecording(io.StringIO):
    """A recording whose every write, once ``slow``, takes as long as a 30 MB message's."""

    def __init__(self) -> None:
        super().__init__()
        self.slow = False
        self.writing = threading.Event()

    def write(self, text: str) -> int:
        if self.slow:
            self.writing.set()
            time.sleep(0.2)
        return super().write(text)


def test_stop_does_not_wait_behind_queued_slow_messages(
    ctx: Any, publishers: list[FakePublisher]
) -> None:
    """``listen --record`` with huge messages: stop() ends the receiver after the message
    in hand (it used to drain up to 1,000 more, outlast the join and lose its sockets)."""
    pub = FakePublisher(ctx, "0.31.0")
    publishers.append(pub)
    record = _SlowRecording()
    endpoint = ReplicaEndpoint("a", pub.endpoint, "0.31.0",
                               scheme=ReplicaScheme(hasher("0.31.0")))
    sub = Subscriber([endpoint], index=PrefixIndex(), context=ctx, record=record).start()
    try:
        hello(sub, [(pub, "a", pub.publish(encode_batch("0.31.0", 1.0, []), send=False))])
        before = record.getvalue().count("\n")
        record.slow = True
        for i in range(100):  # 20 s of recording queued behind the first
            pub.publish(encode_batch("0.31.0", 2.0 + i, []))
        assert record.writing.wait(TIMEOUT)
        sub.stop()  # joins for up to 5 s
        assert not sub.running
        assert record.getvalue().count("\n") <= before + 2  # the message in hand, no more
    finally:
        record.slow = False
        sub.close()


def test_stream_sequence_rules() -> None:
    s = StreamSequence()
    assert s.observe(0, 10).kind == "first"
    assert s.observe(1, 11).kind == "next"
    assert s.observe(1, 11).kind == "duplicate"
    assert s.observe(4, 14) == ("gap", (2, 4))
    assert s.observe(3, 13).kind == "late"
    assert s.fill(2, 12) and not s.fill(2, 12)
    assert s.open_gaps() == ()
    assert s.observe(0, 99) == ("restart", None)
    assert s.epoch == 1 and s.expected == 1
    assert s.observe(5, 1).kind == "gap"
    assert s.observe(2, 7) == ("late", None)
    late = StreamSequence()
    assert late.observe(7, 0) == ("first", (0, 7))
    assert late.observe(3, 1).kind == "late"


def test_offset_endpoints_follow_vllm() -> None:
    assert offset_endpoint("tcp://*:5557", 2) == "tcp://*:5559"
    assert offset_endpoint("tcp://*:0", 2) == "tcp://*:0"
    assert offset_endpoint("inproc://cache", 1) == "inproc://cache_dp1"
    eps = data_parallel_endpoints("r", "tcp://h:5557", 2, replay_endpoint="tcp://h:6000")
    assert [(e.key, e.endpoint, e.replay_endpoint) for e in eps] == [
        ("r", "tcp://h:5557", "tcp://h:6000"), ("r#dp1", "tcp://h:5558", "tcp://h:6001")]


_SAMPLE = re.compile(
    r'^(prefixkey_[a-z_]+)(\{([a-z_]+="([^"\\]|\\.)*")(,[a-z_]+="([^"\\]|\\.)*")*\})? '
    r"(-?[0-9.e+-]+)$"
)


def test_prometheus_text_format() -> None:
    weird = 'we"ird\\name\nx'
    sub = Subscriber([ReplicaEndpoint(weird, "tcp://127.0.0.1:1"),
                      ReplicaEndpoint("b", "tcp://127.0.0.1:2")], index=PrefixIndex())
    stats = sub.stats()
    stats["replicas"]["b"]["decode_errors_by_type"] = {"MalformedPayloadError": 3}
    stats["replicas"]["b"]["batches"] = 7
    text = prometheus_text(stats)
    sub.close()
    assert text.endswith("\n")
    families: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            families.setdefault(line.split()[2], "")
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            assert kind in ("counter", "gauge")
            assert name in families and (kind == "gauge") != name.endswith("_total")
            families[name] = kind
        else:
            m = _SAMPLE.match(line)
            assert m, line
            assert m.group(1) in families
    assert 'prefixkey_subscriber_batches_total{replica="b"} 7' in text
    assert 'prefixkey_subscriber_batches_total{replica="we\\"ird\\\\name\\nx"} 0' in text
    assert ('prefixkey_subscriber_decode_errors_by_type_total{replica="b",'
            'error="MalformedPayloadError"} 3') in text
    assert "prefixkey_index_entries 0" in text
    for name in ("gaps", "replay_requests", "replayed_batches", "decode_errors", "dropped",
                 "duplicates", "restarts"):
        assert f"prefixkey_subscriber_{name}_total" in families


def test_recording_line_round_trips() -> None:
    frames = [b"kv", (5).to_bytes(8, "big"), b"\x92\x00\x90"]
    rec = parse_recording_line(recording_line(frames, recv_time=12.5, source="a"))
    assert (rec.recv_time, rec.source, rec.frames) == (12.5, "a", tuple(frames))


def test_subscriber_rejects_bad_configuration() -> None:
    from prefixkey.errors import PrefixKeyError

    with pytest.raises(PrefixKeyError):
        Subscriber([])
    with pytest.raises(PrefixKeyError):
        Subscriber([ReplicaEndpoint("a", "tcp://x:1"), ReplicaEndpoint("a", "tcp://x:2")])
    with pytest.raises(PrefixKeyError):
        Subscriber([ReplicaEndpoint("a", "tcp://x:1", "0.8.0")])


# ----------------------------------------------------------------------------- CLI


def test_cli_listen_records_a_loopback_publisher(
    ctx: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pub = FakePublisher(ctx, "0.31.0")
    stop = threading.Event()
    payload = encode_batch("0.31.0", 1.0, [BlockStored((7,), None, tuple(range(BLOCK)),
                                                       BLOCK, medium="GPU")])

    def run() -> None:
        while not stop.is_set():
            pub.publish(payload)
            stop.wait(0.01)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    record = tmp_path / "rec.jsonl"
    try:
        code = main(["listen", pub.endpoint, "--name", "gpu-a", "--vllm-version", "0.31.0",
                     "--duration", "1", "--record", str(record), "--json"])
    finally:
        stop.set()
        thread.join(2)
        pub.close()
    assert code == 0
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    final = out[-1]
    assert final["final"] is True
    assert final["replicas"]["gpu-a"]["batches"] >= 1
    assert final["replicas"]["gpu-a"]["index_size"] == 1
    assert final["replicas"]["gpu-a"]["errors"] == 0
    lines = record.read_text().splitlines()
    assert len(lines) >= final["replicas"]["gpu-a"]["batches"]
    decoded = list(decode_recording(lines, EventDecoder("0.31.0")))
    assert decoded and all("error" not in d and d["source"] == "gpu-a" for d in decoded)


def test_cli_listen_text_summary_and_bad_arguments(
    ctx: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["listen", "tcp://127.0.0.1:1", "tcp://127.0.0.1:2", "--name", "a"]) == 2
    assert main(["listen", "tcp://127.0.0.1:1", "--vllm-version", "0.1.0"]) == 2
    capsys.readouterr()
    assert main(["listen", "tcp://127.0.0.1:1", "--name", "a", "--duration", "0.2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("final [") and "a: batches=0" in out
