"""``prefixkey simulate``: a fleet of simulated vLLM replicas replaying a trace.

Each replica is a vLLM block pool (:mod:`._simulate_pool`) behind a time
model; the replicas publish their cache changes as real KV events of the
chosen release (``encode_batch`` → ``EventDecoder`` → ``PrefixIndex.apply``),
delivered ``event_lag_s`` late, and a policy (:mod:`._simulate_policies`)
routes each request at its arrival. All policies run in lock step over one
read of the trace, each request hashed once (the real
:class:`~prefixkey.Hasher`) and shared, so a trace is read in bounded memory:
only requests in flight are held.

**The time model** (:class:`TimeModel`, every constant a flag). A replica
admits the head of its FIFO queue when its prefill unit is idle, fewer than
``max_concurrency`` requests run, and its pool has the blocks: the prefix
lookup happens then (vLLM's timing: at admission, not at arrival). Prefill
runs one request at a time at ``prefill_tokens_per_s`` over the tokens not
hit; the first token comes when it ends (TTFT = that time minus the arrival).
Decoding then takes ``decode_s_per_token`` per further output token, in
parallel with other requests, and the request's blocks are freed when it
ends.

**The pooled bound.** One replica with the fleet's total blocks,
concurrency and prefill rate, fed every request: the hit rate one shared
cache of the same total size gets under the same timing.
"""

from __future__ import annotations

import heapq
import math
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..core import Hasher, Request
from ..errors import InvalidRequestError
from ..events import BlockRemoved, BlockStored, EventBatch, EventDecoder, EventHash, encode_batch
from ..fleet import PrefixIndex, PreparedRequest, ReplicaId, ReplicaScheme
from ..fleet.routing import SchemeKeys
from ._simulate_policies import POLICIES, Gateway, Policy, PolicyContext, make_policy
from ._simulate_pool import BlockPool
from ._simulate_trace import TraceRequest

__all__ = ["PolicyResult", "SimulationConfig", "SimulationReport", "TimeModel", "simulate",
           "simulation_text"]

POOLED = "pooled"


@dataclass(frozen=True, slots=True)
class TimeModel:
    """The replicas' timing (see the module docs)."""

    prefill_tokens_per_s: float = 10_000.0
    max_concurrency: int = 64
    decode_s_per_token: float = 0.02
    event_lag_s: float = 0.05


@dataclass(frozen=True, slots=True)
class SimulationConfig:
    """A fleet to simulate."""

    replicas: int = 8
    blocks_per_replica: int = 10_000
    block_size: int = 16
    vllm_version: str = "0.31.0"
    hash_algo: str = "sha256"
    policies: tuple[str, ...] = ("ours",)
    pooled: bool = True
    seed: int = 0
    time: TimeModel = field(default_factory=TimeModel)


@dataclass(slots=True)
class PolicyResult:
    """One policy's outcome over the trace."""

    policy: str
    requests: int = 0
    rejected: int = 0  # prompts larger than a replica's whole pool
    prompt_tokens: int = 0
    hit_tokens: int = 0
    ttft_mean_s: float = 0.0
    ttft_p50_s: float = 0.0
    ttft_p99_s: float = 0.0
    per_replica_requests: list[int] = field(default_factory=list)
    decision_cpu_us_mean: float = 0.0
    events_applied: int = 0

    @property
    def hit_rate(self) -> float:
        return self.hit_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def max_over_mean_requests(self) -> float:
        counts = self.per_replica_requests
        return max(counts) / (sum(counts) / len(counts)) if counts and sum(counts) else 0.0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["hit_rate"] = self.hit_rate
        out["max_over_mean_requests"] = self.max_over_mean_requests
        return out


@dataclass(slots=True)
class SimulationReport:
    """Every policy's result, the pooled bound's, and what the run cost."""

    config: SimulationConfig
    results: list[PolicyResult]
    requests: int = 0
    hash_seconds: float = 0.0
    wall_seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"config": asdict(self.config), "requests": self.requests,
                "hash_seconds": self.hash_seconds, "wall_seconds": self.wall_seconds,
                "results": [r.to_dict() for r in self.results]}


class _Job:
    """A request in flight on one simulated fleet."""

    __slots__ = ("arrival", "blocks", "expected", "keys", "num_tokens", "output", "replica",
                 "ticket")

    def __init__(self, arrival: float, keys: Sequence[EventHash], num_tokens: int,
                 output: int) -> None:
        self.arrival = arrival
        self.keys = keys
        self.num_tokens = num_tokens
        self.output = output
        self.blocks: list[int] = []
        self.replica = 0
        self.expected = 0.0
        self.ticket = 0  # the gateway's backlog ticket


class _Replica:
    __slots__ = ("busy_until", "name", "pool", "running", "waiting")

    def __init__(self, name: ReplicaId, pool: BlockPool) -> None:
        self.name = name
        self.pool = pool
        self.waiting: deque[_Job] = deque()
        self.running = 0
        self.busy_until = 0.0


