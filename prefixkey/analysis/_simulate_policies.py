"""The routing policies ``prefixkey simulate`` compares, over one gateway's view.

Each policy sees what a gateway in front of the replicas can know: the
shared prefix index fed by the replicas' KV events (through the real encoder,
decoder and :class:`~prefixkey.fleet.PrefixIndex`, late by the event lag),
its own counts of what it sent (:class:`Gateway`), and the engines' metrics
(waiting requests, KV-cache usage: read at decision time, so fresher than any
scrape). Each returns the replica index chosen and the prefill it expects
there (what the gateway counts as queued until the first token).

* ``ours``: :class:`~prefixkey.fleet.Router` at its defaults, fed the
  gateway's queued prefill tokens per replica as
  :class:`~prefixkey.fleet.PrefillBacklog` counts them (the work still
  waiting: the oldest request's prefill less the time since it started at
  the measured rate, from the first tokens the gateway sees) and each replica's KV-cache
  capacity in tokens (``cache_tokens``: blocks per replica x block size), and
  told where each request went (``Router.sent``), as docs/routing.md says to.
* ``ours-noload``: the Router with no load at all (its own count of sends), given
  the capacities too (a static fact of the fleet, not a load).
* ``round-robin``; ``least-outstanding`` (fewest requests sent and not
  finished; ties in rotation); ``rendezvous`` (highest-random-weight hashing
  on the first block key, load ignored).
* ``dynamo``: Dynamo's KV router cost at its documented defaults
  (``overlap_score_weight`` 1, temperature 0): ``prefill_blocks + decode_blocks``,
  where prefill blocks are the worker's in-flight prefill plus this
  request's uncached blocks and decode blocks the worker's active blocks plus
  this request's; the lowest wins (ties: seeded random, as Dynamo's random pick).
* ``llm-d``: llm-d's scorer weights of its optimized baseline, prefix-cache 3,
  queue 2, kv-cache-utilization 2: the prefix score is the share of the
  request's blocks held, the queue score ``(max - q) / (max - min)`` over
  waiting requests (1 when all equal), the KV score ``1 - usage``; the
  highest total wins (ties: the first).
* ``ray-prefix``: Ray Serve's ``PrefixCacheAffinityRouter`` at its defaults
  (``imbalanced_threshold`` infinite, so load never overrides the match;
  ``match_rate_threshold`` 0.1; no eviction), approximated: its tree records
  the prompts it sent to each replica (never what the replicas evicted) and
  matches the longest recorded prefix; the simulator has tokens, not text, so
  a token stands for a character and prefixes are matched whole blocks at a
  time (chained block keys). Below a 10% match it picks the replicas with the
  fewest recorded tokens; among the chosen, the fewest requests sent and not
  finished (Ray's queue length; ties: the first).
* ``sglang``: SGLang router's ``cache_aware`` policy at its documented
  defaults (sglang_router's ``RouterArgs``: ``cache_threshold`` 0.3,
  ``balance_abs_threshold`` 64, ``balance_rel_threshold`` 1.5,
  ``max_tree_size`` 2**26 per worker, evicted every 60 s), approximated like
  ``ray-prefix``: its approximate tree records the prompts it sent to each
  worker (never what the workers evicted), a token standing for a character,
  matched whole blocks at a time. The load is the requests sent and not
  finished; when ``max - min > 64`` and ``max > 1.5 x min`` the least loaded
  worker takes the request (ties: the first); otherwise the worker with the
  longest recorded match if it covers more than 30% of the prompt (several:
  SGLang takes whichever its map yields first, here a seeded random one),
  else the worker with the fewest recorded tokens (ties: seeded random). The
  request is recorded under the chosen worker either way. The tree's
  eviction (a worker's records trimmed to 2**26 characters) is not simulated.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..fleet import PrefixIndex, PreparedRequest, ReplicaId, Router, rendezvous_weight
from ..fleet.routing import PrefillBacklog, SchemeKeys

__all__ = ["POLICIES", "Gateway", "Policy", "PolicyContext", "make_policy"]


@dataclass(slots=True)
class Gateway:
    """What the gateway counts per replica (index = replica number)."""

    requests: list[int]  # sent and not finished
    prefill: list[float]  # expected prefill tokens sent and not yet first-tokened
    active_blocks: list[int]  # Dynamo: blocks of the requests sent and not finished
    waiting: Callable[[int], int] = field(default=lambda i: 0)  # engine metric
    usage: Callable[[int], float] = field(default=lambda i: 0.0)  # engine metric
    clock: Callable[[], float] = field(default=lambda: 0.0)  # the simulated time
    #: ``prefill`` less the work done on each replica's oldest (first tokens seen).
    backlog: PrefillBacklog = field(default_factory=PrefillBacklog)


@dataclass(slots=True)
class PolicyContext:
    """What a policy is built with."""

    index: PrefixIndex
    replicas: Sequence[ReplicaId]
    gateway: Gateway
    block_size: int
    seed: int
    blocks: int  # KV-cache blocks per replica


#: A decision: (replica number, expected prefill tokens there).
Policy = Callable[[PreparedRequest, SchemeKeys], tuple[int, float]]


def _ours(ctx: PolicyContext, with_load: bool) -> Policy:
    number = {rid: i for i, rid in enumerate(ctx.replicas)}
    queued, clock = ctx.gateway.backlog.queued, ctx.gateway.clock
    router = Router(ctx.index, replicas=ctx.replicas,
                    load=(lambda rid: queued(rid, clock())) if with_load else None,
                    cache_tokens=dict.fromkeys(ctx.replicas, ctx.blocks * ctx.block_size))

    def choose(prepared: PreparedRequest, keys: SchemeKeys) -> tuple[int, float]:
        top = router.rank(prepared, limit=1)[0]
        router.sent(top)  # the gateway sends it there (the cache pressure; no-op without load)
        return number[top.replica], top.prefill_tokens
    return choose


def _hits(ctx: PolicyContext) -> Callable[[PreparedRequest], list[int]]:
    """Each replica's reusable tokens, from the index (the Router's walk, loads aside)."""
    number = {rid: i for i, rid in enumerate(ctx.replicas)}
    router = Router(ctx.index, replicas=ctx.replicas, load=lambda rid: 0.0)

    def hits(prepared: PreparedRequest) -> list[int]:
        out = [0] * len(ctx.replicas)
        for d in router.rank(prepared):
            out[number[d.replica]] = d.hit_tokens
        return out
    return hits


def _round_robin(ctx: PolicyContext) -> Policy:
    state = [0]

    def choose(prepared: PreparedRequest, keys: SchemeKeys) -> tuple[int, float]:
        i = state[0] % len(ctx.replicas)
        state[0] += 1
        return i, float(prepared.num_tokens)
    return choose


def _least_outstanding(ctx: PolicyContext) -> Policy:
    state = [0]
    n = len(ctx.replicas)
    requests = ctx.gateway.requests

    def choose(prepared: PreparedRequest, keys: SchemeKeys) -> tuple[int, float]:
        start = state[0]
        state[0] += 1
        i = min(range(n), key=lambda j: (requests[j], (j - start) % n))
        return i, float(prepared.num_tokens)
    return choose


def _rendezvous(ctx: PolicyContext) -> Policy:
    def choose(prepared: PreparedRequest, keys: SchemeKeys) -> tuple[int, float]:
        weights = [rendezvous_weight(keys.affinity, rid) for rid in ctx.replicas]
        return max(range(len(weights)), key=weights.__getitem__), float(prepared.num_tokens)
    return choose


def _dynamo(ctx: PolicyContext) -> Policy:
    hits = _hits(ctx)
    rng = random.Random(ctx.seed)
    gw, bs = ctx.gateway, ctx.block_size

    def choose(prepared: PreparedRequest, keys: SchemeKeys) -> tuple[int, float]:
        n = prepared.num_tokens
        blocks = -(-n // bs)
        held = hits(prepared)
        # overlap_score_weight 1.0 x prefill blocks + decode blocks
        costs = [1.0 * (gw.prefill[i] + n - hit) / bs + gw.active_blocks[i] + blocks
                 for i, hit in enumerate(held)]
        best = min(costs)
        i = rng.choice([j for j, c in enumerate(costs) if c == best])
        return i, float(n - held[i])
    return choose


def _llm_d(ctx: PolicyContext) -> Policy:
    hits = _hits(ctx)
    gw, bs = ctx.gateway, ctx.block_size
    n_rep = len(ctx.replicas)

    def choose(prepared: PreparedRequest, keys: SchemeKeys) -> tuple[int, float]:
        n = prepared.num_tokens
        total_blocks = max(n // bs, 1)
        held = hits(prepared)
        waiting = [gw.waiting(i) for i in range(n_rep)]
        lo, hi = min(waiting), max(waiting)
        best_i, best = 0, -1.0
        for i in range(n_rep):
            prefix = (held[i] // bs) / total_blocks
            queue = 1.0 if hi == lo else (hi - waiting[i]) / (hi - lo)
            kv = 1.0 - gw.usage(i)
            score = 3 * prefix + 2 * queue + 2 * kv
            if score > best:
                best_i, best = i, score
        return best_i, float(n - held[best_i])
    return choose


class _SentTree:
    """What a text-tree router records (Ray's and SGLang's, a block at a time): per chained
    block key the replicas it was sent to, and the tokens recorded per replica (their
    tenant sizes)."""

    def __init__(self, n_rep: int, block_size: int) -> None:
        self.sent_to: dict[object, set[int]] = {}
        self.recorded = [0] * n_rep
        self.block_size = block_size

    def match(self, blocks: Sequence[object]) -> tuple[int, set[int]]:
        """The longest recorded prefix in tokens and its replicas (none matched: empty)."""
        matched, holders = 0, set[int]()
        for j, key in enumerate(blocks):
            who = self.sent_to.get(key)
            if not who:
                break
            matched, holders = (j + 1) * self.block_size, who
        return matched, holders

    def smallest(self) -> list[int]:
        """The replicas with the fewest recorded tokens."""
        least = min(self.recorded)
        return [j for j, n in enumerate(self.recorded) if n == least]

    def record(self, blocks: Sequence[object], replica: int) -> None:
        """The request's blocks recorded under the chosen replica (after routing)."""
        new = 0
        for key in blocks:
            who = self.sent_to.setdefault(key, set())
            if replica not in who:
                who.add(replica)
                new += 1
        self.recorded[replica] += new * self.block_size


