"""Where the `ours` policy's hits go against the pooled cache, on one scenario.

Run from the repository root after ``bench_routing_quality.py run`` has
written the scenario's JSON (the pooled bound is read from it)::

    python benchmarks/routing_quality_diagnose.py conversation 32 10000 --limit 5000
    python benchmarks/routing_quality_diagnose.py conversation 32 10000 --limit 5000 \\
        --pressure-rounds 1.05 --quick --cache-tokens

It replays the scenario's `ours` fleet (the simulator's own fleet, time model
and Router at its defaults; the trace's keys hashed once and kept under
``--cache``) and counts, per request: the hit the index showed on each
replica, the hit each replica's pool really held at arrival, and the hit
at admission; so the gap to the pooled cache splits into decisions against
the index's view (by queue or by pressure), the index's lag, and what the
fleet's caches had evicted. It also counts blocks cached twice and the
age of each evicted block (since its request freed it). ``--pressure-rounds
K`` decays the cache pressure by ``1 - 1/(K x replicas)`` per decision
instead of the Router's ``1 - 1/replicas``: how sensitive the hit rate is
to an immaterial constant (benchmarks/routing_quality/NOTES.md).
``--variant V`` swaps the cache pressure for one of the variants measured
and not adopted (``_Pressure``, ``_MidOrder``; benchmarks/routing_quality/NOTES.md;
without ``--cache-tokens``).
``--cache-tokens`` gives the Router each replica's capacity (``--blocks`` x the
block size), as the benchmark's ``ours`` is given it: the cache pressure's absolute
measure, whose window ``--pressure-rounds K`` then scales (K x the fleet's capacity).
``--pressure-stats`` (with ``--cache-tokens``) counts, per ranking, how many
replicas' pressures sit at 1 and the fleet's recent tokens over its capacity;
``--variant fleetcap`` (with ``--cache-tokens``) divides each pressure by the
fleet's recent tokens over its capacity when above 1 (measured, not adopted).
``--noload`` runs ``ours-noload`` instead (no load: the Router's own count of sends).
``--whole-count`` feeds the load as the simulator did before :class:`PrefillBacklog`:
the prefill sent and not yet first-tokened, the request being prefilled counted whole.
``--quick`` skips the per-request accounting (the hit rate only);
``--pooled`` prints the pooled cache's eviction ages instead. ``--by-request``
also replays the pooled cache and splits the gap request by request: a
request sharing at least half of an earlier prompt (a conversation's next
turn) either went to the replica of that earlier turn or moved, and the
tokens it lost or gained against the pooled cache are summed by that and by
the time since the earlier turn.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import pickle
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

from mooncake_traces import CACHE
from mooncake_traces import path as trace_path

from prefixkey import Hasher
from prefixkey.analysis import SimulationConfig, read_trace
from prefixkey.analysis._simulate import POOLED, _Fleet, _Job
from prefixkey.analysis._simulate_pool import Admission, BlockPool
from prefixkey.core import Request
from prefixkey.events import EventHash
from prefixkey.fleet import PreparedRequest, ReplicaId, ReplicaScheme, Router
from prefixkey.fleet.routing import RouterMetrics
from prefixkey.fleet.routing import _router as _router_module
from prefixkey.fleet.routing._cost_order import _ONE, _CostOrder, _Scored, _TieSeed
from prefixkey.fleet.routing._pressure import CachePressure, PressureFn

RESULTS = Path("benchmarks/routing_quality")
Trace = list[tuple[float, int, int, list[bytes]]]  # arrival, tokens, output, fine keys


class _Pressure(CachePressure):
    """The Router's cache pressure with its decay over ``rounds`` rounds of the fleet (no
    capacities) or ``rounds`` times the fleet's capacity (with them)."""

    rounds = 1.0
    variant = "default"
    metrics = RouterMetrics()  # the Router's (set by _Router)

    def store(self, replica: ReplicaId, prefill: float, prompt: float, replicas: int) -> None:
        if self.absolute:  # the Router's, over K times the fleet's capacity
            self._recent.decay(math.exp(-max(prompt, 0.0) / (self._fleet(replicas) * self.rounds)))
            self._recent.add(replica, prompt)
        else:  # the Router's, over K rounds
            # touch: a reused block goes back to the free queue's MRU end as a new one
            # does: the prompt tokens sent (held and new), not only the prefill
            tokens = prompt if "touch" in self.variant else prefill
            self._recent.decay(1 - 1 / max(replicas * self.rounds, 2))
            self._recent.add(replica, tokens)

    #: ``--pressure-stats``: per ranking, every replica's pressure, summed.
    stats: defaultdict[str, float] | None = None

    def _absolute(self) -> PressureFn | None:
        """The capacity pressure (``fleetcap``: over the fleet's recent total past its
        capacity), counted into :attr:`stats`; None when neither is asked for."""
        v, stats = self.variant, self.stats
        if not self.absolute or (stats is None and v != "fleetcap"):
            return None
        stored = self._recent
        values, scale = stored.stored()
        capacity, mean = self._capacity.get, self._capacity_sum / len(self._capacity)
        fleet = self._fleet(len(self._capacity))
        over = max(1.0, stored.total() / fleet) if v == "fleetcap" else 1.0

        def pressure(rid: ReplicaId) -> float:
            return min(values.get(rid, 0.0) * scale / capacity(rid, mean) / over, 1.0)
        if stats is not None and stored.maximum() > 0:
            each = [pressure(rid) for rid in self._capacity]
            stats["rankings"] += 1
            stats["replicas"] += len(each)
            stats["clipped at 1"] += sum(p >= 1.0 for p in each)
            stats["rankings with every replica at 1"] += all(p >= 1.0 for p in each)
            stats["pressure sum"] += sum(each)
            stats["least pressure sum"] += min(each)
            stats["fleet recent over capacity"] += stored.total() / fleet
        return pressure if v == "fleetcap" else None

    def of(self) -> PressureFn:
        absolute = self._absolute()
        if absolute is not None:
            return absolute
        stored, v = self._recent, self.variant
        top = stored.maximum()
        if v not in ("base", "mean", "hmean", "hbase") or (top <= 0 and v != "base"):
            return super().of()
        share = 1 / top if top > 0 else 0.0
        if v in ("mean", "hmean"):  # relative to the candidates' mean, uncapped
            share = len(stored) / stored.total()
        # The mean reuse of a stored token: every hit token was stored once.
        hit_rate = self.metrics.hit_rate
        reuse = 1.0 if v in ("base", "mean") else hit_rate / (1 - hit_rate)
        if v in ("mean", "hmean"):
            return lambda rid: reuse * stored.get(rid) * share
        return lambda rid: reuse + stored.get(rid) * share


