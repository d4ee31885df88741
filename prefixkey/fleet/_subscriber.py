"""Subscribe to vLLM replicas' KV-event publishers over ZMQ (the edge: sockets, threads, logs).

Decoding (:mod:`prefixkey.events._decode`), sequencing (:mod:`prefixkey.events._sequencing`)
and the index (:mod:`prefixkey.fleet._index`) stay sans-IO; this module moves bytes
between them::

    from prefixkey import Hasher, PrefixIndex, ReplicaScheme, Router
    from prefixkey.fleet._subscriber import ReplicaEndpoint, Subscriber

    index = PrefixIndex()
    scheme = ReplicaScheme(Hasher(block_size=16, python_hash_seed="0"))
    replicas = [ReplicaEndpoint("gpu-a", "tcp://10.0.0.1:5557", "0.31.0",
                                replay_endpoint="tcp://10.0.0.1:5558", scheme=scheme)]
    with Subscriber(replicas, index=index) as sub:
        ...
        with sub.lock:                       # the index is not thread-safe
            decision = Router(index).route(token_ids)[0]

Two background threads: the *receiver* owns the SUB sockets (and their
monitors), records raw PUB messages and puts them on a bounded queue (a full queue
drops the message and counts it: the seq gap it leaves is then recovered by
replay like any other); the *worker* decodes, sequences, replays (it owns the
DEALER sockets and records their replies) and applies batches to the index under
:attr:`Subscriber.lock`, then calls ``on_batch``. See docs/subscriber.md for the
fault and restart policies and the counters.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import IO, Any, Literal

import zmq
from zmq.utils.monitor import recv_monitor_message

from ..core import DEFAULT_VLLM_VERSION
from ..errors import InvalidRequestError, PrefixKeyError
from ..events import (
    EventBatch,
    EventDecodeError,
    EventDecoder,
    ReplayEnd,
    StreamSequence,
    Via,
    recording_line,
    replay_request,
    split_message,
)
from ._index import PrefixIndex, ReplicaId, ReplicaScheme
from ._metrics import COUNTERS, prometheus_text

__all__ = [
    "COUNTERS",
    "ReceivedBatch",
    "ReplicaEndpoint",
    "Subscriber",
    "SubscriberStateError",
    "data_parallel_endpoints",
    "offset_endpoint",
]

logger = logging.getLogger("prefixkey.fleet._subscriber")


class SubscriberStateError(PrefixKeyError, RuntimeError):
    """A lifecycle call out of order: starting a subscriber twice, or after close."""


def offset_endpoint(endpoint: str, dp_rank: int) -> str:
    """vLLM's endpoint of data-parallel rank ``dp_rank``: tcp port + rank, inproc ``_dp{rank}``.

    A tcp port of 0 is left alone (0.31+), as is every endpoint of rank 0.
    """
    if dp_rank == 0:
        return endpoint
    if "inproc" in endpoint:
        return f"{endpoint}_dp{dp_rank}"
    if "tcp" in endpoint and ":" in endpoint:
        base, _, port = endpoint.rpartition(":")
        if not (port.isascii() and port.isdigit()):  # int() also takes " 5557", "5_557"
            raise InvalidRequestError("endpoint", f"has no tcp port number: {endpoint!r}")
        return endpoint if int(port) == 0 else f"{base}:{int(port) + dp_rank}"
    raise InvalidRequestError("endpoint", f"must be tcp:// or inproc://, got {endpoint!r}")


@dataclass(frozen=True)
class ReplicaEndpoint:
    """One publisher: a replica (one data-parallel rank of it) and how to reach it.

    ``scheme``, when given, registers ``ReplicaId(name, rank)`` with the index
    on the first batch of each rank (``rank`` from the batch). ``strict=False``
    decodes a release newer than any known one as the newest era.
    """

    name: str
    endpoint: str
    vllm_version: str = DEFAULT_VLLM_VERSION
    replay_endpoint: str | None = None
    topic: str = ""
    dp_rank: int | None = None
    scheme: ReplicaScheme | None = None
    strict: bool = True

    @property
    def key(self) -> str:
        """The label of this publisher in stats: the name, ``name#dpN`` for ranks > 0."""
        return self.name if self.dp_rank is None else str(ReplicaId(self.name, self.dp_rank))


