"""Rank replicas for a request by its expected time to first token there (sans-IO).

For each candidate the request's block keys are computed under that
replica's :class:`~prefixkey.fleet.ReplicaScheme` (once per distinct scheme
within a call), then the index is asked for the longest run of consecutive
blocks, from block 0, that the replica holds on some medium
(``leading_runs``: one call for every scheme and group, walking the keys
once for all the candidates).

vLLM's lookup caps a hit at ``num_tokens - 1`` tokens, so a prompt that is an
exact multiple of the block size never hits its last block: the cap is
applied first. With several KV-cache groups every group must hit
(full-attention groups only): the hit is the smallest group hit, aligned down
to the LCM of the group block sizes, as vLLM's hybrid coordinator does.

**The cost model.** One unit: *prefill tokens* (the work a replica does at
its prefill rate before the request's first token; divide by that rate for
seconds, which no decision needs). A candidate's cost is

    cost = queued(replica) + (1 + 1/(1 - utilization) + pressure(replica))
                             * (num_tokens - saved(replica))

``queued + (num_tokens - saved)`` is the request's own wait for its first
token there; the prefill it needs is counted again because it is also work
added to the fleet, which the requests sent there after it queue behind: a
unit of work added to a queue at utilization ``u`` stretches its busy
period by ``1/(1 - u)`` units (M/G/1), so a held block saves its tokens
once for this request and ``1/(1 - u)`` times for the next ones (twice in
all on an idle fleet; the pooled-cache hit rate comes from not spending
work twice on the same prefix). ``utilization`` is ``L / (1 + L)``, ``L``
the candidates' mean given load in requests (tokens over the running mean
prefill of the requests reported :meth:`Router.sent`), as a queue fed at random holds ``u / (1 -
u)`` requests on average: so ``1/(1 - u) = 1 + L`` and the factor is ``2 +
L``. 0 without a load. ``queued`` is the prefill work
already waiting there (``load``, in tokens, or in requests with
``load_unit="requests"``, converted at the Router's running mean of the
prefill a routed request needs); ``saved`` is the hit,
each reused block counting ``tier_weights[medium]`` of its tokens (a GPU
block saves all of its prefill, a CPU block 0.8 of it: loading it back costs
the rest). ``pressure`` (in [0, 1]) is what storing the request's new
blocks there evicts: the chance that a block pushed out is one worth
keeping, counted as a prefill token the fleet may do again (``_pressure``:
with each replica's KV-cache capacity given, ``cache_tokens``, and a load,
its recent prompt tokens over its capacity, recent meaning within the window
one pool of the fleet's blocks keeps; otherwise the prefill it stored lately
over the busiest's, decaying by ``1 - 1/replicas`` per decision). Without a load the
Router counts its first choices; with one, the caller reports where each
request went (:meth:`Router.sent`, where it adds the request to its own
queued counts). Without this term every request holding a shared system
prompt goes to the replicas already holding it, and replicas that never
served stay empty (their caches unused) while the holders churn theirs.
The lowest cost ranks first; equal costs go to the lower queue, then to the
rendezvous weight (:func:`rendezvous_weight`: for replicas
holding a prefix, on the first key of the request none of them holds, so
requests sharing only a held system prompt spread; for replicas holding
nothing, on the request's first block key), so when no candidate holds a
block the order is the least queued replica, rendezvous among equals: the
fallback is load-aware.
Without any load the Router counts what it sent itself: each ranking's
first candidate is taken as the replica the request goes to, and its
needed prefill is queued there, decaying by ``1 - 1/replicas`` per decision
(so a replica that got every recent request is not sent the next one unless
it saves more than it has queued).

Every replica given as ``replicas`` is a candidate from the start, even
before the index has registered it (a fresh vLLM publishes nothing until it
serves): it holds nothing, so it costs its queue plus twice the prompt
(``_candidates`` resolves the candidates and groups them by scheme).

Hashing and routing are separable: :meth:`Router.prepare` hashes (timed in
:attr:`PreparedRequest.hash_seconds`), :meth:`Router.rank` only reads the
index, and :meth:`PreparedRequest.add_keys` accepts keys computed elsewhere.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Final, Literal, cast

from ...core import BlockHash, Request, TokenIds, check_token_ids
from ...core._checks import check_int, check_number, number_refusal
from ...errors import InvalidRequestError
from .._replicas import ReplicaId, ReplicaScheme
from ..index._backend import RoutingIndex, RunsQuery
from ..index._memory import PrefixIndex
from ..index._ops import medium_name
from ..index._walk import Run
from ._candidates import Candidates, replica_id
from ._cost_order import (
    _Answer,
    _CostOrder,
    _Group,
    _Runs,
    _Scored,
    _segment_saved,
)
from ._decision import (
    PREDICTED,
    Evidence,
    RouteDecision,
    _evidence,
    _new_decision,
    _Outcome,
    _why,
)
from ._metrics import RouterMetrics
from ._prepared import PreparedRequest, rendezvous_seed
from ._pressure import CachePressure, no_pressure
from ._queues import Queues
from ._ranking import LazyRanking
from ._top1 import slot_bits, walked_best

__all__ = [
    "DEFAULT_TIER_WEIGHTS",
    "PREDICTED",
    "Evidence",
    "LoadFn",
    "LoadUnit",
    "RouteDecision",
    "Router",
]

#: Weight of a block hit per storage medium (media not listed: ``other_tier_weight``).
DEFAULT_TIER_WEIGHTS: Final[Mapping[str, float]] = {"GPU": 1.0, "CPU": 0.8, "STORAGE": 0.5}

#: A replica's queued prefill work: tokens (``load_unit="tokens"``, the default)
#: or requests (``load_unit="requests"``).
LoadFn = Callable[[ReplicaId], float]

#: The units a load may be given in.
LoadUnit = Literal["tokens", "requests"]

_NO_MEDIA: Final[frozenset[str]] = frozenset()


class Router:
    """Ranks candidate replicas by expected time to first token, from any
    :class:`~prefixkey.fleet.RoutingIndex` backend.

    See the module docs. ``load`` gives a replica's queued prefill work in
    ``load_unit`` (a callable read at each ranking); :meth:`set_load` pushes it
    instead. ``replicas`` are candidates from the start, registered or not.
    ``cache_tokens`` gives each replica's KV-cache capacity in tokens (optional;
    :meth:`set_cache_tokens` sets one later): the cache pressure's scale.
    ``metrics`` counts its decisions (:class:`RouterMetrics`).
    """

    def __init__(
        self,
        index: RoutingIndex,
        *,
        tier_weights: Mapping[str, float] = DEFAULT_TIER_WEIGHTS,
        other_tier_weight: float = 0.5,
        load: LoadFn | None = None,
        load_unit: LoadUnit = "tokens",
        replicas: Iterable[ReplicaId | str] = (),
        cache_tokens: Mapping[ReplicaId | str, float] | None = None,
    ) -> None:
        for name, w in {**tier_weights, "other": other_tier_weight}.items():
            if not isinstance(name, str):
                raise InvalidRequestError("tier_weights",
                                          f"keys must be media names, got {name!r}")
            if not isinstance(w, (int, float)) or not 0 <= w <= 1:
                raise InvalidRequestError("tier_weights", f"{name}: must be in [0, 1], got {w!r}")
        if load_unit not in ("tokens", "requests"):
            raise InvalidRequestError("load_unit",
                                      f"must be 'tokens' or 'requests', got {load_unit!r}")
        if load is not None and not callable(load):
            raise InvalidRequestError("load", f"must be a callable or None, got {load!r}")
        self.index = index
        # Keys name media as the index holds them (medium_name: ASCII letters
        # upper-cased only), so 'ß' and 'SS' stay two media here as there.
        weights: dict[str, float] = {}
        for name, w in tier_weights.items():
            held = medium_name(name)
            if weights.get(held, float(w)) != float(w):
                raise InvalidRequestError(
                    "tier_weights", f"{name}: names the same medium as another key ({held!r}) "
                    f"with another weight ({weights[held]!r} and {float(w)!r})")
            weights[held] = float(w)
        self.tier_weights = weights
        self.other_tier_weight = float(other_tier_weight)
        self.load = load
        self.load_unit: LoadUnit = load_unit
        self.replicas: tuple[ReplicaId, ...] = tuple(dict.fromkeys(map(replica_id, replicas)))
        self.metrics = RouterMetrics()
        # Pushed loads (:meth:`set_load`, in load_unit), or the Router's own queue
        # estimate (tokens) while nothing is pushed and no load callable is given.
        self._queues = Queues()
        if cache_tokens is not None and not isinstance(cache_tokens, Mapping):
            raise InvalidRequestError(
                "cache_tokens", f"must be a mapping of replica to tokens, got {cache_tokens!r}")
        #: What the Router's recent first choices stored per replica, and each
        #: replica's KV-cache capacity when given: the cache pressure (``_pressure``).
        self._pressure = CachePressure(
            (replica_id(r), t) for r, t in (cache_tokens or {}).items())
        self._pressure.loaded = load is not None
        self._last_total = 2  # the candidates of the last ranking: the pressure's decay
        self._pushed = False
        self._tracked: object = None  # the registrations last tracked in _queues
        #: The running mean of the prefill a ranking's first choice needs (tokens):
        #: what a queued request is worth with ``load_unit="requests"``.
        self.mean_prefill_tokens = 0.0
        #: The running mean of the prefill the requests reported :meth:`sent` needed.
        self._sent_prefill = 0.0
        #: Per media mask: its best weight, that medium's name, and the name as a set
        #: (an outcome's ``used``: made once, not per decision).
        self._mask_weights: dict[int, tuple[float, str, frozenset[str]]] = {}
        #: The in-memory index's slot table last walked, and each replica's bit in it.
        self._slot_bits: tuple[object, dict[ReplicaId, int]] = (None, {})
        self._bit_weights: list[tuple[int, float, str]] = []
        self._counted = 0  # bits of the media with a positive weight: those that hit
        self._bits_seen = -1
        #: The candidates of a ranking, and their schemes (``_candidates``).
        self._candidates = Candidates()

    # -- load ---------------------------------------------------------------

    def set_load(self, replica: ReplicaId | str, queued: float) -> None:
        """Push a replica's queued prefill work, in ``load_unit`` (read until pushed again).

        Pushed loads are kept in load order (a ranking reads the least queued
        first without reading the fleet); they are used when no ``load``
        callable is given, and a replica never pushed counts 0.
        """
        check_number("load", queued)
        if not self._pushed:  # the Router's own estimate gives way to pushed loads
            self._pushed, self._queues, self._tracked = True, Queues(), None
            if not self._pressure.loaded:
                self._pressure.loaded = True
                self._pressure.clear()
        self._queues.set(replica_id(replica), float(queued))

    def _queue_view(self, schemes: Mapping[ReplicaId, ReplicaScheme],
                    extra: tuple[ReplicaId, ...], num_tokens: int,
                    ) -> tuple[Queues, float, float]:
        """The candidates' queues, the factor that turns them into tokens, and the fleet's
        prefill utilization as a caller's load shows it (0 without one).

        The utilization is ``L / (1 + L)``, ``L`` the candidates' mean queue in
        requests (their queued tokens over the running mean prefill of the
        requests reported :meth:`sent`, or this request's tokens before any
        report, so a ranking stays a pure function of the index and the loads
        between reports): a queue fed at random holds ``L = u / (1 - u)`` on
        average (M/M/1). The Router's own estimate (no load) is not a queue: it
        sets none. One call for the three: a top-1 ranking counts each call.
        """
        per = 1.0
        if self.load is None:
            queues = self._queues
            if self._tracked is not schemes or extra:
                queues.ensure(schemes)
                queues.ensure(extra)
                self._tracked = schemes
            if not self._pushed:
                return queues, per, 0.0
            if self.load_unit == "requests":
                per = self.mean_prefill_tokens or float(num_tokens)
        else:
            if self.load_unit == "requests":
                per = self.mean_prefill_tokens or float(num_tokens)
            rids = [*schemes, *extra]
            loads = list(map(self.load, rids))
            try:
                ok = math.isfinite(math.fsum(loads)) and min(loads, default=0) >= 0
            except TypeError:
                ok = False
            if not ok or any(type(v) is bool for v in loads):
                for rid, v in zip(rids, loads, strict=True):
                    refusal = number_refusal(v)
                    if refusal is not None:
                        raise InvalidRequestError("load", f"for {rid}: {refusal}")
            queues = Queues.of(zip(rids, map(float, loads), strict=True))
        n = len(queues)
        if n == 0:
            return queues, per, 0.0
        mean = queues.total() * per / n / (self._sent_prefill or float(num_tokens or 1))
        return queues, per, mean / (1 + mean)

    def set_cache_tokens(self, replica: ReplicaId | str, tokens: float | None) -> None:
        """Set a replica's KV-cache capacity in tokens (vLLM's ``kv_cache_size_tokens``):
        with a load, the cache pressure then counts what a request's stores evict there
        (module docs). None forgets it (a replica that left the fleet)."""
        self._pressure.set_capacity(replica_id(replica), tokens)

    def pressure(self, replica: ReplicaId | str) -> float:
        """The replica's cache pressure in [0, 1] (``_pressure``): with capacities and a
        load, its recent tokens over its capacity; otherwise its recent stores over the
        busiest's."""
        return self._pressure.of()(replica_id(replica))

    def sent(self, decision: RouteDecision) -> None:
        """Report that the request of ``decision`` was sent to its replica (with a load given).

        Its ``prefill_tokens`` count as stored there (the cache pressure, module
        docs). Call it where the gateway adds the request to its own queued
        count. Without a load the Router counts its first choices itself and
        this does nothing; with a load and no report, every pressure stays 0.
        """
        if self.load is None and not self._pushed:
            return
        tokens = decision.prefill_tokens
        self._sent_prefill += (tokens - self._sent_prefill) / 64 if self._sent_prefill else tokens
        self._pressure.store(decision.replica, tokens, tokens + decision.weighted_hit_tokens,
                             self._last_total)

    def _sent(self, replica: ReplicaId, tokens: float, num_tokens: int, replicas: int) -> None:
        """Count a first choice: its prefill joins the Router's own queue estimate."""
        alpha = 1 / 64
        self.mean_prefill_tokens += alpha * (tokens - self.mean_prefill_tokens) if (
            self.mean_prefill_tokens) else tokens
        if self.load is not None or self._pushed:
            return  # the caller reports its sends (:meth:`sent`)
        self._pressure.store(replica, tokens, num_tokens, replicas)
        self._queues.decay(1 - 1 / max(replicas, 2))
        self._queues.add(replica, tokens)

    # -- hashing ------------------------------------------------------------

    def prepare(
        self, request: Request | Sequence[int], candidates: Iterable[ReplicaId | str] | None = None
    ) -> PreparedRequest:
        """Hash ``request`` once per distinct scheme among the candidates."""
        if not isinstance(request, Request):
            request = Request(request)
        if type(request.token_ids) is not TokenIds:
            # Checked once for every scheme, and NumPy scalars become ints for the digest.
            request = replace(request, token_ids=check_token_ids(request.token_ids))
        request.check_inside(len(request.token_ids))
        prepared = PreparedRequest(len(request.token_ids), request)
        hashed: dict[tuple[object, ...], list[BlockHash]] = {}
        start = time.perf_counter()
        schemes = self._candidates.of(self.index.replicas(), self.replicas, candidates)[0]
        for scheme, _ in self._candidates.grouping(schemes).values():
            if scheme.key in prepared._schemes:
                continue
            fine = hashed.get(scheme.hash_key)
            if fine is None:
                fine = hashed[scheme.hash_key] = scheme.hasher.block_hashes(request)
            prepared._add(scheme, fine, None, digests=True)
        prepared.hash_seconds = time.perf_counter() - start
        return prepared

    # -- routing ------------------------------------------------------------

    def route(
        self, request: Request | Sequence[int] | PreparedRequest,
        candidates: Iterable[ReplicaId | str] | None = None, *, limit: int | None = None,
    ) -> Sequence[RouteDecision]:
        """Rank the candidates (all registered and configured replicas by default), best first."""
        if candidates is not None and not isinstance(candidates, (tuple, list)):
            candidates = tuple(candidates)  # read twice (hashed, then ranked): an iterator once
        if not isinstance(request, PreparedRequest):
            request = self.prepare(request, candidates)
        return self.rank(request, candidates, limit=limit)

    def rank(
        self, prepared: PreparedRequest, candidates: Iterable[ReplicaId | str] | None = None,
        *, limit: int | None = None,
    ) -> Sequence[RouteDecision]:
        """Rank the candidates for an already hashed request (reads the index only).

        The index is read before this returns (a later ``apply`` never changes
        the ranking); the ranking is a :class:`~collections.abc.Sequence`
        whose ties are put in rendezvous order, and whose decisions are built,
        when first read (equal to the list of them all). ``limit`` keeps only
        the first ``limit`` decisions (the full ranking's head; ``rank`` and
        ``total`` in the explanations still count every candidate); with
        ``limit=1`` over the in-memory index and loads the Router keeps (pushed,
        or its own estimate), the best candidate is found in one pass over the
        walk and the queues (``_top1``) and returned in a list. Without a
        load, the first candidate is counted as sent (the Router's own queue
        estimate).
        """
        if limit is not None and (type(limit) is not int or limit < 1):
            check_int("limit", limit, optional=True)  # refused (bools too), naming the field
        schemes, extra = self._candidates.of(self.index.replicas(), self.replicas, candidates)
        self._refresh_weights()
        num_tokens = prepared.num_tokens
        total = len(schemes) + len(extra)
        answers: list[_Answer] | None = None
        if limit == 1 and self.load is None:  # a top-1 ranking from one walk, in one pass
            top = self._walked_top1(prepared, schemes, extra, total)
            if type(top) is RouteDecision:
                return [top]
            if top is not None:  # a tie: rendezvous weights order it, on the general path
                answers = [cast(_Answer, top)]  # (the same walk)
        if answers is None:
            answers = self._answers(schemes, prepared) if schemes else []
        queues, per, utilization = self._queue_view(schemes, extra, num_tokens)
        order = _CostOrder(self, prepared, schemes, extra, queues, per, answers,
                           self._pressure.of(), 1 + 1 / (1 - utilization))
        fallback = order.fallback
        listing = order.listing
        outcomes: dict[int, _Outcome] = {}  # id(scored) -> its outcome, once read

        def build(i: int, rank: int) -> RouteDecision:
            entry = listing.entries[i]
            o = outcomes.get(id(entry))
            if o is None:
                o = outcomes[id(entry)] = self._outcome(entry.scheme, entry.runs, num_tokens)
            return self._decision(listing.rids[i], o, num_tokens, order.loads[i], order.costs[i],
                                  order.pressures[i], fallback, rank, total, order.twice,
                                  utilization)

        ranking = LazyRanking(order.groups(), total if limit is None else min(limit, total),
                              listing.tie_order, build)
        if total:
            self._chosen(ranking[0], num_tokens, total)
        return ranking

    def _decision(self, rid: ReplicaId, o: _Outcome, num_tokens: int, load: float, cost: float,
                  pressure: float, fallback: bool, rank: int, total: int, twice: float,
                  utilization: float) -> RouteDecision:
        why = functools.partial(_why, rid, o, num_tokens, load, cost, pressure,
                                fallback, rank, total, twice)
        return _new_decision(rid, rank, -cost, o.hit_tokens, o.matched, o.weighted,
                             load, fallback, o.used, why, _evidence(o), cost,
                             num_tokens - o.weighted, pressure, utilization)

    def _chosen(self, top: RouteDecision, num_tokens: int, total: int) -> None:
        """Count a ranking's first decision (metrics, and the Router's own estimate)."""
        self._last_total = total
        self.metrics.observe(top.hit_tokens, num_tokens, top.fallback,
                             top.evidence == "predicted")
        self._sent(top.replica, top.prefill_tokens, num_tokens, total)

    def _walked_top1(self, prepared: PreparedRequest,
                     schemes: Mapping[ReplicaId, ReplicaScheme], extra: tuple[ReplicaId, ...],
                     total: int) -> RouteDecision | _Answer | None:
        """A top-1 ranking of one walk, in one pass (``_top1``), counted as the first choice.

        On a tie, the walk's answer for the general path (which orders the tie by
        rendezvous weights); None when :meth:`_answers` must ask (another backend, several
        schemes, groups or media). One method from the walk to the count (a top-1 ranking
        at 64 replicas and 1k tokens costs about 40 µs cold, and each call was about 1 µs).
        """
        index = self.index
        if type(index) is not PrefixIndex or not schemes:
            return None
        todo = self._candidates.grouping(schemes)
        if len(todo) != 1:
            return None
        (scheme, group), = todo.values()
        keys = prepared.keys_for(scheme)
        walk = index._prefix_walk(tuple(group), keys.groups,
                                  self._counted)
        if walk is None:
            return None
        num_tokens = prepared.num_tokens
        queues, per, utilization = self._queue_view(schemes, extra, num_tokens)
        bits = self._slot_bits
        if bits[0] is not walk.slots:
            bits = self._slot_bits = (walk.slots, slot_bits(walk.slots))
        pressure = self._pressure.of()
        twice = 1 + 1 / (1 - utilization)
        block = scheme.groups[0].block_size
        best = walked_best(walk.ands, walk.slots, bits[1],
                           self._mask_weight(walk.medium)[0], block, num_tokens, twice, per,
                           queues.ascending_stored(),
                           None if pressure is no_pressure else pressure, schemes, extra)
        if best is None:
            return _Answer(scheme, rendezvous_seed(keys.affinity), walk.groups(), True)
        longest = len(walk.ands) - 1  # keys walked by the longest run (-1: no candidate)
        fallback = not min(longest, max(num_tokens - 1, 0) // block) > 0
        if best.walked:
            o = self._run_outcome(walk.medium, best.walked, block, num_tokens)
        else:
            own = schemes.get(best.replica)
            o = self._outcome(own, tuple(() for _ in own.groups) if own else (), num_tokens)
        top = self._decision(best.replica, o, num_tokens, best.load, best.cost, best.pressure,
                             fallback, 1, total, twice, utilization)
        self._chosen(top, num_tokens, total)
        return top

    def _scored_groups(self, answer: _Answer, num_tokens: int) -> Iterator[_Group]:
        """An answer's groups, each scored."""
        for runs, members in answer.groups:
            scored = self._scored(answer.scheme, runs, num_tokens)
            yield _Group(-scored.weighted, scored, members, answer.seed)

    def _refresh_weights(self) -> None:
        index = self.index
        if type(index) is PrefixIndex and len(index._medium_bits) == self._bits_seen:
            return  # media are only ever added: their count says (no copy of the names)
        bits = index.medium_bits()
        if len(bits) == self._bits_seen:
            return
        self._bits_seen = len(bits)
        self._bit_weights = [(bit, self.tier_weights.get(name, self.other_tier_weight), name)
                             for name, bit in bits.items()]
        self._counted = sum(bit for bit, weight, _ in self._bit_weights if weight > 0)
        self._mask_weights = {}

    def _mask_weight(self, mask: int) -> tuple[float, str, frozenset[str]]:
        hit = self._mask_weights.get(mask)
        if hit is None:
            weight, name = max(((w, n) for b, w, n in self._bit_weights if mask & b),
                               default=(0.0, ""))
            hit = self._mask_weights[mask] = (weight, name, frozenset((name,)))
        return hit

    def _answers(
        self, schemes: Mapping[ReplicaId, ReplicaScheme], prepared: PreparedRequest,
    ) -> list[_Answer]:
        """The index's answers for the candidates, one :meth:`RoutingIndex.leading_runs` call.

        A candidate re-registered with another scheme since :meth:`replicas`
        was read is hashed under its new scheme and asked again (twice at
        most; then it counts as holding nothing).
        """
        todo = self._candidates.grouping(schemes)
        out: list[_Answer] = []
        for attempt in range(3):
            queries: list[RunsQuery] = []
            affinities: list[bytes] = []
            for scheme, group in todo.values():
                keys = prepared.keys_for(scheme)
                queries.append(RunsQuery(scheme, tuple(group), keys.groups))
                affinities.append(keys.affinity)
            changed: dict[tuple[object, ...], tuple[ReplicaScheme, list[ReplicaId]]] = {}
            for query, affinity, answer in zip(
                    queries, affinities, self.index.leading_runs(queries, self._counted),
                    strict=True):
                scheme = query.scheme
                seed = rendezvous_seed(affinity)
                if answer.ordered:  # holds runs only
                    out.append(_Answer(scheme, seed, cast("Sequence[_Runs]", answer.groups), True))
                    continue
                kept: list[_Runs] = []
                for result, members in answer.groups:
                    if isinstance(result, ReplicaScheme):
                        if attempt < 2:
                            changed.setdefault(result.key, (result, []))[1].extend(members)
                            continue
                        result = tuple(() for _ in scheme.groups)
                    kept.append((result, members))
                out.append(_Answer(scheme, seed, kept, False))
            if not changed:
                break
            todo = changed
        return out

    def _scored(self, scheme: ReplicaScheme, runs: tuple[Run, ...], num_tokens: int) -> _Scored:
        if not any(runs):  # holds nothing (no run, or an empty run per group)
            return _Scored(0.0, 0, scheme, runs)
        if len(runs) == 1 and len(runs[0]) == 1:  # :meth:`_outcome`'s usual case, cut short
            (mask, n), = runs[0]
            bs = scheme.groups[0].block_size
            weighted, hit = _segment_saved(self._mask_weight(mask)[0], n, bs,
                                           max(num_tokens - 1, 0) // bs)
            return _Scored(weighted, hit, scheme, runs)
        o = self._outcome(scheme, runs, num_tokens)
        return _Scored(o.weighted, o.hit_tokens, scheme, runs)

    def _run_outcome(self, mask: int, n: int, bs: int, num_tokens: int) -> _Outcome:
        """:meth:`_outcome` of one group's run of ``n`` keys on the media of ``mask``."""
        blocks = min(n, max(num_tokens - 1, 0) // bs)
        weight, medium, used = self._mask_weight(mask)
        # tuple.__new__ in C: a NamedTuple's own __new__ is a Python frame (a top-1
        # ranking builds one outcome, and every step of it is counted).
        return tuple.__new__(_Outcome, ((n,), blocks * bs, weight * blocks * bs, medium,
                                        n > blocks, used if blocks else _NO_MEDIA))

    def _outcome(self, scheme: ReplicaScheme | None, runs: tuple[Run, ...],
                 num_tokens: int) -> _Outcome:
        if scheme is None or not runs:
            return _Outcome((), 0, 0.0, "", capped=False, used=frozenset())
        if not any(runs):  # an empty run per group: what the general case below gives
            return _Outcome((0,) * len(runs), 0, 0.0, "", capped=False, used=frozenset())
        cap = max(num_tokens - 1, 0)
        if len(runs) == 1 and len(runs[0]) == 1:  # one group, one medium: the usual case
            (mask, n), = runs[0]
            return self._run_outcome(mask, n, scheme.groups[0].block_size, num_tokens)
        matched = tuple(sum(n for _, n in run) for run in runs)
        hit = cap
        for run_len, spec in zip(matched, scheme.groups, strict=True):
            hit = min(hit, min(run_len, cap // spec.block_size) * spec.block_size)
        hit -= hit % math.lcm(*(g.block_size for g in scheme.groups))
        weighted = 0.0
        media: set[str] = set()
        counted: set[str] = set()
        for run, g in zip(runs, scheme.groups, strict=True):
            used = hit // g.block_size  # blocks of the run vLLM would reuse
            for mask, n in run:
                weight, medium, _ = self._mask_weight(mask)
                weighted += weight * min(n, max(used, 0)) * g.block_size
                if used > 0:
                    counted.add(medium)
                used -= n
                media.add(medium)
        weighted /= len(runs)
        full = min(run_len * g.block_size
                   for run_len, g in zip(matched, scheme.groups, strict=True))
        return _Outcome(matched, hit, weighted, "+".join(sorted(media)), capped=full > hit,
                        used=frozenset(counted))