class _Router(Router):
    """The Router with :class:`_Pressure`, and the pressure variants of ``--variant`` (not
    the Router's: measured, not adopted)."""

    variant = "default"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        pressure = _Pressure()
        pressure._capacity, pressure._capacity_sum = (self._pressure._capacity,
                                                      self._pressure._capacity_sum)
        pressure.variant, pressure.metrics = self.variant, self.metrics
        pressure.loaded = self._pressure.loaded
        self._pressure = pressure


class _MidOrder(_CostOrder):
    """The pressure at the midpoint of the request's own stores, ``(stored + needed / 2) /
    the busiest's stored``: its first blocks evict a replica's oldest, its last ones younger."""

    def _mid(self, rid: ReplicaId, left: float) -> float:
        stored = cast("_Router", self._router)._pressure._recent
        top = stored.maximum()
        return (stored.get(rid) + left / 2) / top if top > 0 else 0.0

    def _list(self, rid: ReplicaId, scored: _Scored, seed: int | _TieSeed, load: float) -> int:
        listing = self.listing
        listing.rids.append(rid)
        listing.entries.append(scored)
        listing.seeds.append(seed)
        self.loads.append(load)
        left = self._tokens - scored.weighted
        pressure = self._mid(rid, left)
        self.pressures.append(pressure)
        self.costs.append(left * (self.twice + pressure) + load)
        self._listed.add(rid)
        return len(listing.rids) - 1

    def _list_group(self, members: Iterable[ReplicaId], scored: _Scored,
                    seed: int | _TieSeed | _Scored) -> None:
        values, scale = self._queues.stored()
        for rid in members:
            load = values.get(rid, 0.0) * scale * self.per
            pos = self._list(rid, scored, cast("int | _TieSeed", seed), load)
            heapq.heappush(self._heap, (self.costs[pos], load, _ONE, next(self._seq), pos))


