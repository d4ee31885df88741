"""The subscriber's per-message cost over the floor, and apply under a spinning reader.

Run from the repository root:

    python benchmarks/bench_subscriber_feed.py            # writes benchmarks/SUBSCRIBER.md
    python benchmarks/bench_subscriber_feed.py --quick

Two measurements, in one process, on the same vLLM 0.31.0 payloads (each one
BlockStored of 4 blocks x 16 tokens, int hashes, as msgspec writes them):

* **feed / floor**: the per-message work of both subscribers without sockets
  (``ReplicaFeed.admit``, ``taken``, ``accept``: framing and sequencing, then
  ``apply``: rank bound and ``PrefixIndex.ingest``, decode and apply in one
  step, under the fair lock), against the floor ``EventDecoder.decode`` +
  ``PrefixIndex.apply`` with no lock and no sequencing, and against
  ``PrefixIndex.ingest`` alone. The ratio is what isolation and bookkeeping
  cost, less what ingesting saves.
* **starvation**: a reader thread ranks in a loop under the index lock while
  the main thread ingests the payloads as the feed does (each decoded outside
  the lock, then applied under it: the lock taken in ``ingest``'s replica
  function), for a fixed time;
  the batches applied per second with ``threading.RLock`` and with
  :class:`~prefixkey.fleet.FairLock`, and the reader's rankings per second.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from prefixkey import Hasher, Request  # noqa: E402
from prefixkey.events import (  # noqa: E402
    BlockStored,
    EventBatch,
    EventDecoder,
    encode_batch,
    seq_frame,
)
from prefixkey.fleet import (  # noqa: E402
    FairLock,
    PrefixIndex,
    ReplicaEndpoint,
    ReplicaId,
    ReplicaScheme,
    Router,
)
from prefixkey.fleet.feed._feed_set import FeedSet  # noqa: E402

VERSION = "0.31.0"
BLOCK = 16


def payloads(n: int, scheme: ReplicaScheme) -> list[bytes]:
    out = []
    for i in range(n):
        tokens = list(range(i * 4 * BLOCK, (i + 1) * 4 * BLOCK))
        keys = tuple(map(scheme.publish, scheme.hasher.block_hashes(tokens)))
        event = BlockStored(keys, None, tuple(tokens), BLOCK, medium="GPU", group_idx=0)
        out.append(encode_batch(EventBatch(float(i), (event,), 0), VERSION))
    return out


def time_floor(data: list[bytes], scheme: ReplicaScheme, *, ingest: bool = False) -> float:
    """Seconds per message of decode + ``PrefixIndex.apply`` (or ``ingest``), no sockets."""
    decoder = EventDecoder(VERSION)
    index = PrefixIndex()
    rid = ReplicaId("a")
    index.register(rid, scheme)
    start = time.perf_counter()
    if ingest:
        for payload in data:
            index.ingest(rid, decoder, payload)
    else:
        for payload in data:
            index.apply(rid, decoder.decode(payload).batch)
    return (time.perf_counter() - start) / len(data)


def time_feed(data: list[bytes], scheme: ReplicaScheme) -> float:
    index = PrefixIndex()
    feeds = FeedSet([ReplicaEndpoint("a", "tcp://127.0.0.1:1", VERSION, scheme=scheme)],
                    index=index, on_batch=None, queue_size=10_000, queue_bytes=1 << 30,
                    restart_policy="clear", catch_up=True, max_jump=10_000, max_ranks=8,
                    learn_schemes=True)
    feed = feeds.feeds[0]
    frames = [[b"", seq_frame(i), p] for i, p in enumerate(data)]
    start = time.perf_counter()
    for message in frames:
        size = feed.admit(message)
        assert size is not None
        feed.taken(size)
        accepted = feed.accept(message, 0.0)
        assert accepted is not None and accepted.replay is None
        feed.apply(accepted.topic, accepted.seq, accepted.payload, "pub", 0.0)
    elapsed = (time.perf_counter() - start) / len(data)
    assert feed.counters["batches"] == len(data) and len(index) == 4 * len(data)
    return elapsed


def starvation(data: list[bytes], scheme: ReplicaScheme, lock: Any,
               seconds: float) -> tuple[float, float]:
    """(batches applied per second, rankings per second) with a reader spinning on ``lock``."""
    decoder = EventDecoder(VERSION)
    index = PrefixIndex()
    rid = ReplicaId("a")
    index.register(rid, scheme)
    router = Router(index)
    request = Request(list(range(64 * BLOCK)))
    stop = threading.Event()
    reads = 0

    def spin() -> None:
        nonlocal reads
        while not stop.is_set():
            with lock:
                router.route(request)
                reads += 1

    reader = threading.Thread(target=spin, daemon=True)
    reader.start()
    applied = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline and applied < len(data):
        def locked(rank: int | None) -> ReplicaId:
            lock.acquire()  # decoded: applied under the lock from here
            return rid

        try:
            index.ingest(locked, decoder, data[applied])
        finally:
            lock.release()
        applied += 1
    elapsed = time.perf_counter() - start
    stop.set()
    reader.join()
    return applied / elapsed, reads / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "SUBSCRIBER.md")
    args = parser.parse_args()
    n, rounds, seconds = (2_000, 3, 2.0) if args.quick else (10_000, 7, 5.0)
    scheme = ReplicaScheme(Hasher(block_size=BLOCK, python_hash_seed="0",
                                  vllm_version=VERSION))
    data = payloads(n, scheme)
    floors, ingests, feeds = [], [], []
    for _ in range(rounds):  # interleaved, so load drifts hit all alike
        floors.append(time_floor(data, scheme))
        ingests.append(time_floor(data, scheme, ingest=True))
        feeds.append(time_feed(data, scheme))
    floor, ingest = statistics.median(floors), statistics.median(ingests)
    feed = statistics.median(feeds)
    rlock = starvation(data * 50, scheme, threading.RLock(), seconds)
    fair = starvation(data * 50, scheme, FairLock(), seconds)
    lines = [
        "# Subscriber feed",
        "",
        f"`python benchmarks/bench_subscriber_feed.py{' --quick' if args.quick else ''}` on "
        f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. {n:,} vLLM {VERSION} payloads "
        "(one BlockStored of 4 blocks x 16 tokens each), medians of "
        f"{rounds} interleaved rounds. Numbers on a shared, loaded machine are noisy.",
        "",
        "| per message | µs | ratio |",
        "|---|---:|---:|",
        f"| floor: decode + PrefixIndex.apply | {floor * 1e6:.1f} | 1.00 |",
        f"| PrefixIndex.ingest (decode + apply in one step) | {ingest * 1e6:.1f} | "
        f"{ingest / floor:.2f} |",
        f"| feed: admit + accept + apply (ingest, fair lock) | {feed * 1e6:.1f} | "
        f"{feed / floor:.2f} |",
        "",
        f"A reader ranking a 64-block request in a loop under the lock while batches are "
        f"applied under it, for {seconds:.0f} s:",
        "",
        "| lock | batches applied / s | rankings / s |",
        "|---|---:|---:|",
        f"| threading.RLock | {rlock[0]:,.0f} | {rlock[1]:,.0f} |",
        f"| FairLock | {fair[0]:,.0f} | {fair[1]:,.0f} |",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