def _ray_prefix(ctx: PolicyContext) -> Policy:
    tree = _SentTree(len(ctx.replicas), ctx.block_size)
    requests = ctx.gateway.requests

    def choose(prepared: PreparedRequest, keys: SchemeKeys) -> tuple[int, float]:
        n = prepared.num_tokens
        blocks = keys.groups[0]
        matched, holders = tree.match(blocks)
        hit = matched if n and matched / n >= 0.1 else 0
        if not hit:  # below match_rate_threshold: the smallest tenants
            holders = set(tree.smallest())
        i = min(holders, key=lambda j: (requests[j], j))
        tree.record(blocks, i)
        return i, float(n - hit)
    return choose


def _sglang(ctx: PolicyContext) -> Policy:
    n_rep = len(ctx.replicas)
    tree = _SentTree(n_rep, ctx.block_size)
    rng = random.Random(ctx.seed)
    requests = ctx.gateway.requests

    def choose(prepared: PreparedRequest, keys: SchemeKeys) -> tuple[int, float]:
        n = prepared.num_tokens
        blocks = keys.groups[0]
        matched, holders = tree.match(blocks)
        hi, lo = max(requests), min(requests)
        hit = matched
        if hi - lo > _SGLANG_ABS and hi > lo * _SGLANG_REL:  # imbalanced: shortest queue
            i = min(range(n_rep), key=lambda j: (requests[j], j))
            hit = matched if i in holders else 0
        elif n and matched / n > _SGLANG_CACHE:
            i = rng.choice(sorted(holders))
        else:  # the smallest tenant
            i = rng.choice(tree.smallest())
            hit = matched if i in holders else 0
        tree.record(blocks, i)
        return i, float(n - hit)
    return choose


#: SGLang router's cache-aware defaults (sglang_router ``RouterArgs``).
_SGLANG_CACHE, _SGLANG_ABS, _SGLANG_REL = 0.3, 64, 1.5


POLICIES: dict[str, Callable[[PolicyContext], Policy]] = {
    "ours": lambda ctx: _ours(ctx, True),
    "ours-noload": lambda ctx: _ours(ctx, False),
    "round-robin": _round_robin,
    "least-outstanding": _least_outstanding,
    "rendezvous": _rendezvous,
    "dynamo": _dynamo,
    "llm-d": _llm_d,
    "ray-prefix": _ray_prefix,
    "sglang": _sglang,
}


def make_policy(name: str, ctx: PolicyContext) -> Policy:
    return POLICIES[name](ctx)
