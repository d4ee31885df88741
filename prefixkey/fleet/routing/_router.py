"""Rank replicas for a request by how much of its prefix they hold (sans-IO).

For each candidate the request's block keys are computed under that
replica's :class:`~prefixkey.fleet.ReplicaScheme` (once per distinct scheme
within a call), then the index is asked for the longest run of consecutive
blocks, from block 0, that the replica holds on some medium
(``leading_runs``: one call for every scheme and group, walking the keys
once for all the candidates). Each matched block counts with the best weight
among the media holding it
(``tier_weights``: GPU 1.0 > CPU 0.8 > STORAGE 0.5 by default; a medium
weighted 0 does not count as a hit).

vLLM's lookup caps a hit at ``num_tokens - 1`` tokens, so a prompt that is an
exact multiple of the block size never hits its last block: the cap is
applied before scoring. With several KV-cache groups every group must hit
(full-attention groups only): the hit is the smallest group hit, aligned down
to the LCM of the group block sizes, as vLLM's hybrid coordinator does.

``score = weighted hit tokens / num_tokens - load_weight * load(replica)``;
ties go to the lower load, then to the rendezvous weight. When no candidate
holds any block of the prefix, candidates are ranked by rendezvous
(highest-random-weight) hashing on the request's first block key (under each
replica's scheme; a prompt shorter than one block uses a digest of its tokens
and extra keys) so identical prefixes land on the same replica and start
building cache there; load is reported but not used in that case.

Hashing and routing are separable: :meth:`Router.prepare` hashes (timed in
:attr:`PreparedRequest.hash_seconds`), :meth:`Router.rank` only reads the
index, and :meth:`PreparedRequest.add_keys` accepts keys computed elsewhere.
"""

from __future__ import annotations

import functools
import heapq
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain, groupby, repeat
from operator import itemgetter
from typing import Final, Literal, NamedTuple, cast

from ...core import BlockHash, Request, TokenIds, check_token_ids
from ...errors import InvalidRequestError
from .._replicas import ReplicaId, ReplicaScheme
from ..index._backend import RoutingIndex, RunsQuery
from ..index._walk import Run
from ._metrics import RouterMetrics
from ._prepared import PreparedRequest, rendezvous_seed, rendezvous_weights
from ._ranking import LazyRanking

__all__ = [
    "DEFAULT_TIER_WEIGHTS",
    "PREDICTED",
    "Evidence",
    "LoadFn",
    "RouteDecision",
    "Router",
]

#: Weight of a block hit per storage medium (media not listed: ``other_tier_weight``).
DEFAULT_TIER_WEIGHTS: Final[Mapping[str, float]] = {"GPU": 1.0, "CPU": 0.8, "STORAGE": 0.5}

#: The medium name under which the Router sees predicted entries
#: (:class:`~prefixkey.fleet.PredictedIndex`).
PREDICTED: Final = "PREDICTED"

#: What a decision's hit rests on (:attr:`RouteDecision.evidence`).
Evidence = Literal["confirmed", "predicted", "none"]

#: A replica's load, in the caller's units (e.g. utilisation in [0, 1]).
LoadFn = Callable[[ReplicaId], float]


def _is_number(value: object) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def _load(load: LoadFn, replica: ReplicaId) -> float:
    value = load(replica)
    if not _is_number(value):
        raise InvalidRequestError("load", f"returned {value!r} for {replica}: not a finite number")
    return float(value)


