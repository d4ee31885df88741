"""A routing decision, and the words that explain it.

:class:`RouteDecision` is one candidate's place in a :class:`Router` ranking; the
explanation (:attr:`RouteDecision.why`) is built from its outcome only when read.
Kept apart from the Router (``_router``), which builds the decisions; the cost model
the fields name is in that module's docs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields, make_dataclass
from typing import Any, Final, Literal, NamedTuple

from .._replicas import ReplicaId

__all__ = ["PREDICTED", "Evidence", "RouteDecision"]

#: The medium name under which the Router sees predicted entries
#: (:class:`~prefixkey.fleet.PredictedIndex`).
PREDICTED: Final = "PREDICTED"

#: What a decision's hit rests on (:attr:`RouteDecision.evidence`).
Evidence = Literal["confirmed", "predicted", "none"]


@dataclass(frozen=True, slots=True)
class RouteDecision:
    """One candidate's place in the ranking, and why."""

    replica: ReplicaId
    rank: int
    #: ``-cost``: higher is better (kept for sorting by score).
    score: float
    #: Tokens vLLM would reuse (after the ``num_tokens - 1`` cap and group alignment).
    hit_tokens: int
    #: Per KV-cache group, consecutive blocks from block 0 held (before the cap).
    matched_blocks: tuple[int, ...]
    #: ``hit_tokens`` with each block weighted by its best medium.
    weighted_hit_tokens: float
    #: The prefill tokens queued on the replica (the caller's load converted to
    #: tokens, or the Router's own count of what it sent when no load is given).
    load: float
    #: True when no candidate held anything: the order is the least queued
    #: replica first, rendezvous hashing among equals.
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
    #: The cost, in prefill tokens: ``load + (1 + 1 / (1 - utilization) + pressure)
    #: * prefill_tokens`` (the wait for the first token, ``load + prefill_tokens``,
    #: plus the work added to the fleet, plus what storing it evicts).
    cost: float = 0.0
    #: The prefill this request still needs there: ``num_tokens`` minus what
    #: the held blocks save (each block's tokens times its medium's tier weight).
    prefill_tokens: float = 0.0
    #: The replica's cache pressure in [0, 1]: what storing the new blocks there
    #: evicts (``_router``'s module docs), added to the factor of ``prefill_tokens`` in ``cost``.
    pressure: float = 0.0
    #: The fleet's prefill utilization the cost counted, in [0, 1): ``L / (1 + L)``,
    #: ``L`` the candidates' mean load in requests (0 without a load). The prefill
    #: needed counts ``1 + 1 / (1 - utilization)`` times, 2 on an idle fleet
    #: (``_router``'s module docs).
    utilization: float = 0.0

    @property
    def why(self) -> str:
        """Why the candidate is at this rank, in words."""
        why = self._why
        return why if isinstance(why, str) else why()


#: A mutable twin of :class:`RouteDecision`: the same slots in the same order, so an
#: instance can take RouteDecision's class (:func:`_new_decision`).
_Building: Final = make_dataclass("_Building", [(f.name, object) for f in fields(RouteDecision)],
                                  slots=True, eq=False, repr=False)
_new_building: Final = object.__new__


def _new_decision(replica: ReplicaId, rank: int, score: float, hit_tokens: int,
              matched_blocks: tuple[int, ...], weighted_hit_tokens: float, load: float,
              fallback: bool, media: frozenset[str], why: str | Callable[[], str],
              evidence: Evidence, cost: float, prefill_tokens: float, pressure: float,
              utilization: float) -> RouteDecision:
    """``RouteDecision(...)`` of these fields, built as its mutable twin (plain slot stores)
    and then given RouteDecision's class: a frozen dataclass's ``__init__`` sets each field
    through ``object.__setattr__``, and each slot's own setter is a call too, which made
    building the one decision a top-1 ranking returns about three times as long."""
    d: Any = _new_building(_Building)  # the stores here: its __init__ would be one more frame
    d.replica = replica
    d.rank = rank
    d.score = score
    d.hit_tokens = hit_tokens
    d.matched_blocks = matched_blocks
    d.weighted_hit_tokens = weighted_hit_tokens
    d.load = load
    d.fallback = fallback
    d.media = media
    d._why = why
    d.evidence = evidence
    d.cost = cost
    d.prefill_tokens = prefill_tokens
    d.pressure = pressure
    d.utilization = utilization
    d.__class__ = RouteDecision  # the same layout: allowed, and checked by CPython
    return d  # type: ignore[no-any-return]  # (typing.cast is a Python call)


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


def _why(replica: ReplicaId, m: _Outcome, num_tokens: int, load: float, cost: float,
         pressure: float, fallback: bool, rank: int, total: int, twice: float) -> str:
    need = num_tokens - m.weighted
    tail = (f"cost {cost:.6g} prefill tokens = {load:.6g} queued + ({twice:.3g} + "
            f"{pressure:.3g}) x {need:.6g} to prefill here (its wait, the fleet's work at "
            f"this utilization, and what storing it evicts at this cache pressure); "
            f"rank {rank} of {total}")
    if fallback:
        return (f"no candidate holds a block of this prefix: least queued first, "
                f"rendezvous hashing on the first block key (or, under one block, a token "
                f"digest) among equals; {tail}")
    blocks = "/".join(map(str, m.matched)) or "0"
    if m.hit_tokens == 0:
        text = f"no usable prefix hit ({blocks} leading blocks held)"
    else:
        text = (f"{blocks} leading blocks held ({m.media}): {m.hit_tokens} of "
                f"{num_tokens} tokens reusable, saving {m.weighted:.6g} prefill tokens")
    if m.capped:
        text += " (capped: vLLM reuses at most num_tokens - 1 tokens, in whole blocks"
        text += ", aligned to the groups' LCM block size)" if len(m.matched) > 1 else ")"
    return f"{text}; {tail}"