_FIRST, _DONE, _EVENTS, _KICK = 0, 1, 2, 3


class _Fleet:
    """One policy's fleet: replicas, the index their events feed, the gateway, the clock."""

    def __init__(self, name: str, config: SimulationConfig, scheme: ReplicaScheme) -> None:
        self.name = name
        self.config = config
        t = config.time
        pooled = name == POOLED
        n = 1 if pooled else config.replicas
        scale = config.replicas if pooled else 1
        self.rate = t.prefill_tokens_per_s * scale
        self.concurrency = t.max_concurrency * scale
        self.replicas = [
            _Replica(ReplicaId(f"replica-{i}"),
                     BlockPool(config.blocks_per_replica * scale, config.block_size))
            for i in range(n)]
        self.index = PrefixIndex()
        for r in self.replicas:  # every replica registered up front
            self.index.register(r.name, scheme)
        self.decoder = EventDecoder(config.vllm_version)
        self.gateway = Gateway([0] * n, [0.0] * n, [0] * n,
                               waiting=lambda i: len(self.replicas[i].waiting),
                               usage=lambda i: (self.replicas[i].pool.used_blocks()
                                                / self.replicas[i].pool.capacity),
                               clock=lambda: self.now)
        self.policy: Policy | None = None if pooled else make_policy(name, PolicyContext(
            self.index, [r.name for r in self.replicas], self.gateway, config.block_size,
            config.seed, config.blocks_per_replica))
        self.heap: list[tuple[float, int, int, Any]] = []
        self.seq = 0
        self.now = 0.0
        self.result = PolicyResult(name, per_replica_requests=[0] * n)
        self.ttfts: list[float] = []
        self.decision_cpu = 0.0

    def _at(self, when: float, kind: int, payload: Any) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (when, self.seq, kind, payload))

    def advance(self, until: float) -> None:
        """Run every event due up to ``until``."""
        heap = self.heap
        while heap and heap[0][0] <= until:
            when, _, kind, payload = heapq.heappop(heap)
            self.now = when
            if kind == _FIRST:
                self._first_token(payload)
            elif kind == _DONE:
                self._done(payload)
            elif kind == _EVENTS:
                replica, message = payload
                self.index.apply(replica, self.decoder.decode_batch(message))
                self.result.events_applied += 1
            else:
                self._admit(self.replicas[payload])
        self.now = max(self.now, until)

    def arrive(self, job: _Job, prepared: PreparedRequest, keys: SchemeKeys) -> None:
        gw = self.gateway
        if self.policy is None:
            i, expected = 0, float(job.num_tokens)
        else:
            start = time.process_time()
            i, expected = self.policy(prepared, keys)
            self.decision_cpu += time.process_time() - start
        job.replica, job.expected = i, expected
        gw.requests[i] += 1
        gw.prefill[i] += expected
        job.ticket = gw.backlog.sent(self.replicas[i].name, expected, self.now)
        gw.active_blocks[i] += -(-job.num_tokens // self.config.block_size)
        self.result.per_replica_requests[i] += 1
        replica = self.replicas[i]
        replica.waiting.append(job)
        self._admit(replica)

    def _admit(self, replica: _Replica) -> None:
        """Admit the queue's head if the prefill unit, a slot and the blocks are free."""
        if not replica.waiting or replica.busy_until > self.now or (
                replica.running >= self.concurrency):
            return
        job = replica.waiting[0]
        pool = replica.pool
        total = job.num_tokens + job.output
        if -(-total // pool.block_size) > pool.capacity:  # never fits: vLLM refuses it
            replica.waiting.popleft()
            self.result.rejected += 1
            self._release_gateway(job)
            self.gateway.backlog.failed(job.ticket)
            self.gateway.requests[job.replica] -= 1
            self.gateway.active_blocks[job.replica] -= -(-job.num_tokens // pool.block_size)
            self._at(self.now, _KICK, self.replicas.index(replica))
            return
        admission = pool.admit(job.keys, job.num_tokens, total)
        if admission is None:
            return  # waits for a request to finish and free blocks
        replica.waiting.popleft()
        job.keys = ()  # no longer needed: bounded memory
        job.blocks = admission.blocks
        replica.running += 1
        hit = admission.hit_blocks * pool.block_size
        self.result.requests += 1
        self.result.prompt_tokens += job.num_tokens
        self.result.hit_tokens += hit
        end = self.now + (job.num_tokens - hit) / self.rate
        replica.busy_until = end
        self._at(end, _FIRST, job)
        if admission.removed or admission.stored:
            events: list[Any] = []
            if admission.removed:
                events.append(BlockRemoved(tuple(admission.removed), medium="GPU"))
            if admission.stored:
                events.append(BlockStored(tuple(admission.stored), admission.parent, (),
                                          pool.block_size, medium="GPU"))
            message = encode_batch(EventBatch(self.now, tuple(events)), self.config.vllm_version)
            self._at(self.now + self.config.time.event_lag_s, _EVENTS, (replica.name, message))

    def _release_gateway(self, job: _Job) -> None:
        self.gateway.prefill[job.replica] -= job.expected

    def _first_token(self, job: _Job) -> None:
        self.ttfts.append(self.now - job.arrival)
        self._release_gateway(job)
        self.gateway.backlog.first_token(job.ticket, self.now)
        decode = max(job.output - 1, 0) * self.config.time.decode_s_per_token
        self._at(self.now + decode, _DONE, job)
        self._admit(self.replicas[job.replica])

    def _done(self, job: _Job) -> None:
        replica = self.replicas[job.replica]
        replica.pool.release(job.blocks)
        replica.running -= 1
        gw = self.gateway
        gw.requests[job.replica] -= 1
        gw.active_blocks[job.replica] -= -(-job.num_tokens // self.config.block_size)
        self._admit(replica)

    def finish(self) -> PolicyResult:
        self.advance(math.inf)
        r = self.result
        ttfts = sorted(self.ttfts)
        if ttfts:
            r.ttft_mean_s = math.fsum(ttfts) / len(ttfts)
            r.ttft_p50_s = _quantile(ttfts, 0.50)
            r.ttft_p99_s = _quantile(ttfts, 0.99)
        decided = sum(r.per_replica_requests)
        r.decision_cpu_us_mean = self.decision_cpu / decided * 1e6 if decided else 0.0
        return r


def _quantile(ordered: list[float], q: float) -> float:
    """The nearest-rank quantile of sorted values."""
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def simulate(trace: Iterable[TraceRequest], config: SimulationConfig,
             progress: Callable[[int], None] | None = None) -> SimulationReport:
    """Replay ``trace`` against every policy of ``config`` (and the pooled bound)."""
    for name in config.policies:
        if name not in POLICIES:
            raise InvalidRequestError(
                "policies", f"unknown policy {name!r}: one of {', '.join(POLICIES)}")
    start = time.perf_counter()
    hasher = Hasher(block_size=config.block_size, hash_algo=config.hash_algo,
                    vllm_version=config.vllm_version)
    scheme = ReplicaScheme(hasher)
    names = [*config.policies, *([POOLED] if config.pooled else [])]
    fleets = [_Fleet(name, config, scheme) for name in names]
    report = SimulationReport(config, [])
    for req in trace:
        request = Request(req.token_ids)
        prepared = PreparedRequest(len(req.token_ids), request)
        h0 = time.perf_counter()
        keys = prepared.add_keys(scheme, hasher.block_hashes(request))
        report.hash_seconds += time.perf_counter() - h0
        published = keys.groups[0]
        for fleet in fleets:
            fleet.advance(req.arrival)
            fleet.arrive(_Job(req.arrival, published, len(req.token_ids), req.output_length),
                         prepared, keys)
        report.requests += 1
        if progress is not None:
            progress(report.requests)
    report.results = [fleet.finish() for fleet in fleets]
    report.wall_seconds = time.perf_counter() - start
    return report


def simulation_text(report: SimulationReport) -> str:
    """The report as a table, one policy a row."""
    c = report.config
    t = c.time
    lines = [
        f"{report.requests} requests, {c.replicas} replicas x {c.blocks_per_replica} blocks of "
        f"{c.block_size} tokens; prefill {t.prefill_tokens_per_s:g} tokens/s, "
        f"{t.max_concurrency} concurrent, {t.decode_s_per_token:g} s/output token, "
        f"event lag {t.event_lag_s * 1e3:g} ms; vLLM {c.vllm_version} {c.hash_algo}",
        f"hashing {report.hash_seconds:.1f} s, whole run {report.wall_seconds:.1f} s",
        "",
        f"{'policy':<18} {'hit rate':>8} {'TTFT mean':>10} {'p50':>8} {'p99':>8} "
        f"{'max/mean req':>12} {'decision us':>11}  per-replica requests",
    ]
    for r in report.results:
        lines.append(
            f"{r.policy:<18} {r.hit_rate:>8.3f} {r.ttft_mean_s:>9.2f}s {r.ttft_p50_s:>7.2f}s "
            f"{r.ttft_p99_s:>7.2f}s {r.max_over_mean_requests:>12.2f} "
            f"{r.decision_cpu_us_mean:>11.0f}  {r.per_replica_requests}")
    if any(r.rejected for r in report.results):
        lines.append("")
        lines += [f"{r.policy}: {r.rejected} request(s) larger than a replica's pool, refused"
                  for r in report.results if r.rejected]
    return "\n".join(lines) + "\n"
