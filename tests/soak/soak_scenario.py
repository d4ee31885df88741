"""The soak scenario: a healthy and a hostile replica on loopback, one subscriber.

The hostile replica (tests/soak/hostile_publisher.py, in a child process so
that its send buffers are not counted as the subscriber's) does, in a loop,
everything issue 13 probed: gaps whose replay endpoint never answers, floods of
large payloads, a seq of 2**62+5, invented data-parallel ranks and garbage. The
healthy replica publishes a steady stream of BlockStored batches, each a block
of its own.

:func:`run` returns what the subscriber reported (its counters, the largest
queue it held per replica, sampled throughout) and the process's resident set.
tests/soak/test_soak.py asserts on what the library controls: the healthy
replica loses nothing, every queue stays within its bounds, each fault is
counted. The resident set depends on the machine's load (libzmq's own receive
pipe holds frames while a thread is descheduled), so only
benchmarks/bench_soak_memory.py reports it, as a figure.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The loopback publisher and both subscribers (tests/), the end-to-end suite's helpers.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "end_to_end"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fake_publisher import FakePublisher
from hostile_publisher import BIG_KEYS, MEDIA_PER_ROUND
from subscribers import AnySubscriber
from test_subscriber import BLOCK, encode_batch, hasher, hello, stored

from prefixkey import Request
from prefixkey.events import DecodedOps
from prefixkey.fleet import (
    PrefixIndex,
    ReceivedBatch,
    ReplicaEndpoint,
    ReplicaId,
    ReplicaScheme,
    Router,
)
from prefixkey.fleet.index._ops import ops_keys

__all__ = ["BIG_KEYS", "BLOCK", "FLOOD_MESSAGES", "HOSTILE_FAULTS", "MEDIA_NAMES", "QUEUE_BYTES",
           "QUEUE_SIZE", "LedgerIndex", "SoakRun", "run"]

V = "0.31.0"
QUEUE_BYTES = 16 * 1024 * 1024
QUEUE_SIZE = 10_000
#: Messages of a ``flood`` run that must reach the subscriber (applied or dropped) before
#: it stops: more than one full queue.
FLOOD_MESSAGES = QUEUE_SIZE + 1
#: New medium names a ``media`` run must have applied before it stops (ten rounds).
MEDIA_NAMES = 10 * MEDIA_PER_ROUND
#: The hostile replica's faults, each of which must be counted before the run may end.
HOSTILE_FAULTS = ("decode_errors", "seq_jumps", "rank_overflows", "replay_requests")
#: How long a run may go past its budget waiting for every fault to be seen (a
#: loaded machine delays the hostile child), and for the healthy batches to settle.
#: Bounds on waiting for a condition, never on how fast it is met.
PATIENCE = 60.0


def rss() -> int:
    """This process's resident set, in bytes (Linux)."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status
                    if line.startswith("VmRSS:"))