def data_parallel_endpoints(
    name: str, endpoint: str, dp_size: int, *, replay_endpoint: str | None = None,
    **options: Any,
) -> list[ReplicaEndpoint]:
    """One :class:`ReplicaEndpoint` per DP rank, at vLLM's offset endpoints (port base+rank)."""
    return [
        ReplicaEndpoint(
            name, offset_endpoint(endpoint, rank), replay_endpoint=(
                None if replay_endpoint is None else offset_endpoint(replay_endpoint, rank)),
            dp_rank=rank, **options,
        )
        for rank in range(dp_size)
    ]


@dataclass(frozen=True, slots=True)
class ReceivedBatch:
    """A batch handed to ``on_batch``: who sent it, its seq, and how it arrived."""

    replica: str
    topic: str
    seq: int
    batch: EventBatch
    via: Literal["pub", "replay"]
    recv_time: float


@dataclass
class _Replica:
    config: ReplicaEndpoint
    decoder: EventDecoder
    sub: zmq.Socket[bytes] | None = None
    monitor: zmq.Socket[bytes] | None = None
    dealer: zmq.Socket[bytes] | None = None
    streams: dict[str, StreamSequence] = field(default_factory=dict)
    ranks: dict[str, set[int]] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    decode_errors_by_type: Counter[str] = field(default_factory=Counter)
    last_seen: float | None = None
    idle: bool = False


_Item = tuple[int, float, list[bytes]]