@dataclass(frozen=True, slots=True)
class RouteDecision:
    """One candidate's place in the ranking, and why."""

    replica: ReplicaId
    rank: int
    score: float
    #: Tokens vLLM would reuse (after the ``num_tokens - 1`` cap and group alignment).
    hit_tokens: int
    #: Per KV-cache group, consecutive blocks from block 0 held (before the cap).
    matched_blocks: tuple[int, ...]
    #: ``hit_tokens`` with each block weighted by its best medium.
    weighted_hit_tokens: float
    load: float | None
    #: True when no candidate held anything and the order is rendezvous hashing.
    fallback: bool
    #: The media of the blocks counted in ``hit_tokens`` (empty without a hit).
    media: frozenset[str]
    #: The explanation, or what builds it on first read of :attr:`why` (most never are).
    _why: str | Callable[[], str] = field(repr=False, compare=False)
    #: What ``hit_tokens`` rests on: ``"confirmed"`` (only blocks the replica's
    #: KV events reported), ``"predicted"`` (a reused block is only predicted,
    #: :data:`PREDICTED`) or ``"none"`` (no usable hit: the rendezvous fallback,
    #: or a run the ``num_tokens - 1`` cap or the groups leave nothing of).
    evidence: Evidence

    @property
    def why(self) -> str:
        """Why the candidate is at this rank, in words."""
        why = self._why
        return why if isinstance(why, str) else why()


class _Outcome(NamedTuple):
    """What a leading run is worth: shared by the candidates with the same runs.

    A NamedTuple: one is made per distinct run, hundreds per ranking at 1024
    replicas, and a tuple is made in a third of a frozen dataclass's time.
    """

    matched: tuple[int, ...]
    hit_tokens: int
    weighted: float
    media: str
    capped: bool
    used: frozenset[str]  # the media of the blocks counted in hit_tokens


def _evidence(outcome: _Outcome) -> Evidence:
    if outcome.hit_tokens == 0:
        return "none"
    return "predicted" if PREDICTED in outcome.used else "confirmed"


class _Scored(NamedTuple):
    """What the order needs of a leading run, shared by the candidates with equal runs.

    The rest of its :class:`_Outcome` is worked out only for decisions read.
    """

    weighted: float
    hit_tokens: int
    scheme: ReplicaScheme
    runs: tuple[Run, ...]


class _Group(NamedTuple):
    """An answer's group, scored: ``neg_score`` first, so groups sort best first."""

    neg_score: float
    scored: _Scored
    members: Sequence[ReplicaId]
    seed: int


_NEG_SCORE: Final = itemgetter(0)


class _Listing:
    """The candidates in the order their groups were listed (when the ranking reached them).

    A position in these lists is what :class:`LazyRanking` orders and builds
    decisions from.
    """

    __slots__ = ("entries", "rids", "seeds")

    def __init__(self) -> None:
        self.rids: list[ReplicaId] = []
        self.entries: list[_Scored] = []  # each candidate's scored runs (shared by its group)
        self.seeds: list[int] = []  # each candidate's rendezvous seed (its scheme's)

    def every(self, streams: Iterable[Iterable[_Group]]) -> list[int]:
        """List the members of every group of ``streams``; their positions."""
        start = len(self.rids)
        for stream in streams:
            for group in stream:
                n = len(group.members)
                self.rids += group.members
                self.entries += repeat(group.scored, n)
                self.seeds += repeat(group.seed, n)
        return list(range(start, len(self.rids)))

    def tie_order(self, positions: list[int]) -> list[int]:
        """``positions`` by :func:`rendezvous_weight`, highest first (weights and sort in C)."""
        weights = rendezvous_weights(map(self.rids.__getitem__, positions),
                                     map(self.seeds.__getitem__, positions))
        return list(map(positions.__getitem__, sorted(
            range(len(positions)), key=weights.__getitem__, reverse=True)))


#: A group of an answer whose candidates' scheme is the query's: runs, and the candidates.
_Runs = tuple[tuple[Run, ...], Sequence[ReplicaId]]


class _Answer(NamedTuple):
    """One query's answer, as the ranking reads it: every result a tuple of runs."""

    scheme: ReplicaScheme
    seed: int  # :func:`rendezvous_weight`'s seed for the scheme's affinity key
    groups: Sequence[_Runs]
    ordered: bool