class Hostile:
    """tests/soak/hostile_publisher.py in a child process (its buffers are not ours)."""

    def __init__(self, kind: str = "all") -> None:
        script = Path(__file__).with_name("hostile_publisher.py")
        self.proc = subprocess.Popen([sys.executable, str(script), kind], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        endpoints = json.loads(self.proc.stdout.readline())
        self.endpoint: str = endpoints["endpoint"]
        self.replay_endpoint: str = endpoints["replay_endpoint"]
        self.sent = 0

    def start(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if self.proc.poll() is None:
            self.proc.stdin.close()
            line = self.proc.stdout.readline()
            self.sent = json.loads(line)["sent"] if line else 0
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class LedgerIndex(PrefixIndex):
    """A :class:`PrefixIndex` that notes, per replica, the most keys one ``apply_ops`` call
    applied (one hold of the shared lock, or one step of the loop) and the keys in all."""

    def __init__(self) -> None:
        super().__init__()
        self.largest: dict[str, int] = {}
        self.keys: dict[str, int] = {}

    def apply_ops(self, replica: ReplicaId | str, decoded: DecodedOps) -> None:
        name = replica if isinstance(replica, str) else replica.name
        weight = ops_keys(decoded.ops)
        self.largest[name] = max(self.largest.get(name, 0), weight)
        self.keys[name] = self.keys.get(name, 0) + weight
        super().apply_ops(replica, decoded)


@dataclass
class SoakRun:
    """What one run saw."""

    seconds: float
    published: int = 0
    hostile_sent: int = 0
    settled: bool = False
    faults_seen: bool = False
    healthy: dict[str, Any] = field(default_factory=dict)
    hostile: dict[str, Any] = field(default_factory=dict)
    #: The most messages and bytes each replica's queue held at a sample.
    max_queued: dict[str, int] = field(default_factory=dict)
    max_queued_bytes: dict[str, int] = field(default_factory=dict)
    probe: tuple[str, int] = ("", 0)
    #: Per replica, the most keys applied in one hold of the lock, and the keys in all.
    largest_hold: dict[str, int] = field(default_factory=dict)
    keys_applied: dict[str, int] = field(default_factory=dict)
    rss_baseline: int = 0
    rss_peak: int = 0

    def sample(self, stats: Mapping[str, Any]) -> None:
        for name, replica in stats["replicas"].items():
            self.max_queued[name] = max(self.max_queued.get(name, 0), replica["queued"])
            self.max_queued_bytes[name] = max(self.max_queued_bytes.get(name, 0),
                                              replica["queued_bytes"])
        self.rss_peak = max(self.rss_peak, rss())


def _faults_seen(stats: Mapping[str, Any], index: LedgerIndex, kind: str) -> bool:
    bad = stats["replicas"]["hostile"]
    if kind == "flood":  # more messages than a full queue holds reached the subscriber
        return bool(bad["batches"] + bad["dropped"] >= FLOOD_MESSAGES)
    if kind == "media":  # thousands of new medium names applied (GPU, CPU, STORAGE first)
        return len(index.medium_bits()) >= 3 + MEDIA_NAMES
    if kind != "all":
        return True
    return (all(bad[c] > 0 for c in HOSTILE_FAULTS)
            and index.keys.get("hostile", 0) >= BIG_KEYS)


def run(make: Callable[..., AnySubscriber], ctx: Any, seconds: float, kind: str = "all",
        on_batch: Callable[[ReceivedBatch], None] | None = None) -> SoakRun:
    """Publish for ``seconds`` (and on until every hostile fault was counted), then settle.

    ``kind`` is the hostile replica's (tests/soak/hostile_publisher.py: ``all`` of them, or
    one); ``on_batch`` is the subscriber's (benchmarks/bench_subscriber_isolation.py
    times the healthy replica's batches with it).
    """
    healthy = FakePublisher(ctx, V)
    hostile = Hostile(kind)
    scheme = ReplicaScheme(hasher(V))
    index = LedgerIndex()
    replicas = [ReplicaEndpoint("healthy", healthy.endpoint, V, scheme=scheme),
                ReplicaEndpoint("hostile", hostile.endpoint, V,
                                replay_endpoint=hostile.replay_endpoint, scheme=scheme)]
    result = SoakRun(seconds)
    result.rss_baseline = result.rss_peak = rss()
    try:
        with make(replicas, index=index, context=ctx, queue_size=QUEUE_SIZE,
                  queue_bytes=QUEUE_BYTES, replay_timeout=0.25, max_ranks=4,
                  on_batch=on_batch) as sub:
            hello(sub, [(healthy, "healthy", healthy.publish(
                encode_batch(V, 0.0, [stored(scheme, Request(range(BLOCK)))]), send=False))])
            published = 1
            hostile.start()
            start = time.monotonic()
            while True:
                for _ in range(20):  # ~1,000 batches a second, each a block of its own
                    tokens = range(published * BLOCK, (published + 1) * BLOCK)
                    healthy.publish(encode_batch(V, time.time(),  # ts: sent at (benchmarks)
                                                 [stored(scheme, Request(tokens))]))
                    published += 1
                stats = sub.stats()
                result.sample(stats)
                elapsed = time.monotonic() - start
                result.faults_seen = _faults_seen(stats, index, kind)
                if elapsed >= seconds and (result.faults_seen or elapsed >= seconds + PATIENCE):
                    break
                time.sleep(0.02)
            hostile.close()
            result.published = published

            def settled(s: Mapping[str, Any]) -> bool:
                result.sample(s)
                return bool(s["replicas"]["healthy"]["batches"] >= published)

            result.settled = sub.wait_until(settled, PATIENCE)
            stats = sub.stats()
            result.sample(stats)
            result.healthy = dict(stats["replicas"]["healthy"])
            result.hostile = dict(stats["replicas"]["hostile"])
            with sub.lock:
                decision = Router(index).route(Request([*range(BLOCK), 1]))[0]
            result.probe = (decision.replica.name, decision.hit_tokens)
            result.largest_hold, result.keys_applied = dict(index.largest), dict(index.keys)
    finally:
        hostile.close()
        healthy.close()
    result.hostile_sent = hostile.sent
    return result