class Subscriber:
    """SUBs to many replicas' KV-event publishers and feeds a :class:`PrefixIndex`.

    ``index`` (optional) receives every applied batch under :attr:`lock`;
    ``on_batch`` (optional) is called after it, in the worker thread, with a
    :class:`ReceivedBatch`. ``record`` (a text file) receives every raw PUB
    message and replay reply in the recording format, each line with its
    ``"via"``. ``queue_size`` bounds the messages
    waiting to be decoded; ``replay_timeout`` bounds one replay exchange;
    ``idle_timeout`` is the silence after which a replica counts as idle.
    ``restart_policy`` is ``"clear"`` (default: a restarted publisher's
    replica loses its index entries; its new process starts with an empty
    prefix cache) or ``"keep"``. ``catch_up`` replays the history of a
    publisher first met at seq > 0.
    """

    def __init__(
        self,
        replicas: Iterable[ReplicaEndpoint],
        *,
        index: PrefixIndex | None = None,
        on_batch: Callable[[ReceivedBatch], None] | None = None,
        record: IO[str] | None = None,
        queue_size: int = 10_000,
        replay_timeout: float = 2.0,
        idle_timeout: float = 30.0,
        restart_policy: Literal["clear", "keep"] = "clear",
        catch_up: bool = True,
        rcvhwm: int = 100_000,
        reconnect_ivl_ms: int = 100,
        reconnect_ivl_max_ms: int = 2_000,
        context: zmq.Context[zmq.Socket[bytes]] | None = None,
    ) -> None:
        configs = list(replicas)
        if not configs:
            raise InvalidRequestError("replicas", "needs at least one replica")
        keys = [c.key for c in configs]
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        if dupes:
            raise InvalidRequestError("replicas", f"duplicate replica names: {', '.join(dupes)}")
        if restart_policy not in ("clear", "keep"):
            raise InvalidRequestError(
                "restart_policy", f"must be 'clear' or 'keep', got {restart_policy!r}")
        if type(queue_size) is not int or queue_size < 1:
            raise InvalidRequestError("queue_size", f"must be an int >= 1, got {queue_size!r}")
        self._replicas = [
            _Replica(c, EventDecoder(c.vllm_version, strict=c.strict)) for c in configs
        ]
        for r in self._replicas:
            for warning in r.decoder.version_warnings:
                logger.warning("%s: %s", r.config.key, warning)
        self.index = index
        self.on_batch = on_batch
        self.record = record
        # Both threads write the recording: the receiver PUB messages, the worker replies.
        self._record_lock = threading.Lock()
        self.replay_timeout = replay_timeout
        self.idle_timeout = idle_timeout
        self.restart_policy = restart_policy
        self.catch_up = catch_up
        self.rcvhwm = rcvhwm
        self.reconnect_ivl_ms = reconnect_ivl_ms
        self.reconnect_ivl_max_ms = reconnect_ivl_max_ms
        #: Held while a batch is applied to the index: hold it to read the index.
        self.lock = threading.RLock()
        self._stats_lock = threading.Lock()
        self._queue: queue.Queue[_Item] = queue.Queue(maxsize=queue_size)
        self._queue_size = queue_size
        self._own_context = context is None
        self._ctx: zmq.Context[zmq.Socket[bytes]] = context or zmq.Context()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._started_at = time.time()
        self._closed = False

    # -- lifecycle ----------------------------------------------------------------

    def start(self) -> Subscriber:
        """Connect the SUB sockets and start the receiver and worker threads."""
        if self._threads:
            raise SubscriberStateError("the subscriber is already started")
        if self._closed:
            raise SubscriberStateError("the subscriber is closed: build a new one")
        for r in self._replicas:
            sub = self._ctx.socket(zmq.SUB)
            sub.setsockopt(zmq.LINGER, 0)
            sub.setsockopt(zmq.RCVHWM, self.rcvhwm)
            sub.setsockopt(zmq.RECONNECT_IVL, self.reconnect_ivl_ms)
            sub.setsockopt(zmq.RECONNECT_IVL_MAX, self.reconnect_ivl_max_ms)
            sub.setsockopt(zmq.SUBSCRIBE, r.config.topic.encode("utf-8"))
            r.monitor = sub.get_monitor_socket(zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED)
            r.sub = sub
            sub.connect(r.config.endpoint)
        self._started_at = time.time()
        self._stop.clear()
        self._threads = [
            threading.Thread(target=self._receive_loop, name="prefixkey-sub-recv", daemon=True),
            threading.Thread(target=self._work_loop, name="prefixkey-sub-work", daemon=True),
        ]
        for t in self._threads:
            t.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the threads and close the sockets (the context too, if the subscriber made it)."""
        self._stop.set()
        for t in self._threads:
            t.join(timeout)
        self._threads = []
        for r in self._replicas:
            for sock in (r.dealer, r.monitor):
                if sock is not None:
                    sock.close(linger=0)
            if r.sub is not None:
                with contextlib.suppress(zmq.ZMQError):
                    r.sub.disable_monitor()
                r.sub.close(linger=0)
            r.sub = r.monitor = r.dealer = None
        if self.record is not None:
            self.record.flush()

    def close(self) -> None:
        self.stop()
        if self._own_context and not self._closed:
            self._ctx.term()
        self._closed = True

    def __enter__(self) -> Subscriber:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def running(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    # -- receiver thread -------------------------------------------------------------

    def _receive_loop(self) -> None:
        poller = zmq.Poller()
        owners: dict[zmq.Socket[bytes], tuple[int, bool]] = {}
        for i, r in enumerate(self._replicas):
            assert r.sub is not None and r.monitor is not None
            poller.register(r.sub, zmq.POLLIN)
            poller.register(r.monitor, zmq.POLLIN)
            owners[r.sub] = (i, False)
            owners[r.monitor] = (i, True)
        last_flush = time.monotonic()
        while not self._stop.is_set():
            try:
                ready = poller.poll(100)
            except zmq.ZMQError as exc:  # pragma: no cover - context terminated
                logger.error("poll failed: %s", exc)
                return
            for sock, _ in ready:
                i, is_monitor = owners[sock]
                if is_monitor:
                    self._drain_monitor(i, sock)
                else:
                    self._drain_sub(i, sock)
            if self.record is not None and time.monotonic() - last_flush > 1.0:
                with self._record_lock:
                    if self.record is not None:
                        self.record.flush()
                last_flush = time.monotonic()

    def _drain_monitor(self, i: int, sock: zmq.Socket[bytes]) -> None:
        r = self._replicas[i]
        while True:
            try:
                event = recv_monitor_message(sock, zmq.NOBLOCK)
            except zmq.Again:
                return
            except zmq.ZMQError:  # pragma: no cover - closed while stopping
                return
            kind = event.get("event")
            if kind == zmq.EVENT_CONNECTED:
                self._count(r, "connects")
                logger.info("%s: connected to %s", r.config.key, r.config.endpoint)
            elif kind == zmq.EVENT_DISCONNECTED:
                self._count(r, "disconnects")
                logger.warning("%s: disconnected from %s (reconnecting)", r.config.key,
                               r.config.endpoint)

    def _drain_sub(self, i: int, sock: zmq.Socket[bytes]) -> None:
        r = self._replicas[i]
        for _ in range(1000):
            try:
                frames = sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            now = time.time()
            self._count(r, "messages")
            self._write_record(r, frames, now, "pub")
            try:
                self._queue.put_nowait((i, now, frames))
            except queue.Full:
                self._count(r, "dropped")
                logger.warning("%s: queue full (%d), message dropped", r.config.key,
                               self._queue_size)

    def _write_record(self, r: _Replica, frames: list[bytes], recv_time: float,
                      via: Via) -> None:
        if self.record is None:
            return
        line = recording_line(frames, recv_time=recv_time, source=r.config.key, via=via)
        with self._record_lock:
            if self.record is None:
                return
            try:
                self.record.write(line + "\n")
            except (OSError, ValueError) as exc:
                logger.error("recording failed, recording stops: %s", exc)
                self.record = None

    # -- worker thread ---------------------------------------------------------------

    def _work_loop(self) -> None:
        last_idle_check = 0.0
        while not self._stop.is_set():
            try:
                i, recv_time, frames = self._queue.get(timeout=0.05)
            except queue.Empty:
                pass
            else:
                try:
                    self._handle(self._replicas[i], recv_time, frames)
                except Exception:  # a bug must not kill the subscriber
                    logger.exception("%s: unexpected error handling a message",
                                     self._replicas[i].config.key)
            now = time.monotonic()
            if now - last_idle_check > 0.2:
                last_idle_check = now
                self._check_idle()

    def _count(self, r: _Replica, key: str, n: int = 1) -> None:
        with self._stats_lock:
            r.counters[key] += n

    def _check_idle(self) -> None:
        now = time.time()
        for r in self._replicas:
            since = now - (r.last_seen if r.last_seen is not None else self._started_at)
            if since > self.idle_timeout and not r.idle:
                r.idle = True
                self._count(r, "idle_periods")
                logger.warning("%s: no message for %.1f s", r.config.key, since)

    def _handle(self, r: _Replica, recv_time: float, frames: list[bytes]) -> None:
        key = r.config.key
        if r.idle:
            r.idle = False
            logger.info("%s: messages again", key)
        r.last_seen = recv_time
        try:
            topic, seq, payload = split_message(frames)
        except EventDecodeError as exc:
            self._count(r, "framing_errors")
            logger.warning("%s: bad message framing: %s", key, exc)
            return
        stream = r.streams.get(topic)
        if stream is None:
            stream = r.streams[topic] = StreamSequence()
        verdict = stream.observe(seq, hash(payload))
        kind = verdict.kind
        if kind == "duplicate":
            self._count(r, "duplicates")
            logger.debug("%s: duplicate seq %d skipped", key, seq)
            return
        if kind == "late":
            self._count(r, "late_batches")
            logger.info("%s: seq %d arrived after its gap", key, seq)
        elif kind == "restart":
            self._new_epoch(r, topic, seq)
        if verdict.missing is not None:
            start, end = verdict.missing
            if kind == "first":
                self._count(r, "late_joins")
            else:
                self._count(r, "gaps")
                self._count(r, "missing_batches", end - start)
                logger.warning("%s: gap, seq %d-%d missing", key, start, end - 1)
            if r.config.replay_endpoint is not None and (kind != "first" or self.catch_up):
                self._replay(r, topic, stream, start, end)
            elif kind != "first":
                self._count(r, "lost_batches", end - start)
        self._decode_apply(r, topic, seq, payload, "pub", recv_time)

    def _new_epoch(self, r: _Replica, topic: str, seq: int) -> None:
        self._count(r, "restarts")
        ranks = r.ranks.pop(topic, set())
        cleared = 0
        if self.restart_policy == "clear" and self.index is not None:
            with self.lock:
                registered = self.index.replicas()
                for rank in sorted(ranks):
                    rid = ReplicaId(r.config.name, rank)
                    scheme = registered.get(rid)
                    if scheme is not None:
                        cleared += self.index.remove_replica(rid)
                        self.index.register(rid, scheme)
        self._count(r, "cleared_entries", cleared)
        logger.warning("%s: publisher restarted (seq back to %d): new epoch, %d entries %s",
                       r.config.key, seq, cleared,
                       "cleared" if self.restart_policy == "clear" else "kept")

    def _dealer(self, r: _Replica) -> zmq.Socket[bytes]:
        if r.dealer is None:
            assert r.config.replay_endpoint is not None
            sock = self._ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(r.config.replay_endpoint)
            r.dealer = sock
        return r.dealer

    def _replay(self, r: _Replica, topic: str, stream: StreamSequence, start: int,
                end: int) -> None:
        key = r.config.key
        self._count(r, "replay_requests")
        filled = recovered = 0
        ended = False
        try:
            sock = self._dealer(r)
            sock.send_multipart([b"", replay_request(start)], zmq.NOBLOCK)
            deadline = time.monotonic() + self.replay_timeout
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not sock.poll(max(1, int(remaining * 1000))):
                    break
                frames = sock.recv_multipart()
                now = time.time()
                self._write_record(r, frames, now, "replay")
                try:
                    reply = r.decoder.split_replay_reply(frames)
                except EventDecodeError as exc:
                    self._count(r, "framing_errors")
                    logger.warning("%s: bad replay reply framing: %s", key, exc)
                    continue
                if isinstance(reply, ReplayEnd):
                    ended = True
                    break
                rtopic, seq, payload = reply
                if r.decoder.era.replay_carries_topic and rtopic != topic:
                    continue
                if not start <= seq < end or not stream.fill(seq, hash(payload)):
                    continue
                filled += 1
                if self._decode_apply(r, topic, seq, payload, "replay", now):
                    recovered += 1
        except zmq.ZMQError as exc:
            logger.warning("%s: replay failed: %s", key, exc)
        if ended:
            self._count(r, "replay_completed")
        else:
            self._count(r, "replay_failures")
            logger.warning("%s: replay from seq %d got no end marker within %.1f s", key,
                           start, self.replay_timeout)
            if r.dealer is not None:  # late replies must not answer the next request
                r.dealer.close(linger=0)
                r.dealer = None
        self._count(r, "replayed_batches", recovered)
        self._count(r, "lost_batches", (end - start) - filled)

    def _decode_apply(self, r: _Replica, topic: str, seq: int, payload: bytes,
                      via: Literal["pub", "replay"], recv_time: float) -> bool:
        key = r.config.key
        try:
            decoded = r.decoder.decode(payload)
        except EventDecodeError as exc:
            with self._stats_lock:
                r.counters["decode_errors"] += 1
                r.decode_errors_by_type[type(exc).__name__] += 1
            logger.warning("%s: seq %d (%s) not decoded, skipped: %s: %s", key, seq, via,
                           type(exc).__name__, exc)
            return False
        batch = decoded.batch
        if decoded.warnings:
            self._count(r, "ignored_fields", len(decoded.warnings))
        rank = batch.data_parallel_rank
        if rank is None:
            rank = r.config.dp_rank or 0
        r.ranks.setdefault(topic, set()).add(rank)
        if self.index is not None:
            try:
                with self.lock:
                    rid = ReplicaId(r.config.name, rank)
                    if r.config.scheme is not None and rid not in self.index.replicas():
                        self.index.register(rid, r.config.scheme)
                    self.index.apply(rid, batch)
            except Exception:
                self._count(r, "apply_errors")
                logger.exception("%s: seq %d could not be applied", key, seq)
                return False
        with self._stats_lock:
            r.counters["batches"] += 1
            r.counters["events"] += len(batch.events)
        if self.on_batch is not None:
            try:
                self.on_batch(ReceivedBatch(key, topic, seq, batch, via, recv_time))
            except Exception:
                self._count(r, "callback_errors")
                logger.exception("%s: on_batch raised", key)
        return True

    # -- observability ---------------------------------------------------------------

    def _index_sizes(self) -> dict[str, int]:
        sizes = dict.fromkeys((r.config.key for r in self._replicas), 0)
        if self.index is None:
            return sizes
        with self.lock:
            for rid in self.index.replicas():
                for r in self._replicas:
                    if r.config.name == rid.name and r.config.dp_rank in (None, rid.dp_rank):
                        sizes[r.config.key] += self.index.replica_size(rid)
                        break
        return sizes

    def stats(self) -> dict[str, Any]:
        """A snapshot: per replica counters and liveness, totals, queue and index sizes.

        ``{"replicas": {key: {<COUNTERS>…, "decode_errors_by_type", "last_seen",
        "idle_seconds", "idle", "epochs", "index_size"}}, "totals": {<COUNTERS>…,
        "index_size"}, "queue_depth", "queue_capacity", "index": PrefixIndex.stats()
        or None, "running"}``.
        """
        now = time.time()
        sizes = self._index_sizes()
        out: dict[str, dict[str, Any]] = {}
        with self._stats_lock:
            for r in self._replicas:
                seen = r.last_seen
                out[r.config.key] = {
                    **r.counters,
                    "decode_errors_by_type": dict(r.decode_errors_by_type),
                    "last_seen": seen,
                    "idle_seconds": now - (seen if seen is not None else self._started_at),
                    "idle": r.idle,
                    "epochs": sum(s.epoch for s in r.streams.values()),
                    "index_size": sizes[r.config.key],
                }
        totals: dict[str, int] = {
            name: sum(int(v[name]) for v in out.values()) for name in (*COUNTERS, "index_size")
        }
        index_stats = None
        if self.index is not None:
            with self.lock:
                index_stats = self.index.stats()
        return {
            "replicas": out, "totals": totals, "queue_depth": self._queue.qsize(),
            "queue_capacity": self._queue_size, "index": index_stats, "running": self.running,
        }

    def wait_until(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 5.0,
                   interval: float = 0.01) -> bool:
        """Poll :meth:`stats` until ``predicate`` holds (True) or ``timeout`` passes (False)."""
        deadline = time.monotonic() + timeout
        while True:
            if predicate(self.stats()):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(interval)

    def prometheus_text(self) -> str:
        """The counters in Prometheus' text exposition format (names prefixed ``prefixkey_``)."""
        return prometheus_text(self.stats())