class Router:
    """Scores candidate replicas from any :class:`~prefixkey.fleet.RoutingIndex` backend.

    See the module docs. ``metrics`` counts its decisions (:class:`RouterMetrics`).
    """

    def __init__(
        self,
        index: RoutingIndex,
        *,
        tier_weights: Mapping[str, float] = DEFAULT_TIER_WEIGHTS,
        other_tier_weight: float = 0.5,
        load: LoadFn | None = None,
        load_weight: float = 1.0,
    ) -> None:
        for name, w in {**tier_weights, "other": other_tier_weight}.items():
            if not isinstance(name, str):
                raise InvalidRequestError("tier_weights",
                                          f"keys must be media names, got {name!r}")
            if not isinstance(w, (int, float)) or not 0 <= w <= 1:
                raise InvalidRequestError("tier_weights", f"{name}: must be in [0, 1], got {w!r}")
        if not _is_number(load_weight):
            raise InvalidRequestError("load_weight", f"must be a number, got {load_weight!r}")
        self.index = index
        self.tier_weights = {k.upper(): float(v) for k, v in tier_weights.items()}
        self.other_tier_weight = float(other_tier_weight)
        self.load = load
        self.load_weight = float(load_weight)
        self.metrics = RouterMetrics()
        self._mask_weights: dict[int, tuple[float, str]] = {}
        self._bit_weights: list[tuple[int, float, str]] = []
        self._counted = 0  # bits of the media with a positive weight: those that hit
        self._bits_seen = -1
        self._last_grouping: tuple[Mapping[ReplicaId, ReplicaScheme], Mapping[
            tuple[object, ...], tuple[ReplicaScheme, Sequence[ReplicaId]]]] | None = None

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
        for scheme in self._schemes_of(candidates).values():
            if scheme.key in prepared._schemes:
                continue
            fine = hashed.get(scheme.hash_key)
            if fine is None:
                fine = hashed[scheme.hash_key] = scheme.hasher.block_hashes(request)
            prepared.add_keys(scheme, fine)
        prepared.hash_seconds = time.perf_counter() - start
        return prepared

    # -- routing ------------------------------------------------------------

    def route(
        self, request: Request | Sequence[int] | PreparedRequest,
        candidates: Iterable[ReplicaId | str] | None = None, *, limit: int | None = None,
    ) -> Sequence[RouteDecision]:
        """Rank the candidates (all registered replicas by default), best first."""
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
        whose groups of candidates are scored and listed, whose ties are put in
        rendezvous order, and whose decisions are built, when first read (equal
        to the list of them all). ``limit`` keeps only
        the first ``limit`` decisions (the full ranking's head; ``rank`` and
        ``total`` in the explanations still count every candidate).
        """
        if limit is not None and (type(limit) is not int or limit < 1):
            raise InvalidRequestError("limit", f"must be an int >= 1 or None, got {limit!r}")
        schemes = self._schemes_of(candidates)
        self._refresh_weights()
        num_tokens = prepared.num_tokens
        denom = max(num_tokens, 1)
        answers = self._answers(schemes, prepared)
        total = len(schemes)
        listing = _Listing()
        loads: list[float] | None = None
        scores: list[float] = []
        if self.load is None:
            groups, fallback = self._by_score(answers, listing, num_tokens)
        else:
            groups, fallback, loads, scores = self._by_score_and_load(
                answers, listing, num_tokens, self.load)
        outcomes: dict[int, _Outcome] = {}  # id(scored) -> its outcome, once read

        def build(i: int, rank: int) -> RouteDecision:
            entry, rid = listing.entries[i], listing.rids[i]
            if loads is None:
                load, score = None, entry.weighted / denom
            else:
                load, score = loads[i], scores[i]
            o = outcomes.get(id(entry))
            if o is None:
                o = outcomes[id(entry)] = self._outcome(entry.scheme, entry.runs, num_tokens)
            why = functools.partial(self._why, rid, o, num_tokens, load, score, fallback,
                                    rank, total)
            return RouteDecision(rid, rank, score, o.hit_tokens, o.matched, o.weighted,
                                 load, fallback, o.used, why, _evidence(o))

        ranking = LazyRanking(groups, total if limit is None else min(limit, total),
                              listing.tie_order, build)
        if total:
            top = ranking[0]
            self.metrics.observe(top.hit_tokens, num_tokens, fallback, top.evidence == "predicted")
        return ranking

    def _scored_groups(self, answer: _Answer, num_tokens: int) -> Iterator[_Group]:
        """An answer's groups, each scored as it is read (best first when ``ordered``)."""
        denom = max(num_tokens, 1)
        for runs, members in answer.groups:
            scored = self._scored(answer.scheme, runs, num_tokens)
            yield _Group(-(scored.weighted / denom), scored, members, answer.seed)

    def _by_score(self, answers: list[_Answer], listing: _Listing,
                  num_tokens: int) -> tuple[Iterator[list[int]], bool]:
        """The ties in rank order, each listed when reached, and whether this is the fallback.

        Each answer is a stream in score order (an ordered one scored as it is
        read, so a group not read is never scored; another scored whole and
        sorted), and the streams are merged as they are read.
        """
        streams: list[Iterator[_Group]] = [
            self._scored_groups(answer, num_tokens) if answer.ordered
            else iter(sorted(self._scored_groups(answer, num_tokens), key=_NEG_SCORE))
            for answer in answers]
        by_score = streams[0] if len(streams) == 1 else heapq.merge(*streams, key=_NEG_SCORE)
        head = next(by_score, None)
        if head is None or head.scored.hit_tokens == 0:  # rendezvous alone
            return iter([listing.every(self._scored_groups(a, num_tokens) for a in answers)]), True
        # Equal scores are one tie, whatever their runs.
        return (listing.every([same]) for _, same in groupby(chain((head,), by_score),
                                                             _NEG_SCORE)), False

    def _by_score_and_load(
        self, answers: list[_Answer], listing: _Listing, num_tokens: int, load_of: LoadFn,
    ) -> tuple[Iterator[list[int]], bool, list[float], list[float]]:
        """:meth:`_by_score` with loads: every candidate listed, and its load and score."""
        order = listing.every(self._scored_groups(a, num_tokens) for a in answers)
        loads = [_load(load_of, rid) for rid in listing.rids]
        denom, lw = max(num_tokens, 1), self.load_weight
        scores = [s.weighted / denom - lw * load
                  for s, load in zip(listing.entries, loads, strict=True)]
        if not any(s.hit_tokens for s in dict.fromkeys(listing.entries)):
            return iter([order]), True, loads, scores  # rendezvous alone, load aside
        keys = [(-score, load) for score, load in zip(scores, loads, strict=True)]
        order.sort(key=keys.__getitem__)
        return (list(same) for _, same in groupby(order, keys.__getitem__)), False, loads, scores

    def _schemes_of(
        self, candidates: Iterable[ReplicaId | str] | None
    ) -> Mapping[ReplicaId, ReplicaScheme]:
        """The candidates (all registered replicas when None), each once, and their schemes."""
        known = self.index.replicas()
        if candidates is None:
            return known
        out: dict[ReplicaId, ReplicaScheme] = {}
        for c in candidates:
            rid = c if type(c) is ReplicaId else (
                ReplicaId(c) if isinstance(c, str) else ReplicaId(*c))
            scheme = known.get(rid)
            if scheme is None:
                raise InvalidRequestError("candidates", f"replica {rid} is not registered")
            out[rid] = scheme
        return out

    def _refresh_weights(self) -> None:
        bits = self.index.medium_bits()
        if len(bits) == self._bits_seen:
            return
        self._bits_seen = len(bits)
        self._bit_weights = [(bit, self.tier_weights.get(name, self.other_tier_weight), name)
                             for name, bit in bits.items()]
        self._counted = sum(bit for bit, weight, _ in self._bit_weights if weight > 0)
        self._mask_weights = {}

    def _mask_weight(self, mask: int) -> tuple[float, str]:
        hit = self._mask_weights.get(mask)
        if hit is None:
            weight, name = max(((w, n) for b, w, n in self._bit_weights if mask & b),
                               default=(0.0, ""))
            hit = self._mask_weights[mask] = (weight, name)
        return hit

    def _answers(
        self, schemes: Mapping[ReplicaId, ReplicaScheme], prepared: PreparedRequest,
    ) -> list[_Answer]:
        """The index's answers for the candidates, one :meth:`RoutingIndex.leading_runs` call.

        A candidate re-registered with another scheme since :meth:`replicas`
        was read is hashed under its new scheme and asked again (twice at
        most; then it counts as holding nothing).
        """
        todo: Mapping[tuple[object, ...], tuple[ReplicaScheme, Sequence[ReplicaId]]]
        last = self._last_grouping
        if last is not None and last[0] is schemes:  # the index's unchanged registrations
            todo = last[1]
        elif len(set(map(id, schemes.values()))) == 1:  # one shared scheme object
            only = next(iter(schemes.values()))
            todo = {only.key: (only, tuple(schemes))}
        else:
            by_scheme: dict[int, tuple[ReplicaScheme, list[ReplicaId]]] = {}
            for rid, scheme in schemes.items():
                entry = by_scheme.get(id(scheme))  # schemes are usually shared objects
                if entry is None:
                    entry = by_scheme[id(scheme)] = (scheme, [])
                entry[1].append(rid)
            merged: dict[tuple[object, ...], tuple[ReplicaScheme, list[ReplicaId]]] = {}
            for scheme, group in by_scheme.values():
                merged.setdefault(scheme.key, (scheme, []))[1].extend(group)
            todo = merged
        # Kept with the object it was made from: an object still referenced keeps its id.
        self._last_grouping = (schemes, todo)
        out: list[_Answer] = []
        for attempt in range(3):
            queries = [RunsQuery(scheme, tuple(group), prepared.keys_for(scheme).groups)
                       for scheme, group in todo.values()]
            changed: dict[tuple[object, ...], tuple[ReplicaScheme, list[ReplicaId]]] = {}
            for query, answer in zip(queries, self.index.leading_runs(queries, self._counted),
                                     strict=True):
                scheme = query.scheme
                seed = rendezvous_seed(prepared.keys_for(scheme).affinity)
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
        if len(runs) == 1 and len(runs[0]) == 1:  # :meth:`_outcome`'s usual case, cut short
            (mask, n), = runs[0]
            bs = scheme.groups[0].block_size
            blocks = min(n, max(num_tokens - 1, 0) // bs)
            return _Scored(self._mask_weight(mask)[0] * blocks * bs, blocks * bs, scheme, runs)
        o = self._outcome(scheme, runs, num_tokens)
        return _Scored(o.weighted, o.hit_tokens, scheme, runs)

    def _outcome(self, scheme: ReplicaScheme, runs: tuple[Run, ...], num_tokens: int) -> _Outcome:
        cap = max(num_tokens - 1, 0)
        if len(runs) == 1 and len(runs[0]) == 1:  # one group, one medium: the usual case
            (mask, n), = runs[0]
            bs = scheme.groups[0].block_size
            blocks = min(n, cap // bs)
            weight, medium = self._mask_weight(mask)
            return _Outcome((n,), blocks * bs, weight * blocks * bs, medium, capped=n > blocks,
                            used=frozenset((medium,)) if blocks else frozenset())
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
                weight, medium = self._mask_weight(mask)
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

    @staticmethod
    def _why(replica: ReplicaId, m: _Outcome, num_tokens: int, load: float | None, score: float,
             fallback: bool, rank: int, total: int) -> str:
        load_text = "" if load is None else f", load {load:.3g}"
        if fallback:
            return (f"no candidate holds a block of this prefix: rendezvous hashing on the "
                    f"first block key (or, under one block, a token digest) puts {replica} "
                    f"at {rank} of {total}{load_text}")
        blocks = "/".join(map(str, m.matched))
        if m.hit_tokens == 0:
            text = f"no usable prefix hit ({blocks} leading blocks held)"
        else:
            text = (f"{blocks} leading blocks held ({m.media}): {m.hit_tokens} of "
                    f"{num_tokens} tokens reusable")
        if m.capped:
            text += " (capped: vLLM reuses at most num_tokens - 1 tokens, in whole blocks"
            text += ", aligned to the groups' LCM block size)" if len(m.matched) > 1 else ")"
        return f"{text}{load_text}, score {score:.4f}"