class _Pool(BlockPool):
    """A block pool that records each admission's hit and the age of each block it evicts."""

    def __init__(self, num_blocks: int, block_size: int, fleet: _Fleet) -> None:
        super().__init__(num_blocks, block_size)
        self.fleet = fleet
        self.hits: dict[int, int] = {}  # id(keys) -> hit blocks at admission
        self.freed: dict[int, float] = {}  # block -> when its request freed it
        self.ages: list[float] = []

    def admit(self, keys: Sequence[EventHash], num_tokens: int,
              total_tokens: int) -> Admission | None:
        front = list(zip(self._free, range(-(-total_tokens // self.block_size)), strict=False))
        out = super().admit(keys, num_tokens, total_tokens)
        if out is not None:
            self.hits[id(keys)] = out.hit_blocks
            taken = set(out.blocks)
            evicted = [b for b, _ in front if b in taken and b in self.freed]
            now = self.fleet.now
            self.ages += [now - self.freed.pop(b) for b in evicted[:len(out.removed)]]
        return out

    def release(self, blocks: Sequence[int]) -> None:
        for b in blocks:
            self.freed[b] = self.fleet.now
        super().release(blocks)


def _trace(args: argparse.Namespace, hasher: Hasher) -> Trace:
    cache = args.cache / f"keys-{args.trace}-{args.limit}.pickle"
    if cache.exists():
        with cache.open("rb") as f:
            out: Trace = pickle.load(f)  # our own cache file (keys hashed by this script)
            return out
    with trace_path(args.trace).open(encoding="utf-8") as source:
        out = [(r.arrival, len(r.token_ids), r.output_length,
                [bytes(k) for k in hasher.block_hashes(Request(r.token_ids))])
               for r in read_trace(source, limit=args.limit)]
    args.cache.mkdir(parents=True, exist_ok=True)
    with cache.open("wb") as f:
        pickle.dump(out, f)
    return out


def main(args: argparse.Namespace) -> None:
    report = json.loads((RESULTS / f"{args.trace}-{args.replicas}x{args.blocks}.json")
                        .read_text(encoding="utf-8"))
    if report.get("limit") != args.limit:
        raise SystemExit(f"the scenario's JSON read {report.get('limit')} requests")
    pooled = next(r for r in report["results"] if r["policy"] == "pooled")
    config = SimulationConfig(replicas=args.replicas, blocks_per_replica=args.blocks,
                              policies=("ours",))
    hasher = Hasher(block_size=config.block_size, hash_algo=config.hash_algo,
                    vllm_version=config.vllm_version)
    scheme = ReplicaScheme(hasher)
    requests = _trace(args, hasher)
    start = time.perf_counter()
    if args.pooled:
        print(_pooled_ages(config, scheme, requests)[0])
        return
    fleet = _Fleet("ours", config, scheme)
    pools: list[_Pool] = []
    for r in fleet.replicas:
        r.pool = _Pool(config.blocks_per_replica, config.block_size, fleet)
        pools.append(r.pool)
    names = [r.name for r in fleet.replicas]
    number = {rid: i for i, rid in enumerate(names)}
    prefill = fleet.gateway.prefill
    _Pressure.rounds = args.pressure_rounds
    _Router.variant = args.variant
    _Pressure.stats = defaultdict(float) if args.pressure_stats else None
    if args.variant.startswith("mid"):
        _router_module._CostOrder = _MidOrder  # type: ignore[attr-defined]
    capacity = ({rid: float(args.blocks * config.block_size) for rid in names}
                if args.cache_tokens else None)
    queued = fleet.gateway.backlog.queued
    load = ((lambda rid: prefill[number[rid]]) if args.whole_count
            else lambda rid: queued(rid, fleet.now))
    router = _Router(fleet.index, replicas=names, cache_tokens=capacity,
                     load=None if args.noload else load)
    probe = Router(fleet.index, replicas=names, load=lambda rid: 0.0)  # the index's view
    counts: Counter[str] = Counter()
    decided: list[tuple[Sequence[EventHash], int, list[int], list[int]]] = []
    duplicated: list[int] = []

    def choose(prepared: PreparedRequest, keys: Any) -> tuple[int, float]:
        ranking = router.rank(prepared, limit=None if not args.quick else 1)
        top = ranking[0]
        router.sent(top)
        i = number[top.replica]
        if not args.quick:
            best = max(ranking, key=lambda d: d.hit_tokens)
            if best.hit_tokens > top.hit_tokens:
                by_load = best.load - top.load > (
                    best.pressure * best.prefill_tokens - top.pressure * top.prefill_tokens)
                cause = "passed over by queue" if by_load else "passed over by pressure"
                counts[cause] += best.hit_tokens - top.hit_tokens
                counts[cause + " (requests)"] += 1
        return i, top.prefill_tokens
    fleet.policy = choose
    for n, (arrival, tokens, output, fine) in enumerate(requests, 1):
        prepared = PreparedRequest(tokens)
        keys = prepared.add_keys(scheme, fine)
        published = keys.groups[0]
        fleet.advance(arrival)
        view: list[int] = []
        real: list[int] = []
        if not args.quick:
            held = {d.replica: d.hit_tokens for d in probe.rank(prepared)}
            view = [held.get(rid, 0) for rid in names]
            real = [p.lookup(published, tokens) * config.block_size for p in pools]
        job = _Job(arrival, published, tokens, output)
        fleet.arrive(job, prepared, keys)
        decided.append((published, job.replica, view, real))
        if not args.quick and n % 500 == 0:
            cached = sum(p.cached_keys() for p in pools)
            distinct = len(set().union(*(p._cached.keys() for p in pools)))
            duplicated.append(cached - distinct)
    result = fleet.finish()
    hit_rate = result.hit_tokens / result.prompt_tokens
    ratio = hit_rate / (pooled["hit_tokens"] / pooled["prompt_tokens"])
    print(f"{args.trace} {args.replicas} x {args.blocks}, {len(requests)} requests, pressure "
          f"over {args.pressure_rounds:g} rounds: {result.hit_tokens} hit tokens, "
          f"{ratio:.4f}x pooled; TTFT mean {result.ttft_mean_s:.3f} s, p99 "
          f"{result.ttft_p99_s:.3f} s; busiest replica {result.max_over_mean_requests:.2f}x "
          f"the mean requests; {time.perf_counter() - start:.0f} s")
    stats = _Pressure.stats
    if stats:
        rankings, replicas = stats["rankings"], stats["replicas"]
        print(f"  pressure over {rankings:.0f} rankings: "
              f"{stats['clipped at 1'] / replicas:.3f} of the replicas at 1 (every replica "
              f"at 1 in {stats['rankings with every replica at 1'] / rankings:.3f} of the "
              f"rankings); mean {stats['pressure sum'] / replicas:.3f}, the least "
              f"{stats['least pressure sum'] / rankings:.3f} on the mean ranking; the "
              f"fleet's recent tokens {stats['fleet recent over capacity'] / rankings:.3f}x "
              "its capacity")
    if args.quick:
        return
    for sent_keys, i, view, real in decided:
        got = pools[i].hits.get(id(sent_keys), 0) * config.block_size
        counts["index showed more than the pool held (lag)"] += max(view[i] - real[i], 0)
        counts["lost between arrival and admission"] += max(real[i] - got, 0)
        counts["best real holder at arrival over the chosen"] += max(real) - real[i]
    for name, value in counts.items():
        print(f"  {name}: {value}")
    print(f"  {_ages(pools)}")
    print(f"  blocks cached twice, every 500 requests: {duplicated}")
    if args.by_request:
        _by_request(requests, [i for _, i, _, _ in decided],
                    [pools[i].hits.get(id(k), 0) for k, i, _, _ in decided],
                    _pooled_ages(config, scheme, requests)[1], config.block_size)


def _ages(pools: Sequence[_Pool]) -> str:
    ages = sorted(a for p in pools for a in p.ages)
    if not ages:
        return "no eviction"
    return ("evicted blocks' age (s) at the 10/25/50/75/90th percentiles: " + "/".join(
        f"{ages[int(q * len(ages))]:.0f}" for q in (0.1, 0.25, 0.5, 0.75, 0.9))
        + f" ({len(ages)} evictions)")


def _by_request(requests: Trace, replicas: Sequence[int], fleet: Sequence[int],
                pooled: Sequence[int], block_size: int) -> None:
    """The tokens lost (and gained) against the pooled cache, by kind of request.

    A request continues the last earlier one holding its deepest key if it
    shares at least half of that one's prompt (a conversation's next turn).
    """
    latest: dict[bytes, int] = {}  # each key -> the last request whose prompt held it
    lost: Counter[str] = Counter()
    gained: Counter[str] = Counter()
    count: Counter[str] = Counter()
    for n, (arrival, _, _, fine) in enumerate(requests):
        kind = "new (shares under half of any earlier prompt)"
        depth = next((j for j in range(len(fine) - 1, -1, -1) if fine[j] in latest), -1)
        if depth >= 0:
            earlier = latest[fine[depth]]
            if 2 * (depth + 1) >= len(requests[earlier][3]):  # a conversation's next turn
                gap = arrival - requests[earlier][0]
                bucket = next((f"< {b} s" for b in (60, 120, 240) if gap < b), ">= 240 s")
                where = "same replica" if replicas[earlier] == replicas[n] else "moved"
                kind = f"next turn, {where}, {bucket} after"
        for k in fine:
            latest[k] = n
        delta = (pooled[n] - fleet[n]) * block_size
        count[kind] += 1
        lost[kind] += max(delta, 0)
        gained[kind] += max(-delta, 0)
    print("  against the pooled cache, by request (tokens lost / gained, requests):")
    for kind in sorted(count):
        print(f"    {kind}: {lost[kind]} / {gained[kind]} ({count[kind]})")


def _pooled_ages(config: SimulationConfig, scheme: ReplicaScheme,
                 requests: Trace) -> tuple[str, list[int]]:
    """The pooled cache's eviction ages (one pool of the fleet's blocks, fed every request),
    and each request's hit there (blocks)."""
    fleet = _Fleet(POOLED, config, scheme)
    pool = fleet.replicas[0].pool = _Pool(config.blocks_per_replica * config.replicas,
                                          config.block_size, fleet)
    sent = []
    for arrival, tokens, output, fine in requests:
        prepared = PreparedRequest(tokens)
        keys = prepared.add_keys(scheme, fine)
        fleet.advance(arrival)
        fleet.arrive(_Job(arrival, keys.groups[0], tokens, output), prepared, keys)
        sent.append(keys.groups[0])
    result = fleet.finish()
    return (f"pooled: {result.hit_tokens} hit tokens; {_ages([pool])}",
            [pool.hits.get(id(k), 0) for k in sent])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("trace", choices=("conversation", "synthetic"))
    parser.add_argument("replicas", type=int)
    parser.add_argument("blocks", type=int)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--pressure-rounds", type=float, default=1.0)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--noload", action="store_true",
                        help="no load at all (ours-noload: the Router counts its own sends)")
    parser.add_argument("--whole-count", action="store_true",
                        help="the load as the gateway's prefill sent and not first-tokened, "
                             "the request being prefilled counted whole (before PrefillBacklog)")
    parser.add_argument("--cache-tokens", action="store_true",
                        help="give the Router each replica's capacity (blocks x block size)")
    parser.add_argument("--variant", default="default",
                        choices=("default", "base", "mean", "hmean", "hbase", "mid", "touch",
                                 "midtouch", "smooth", "smoothtouch", "fleetcap"),
                        help="a pressure variant (benchmarks/routing_quality/NOTES.md)")
    parser.add_argument("--pressure-stats", action="store_true",
                        help="with --cache-tokens: how many replicas' pressures sit at 1, "
                             "per ranking")
    parser.add_argument("--pooled", action="store_true",
                        help="the pooled cache's eviction ages instead (one pool, every request)")
    parser.add_argument("--by-request", action="store_true",
                        help="also the gap to the pooled cache by kind of request")
    parser.add_argument("--cache", type=Path, default=CACHE.parent / "routing-diagnose")
    main(parser.parse_args())
