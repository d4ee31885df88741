"""Fleet metrics: the Router's decision counters, and Prometheus' text format (0.0.4).

:class:`RouterMetrics` counts what a :class:`~prefixkey.fleet.Router` decided;
:func:`prometheus_text` formats :meth:`prefixkey.fleet.Subscriber.stats` (and
a router's metrics) with no sockets and no client library; metric names are
prefixed ``prefixkey_``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Final, TypedDict

from ..index._backend import INDEX_COUNTERS, IndexStats, field_help

__all__ = [
    "COUNTERS", "ReplicaCounters", "ReplicaStats", "RouterMetrics", "SubscriberStats",
    "prometheus_text",
]


class ReplicaCounters(TypedDict):
    """The subscriber's counters of one replica, each with its help text (:data:`COUNTERS`)."""

    messages: Annotated[int, "PUB messages received (before the queue)"]
    dropped: Annotated[int, (
        "PUB messages dropped because the replica's queue was full (messages or bytes)")]
    batches: Annotated[int, "batches decoded and applied (PUB and replay)"]
    events: Annotated[int, "events in applied batches"]
    gaps: Annotated[int, "sequence gaps detected"]
    missing_batches: Annotated[int, "batches missing in detected gaps"]
    late_joins: Annotated[int, (
        "first messages with seq > 0 (history published before subscribing)")]
    replay_requests: Annotated[int, "replay requests sent"]
    replay_completed: Annotated[int, "replay requests answered up to the end marker"]
    replay_failures: Annotated[int, "replay requests that timed out or failed"]
    replayed_batches: Annotated[int, "batches recovered by replay and applied"]
    lost_batches: Annotated[int, "missing batches neither received nor replayed"]
    duplicates: Annotated[int, "batches skipped as duplicates (same seq, same payload)"]
    late_batches: Annotated[int, "batches that arrived after their gap was detected"]
    restarts: Annotated[int, "publisher restarts (seq went backwards, or jumped): new epochs"]
    seq_jumps: Annotated[int, "seqs beyond expected + max_jump, handled as restarts"]
    cleared_entries: Annotated[int, "index entries dropped on publisher restarts"]
    decode_errors: Annotated[int, "payloads that failed to decode (batch skipped)"]
    framing_errors: Annotated[int, "messages or replay replies with bad framing"]
    ignored_fields: Annotated[int, "unknown fields ignored by the decoder"]
    apply_errors: Annotated[int, (
        "batches the index failed to apply (after retries, if it was unavailable)")]
    apply_unknown: Annotated[int, (
        "batches given up after a write timed out once sent: the store may have applied "
        "them (the replica's next batch re-syncs it either way)")]
    apply_retries: Annotated[int, (
        "index calls (applies, restart clears) retried because the index was unavailable "
        "(IndexUnavailableError)")]
    restart_errors: Annotated[int, (
        "publisher restarts whose index clear failed (index unavailable past retry_seconds): "
        "entries of the old epoch may remain")]
    handling_errors: Annotated[int, (
        "messages skipped because handling them raised unexpectedly (a bug: see the log)")]
    rank_overflows: Annotated[int, "batches skipped for announcing a rank beyond max_ranks"]
    unlearned_batches: Annotated[int, (
        "batches dropped while the replica's scheme was being learned")]
    callback_errors: Annotated[int, "on_batch callbacks that raised"]
    connects: Annotated[int, "connections (and reconnections) to the publisher"]
    disconnects: Annotated[int, "disconnections from the publisher"]
    idle_periods: Annotated[int, "times the replica went silent for longer than idle_timeout"]


#: The subscriber's per-replica counters and their help text, read from
#: :class:`ReplicaCounters` (the one place they are written).
COUNTERS: Final[dict[str, str]] = field_help(ReplicaCounters)


class ReplicaStats(ReplicaCounters):
    """One replica in :meth:`Subscriber.stats <prefixkey.fleet.Subscriber.stats>`: its
    counters, liveness, queue and index sizes, and what is known of its release."""

    decode_errors_by_type: dict[str, int]
    last_seen: float | None
    idle_seconds: float
    idle: bool
    epochs: int
    index_size: int
    queued: int
    queued_bytes: int
    vllm_version: str | None
    vllm_releases: str | None
    scheme: str


class SubscriberStats(TypedDict):
    """What :meth:`Subscriber.stats <prefixkey.fleet.Subscriber.stats>` (and the asyncio
    subscriber's) returns: per replica, totals (every counter, ``index_size``, ``queued``,
    ``queued_bytes``), the queues, the index's own ``stats()`` (None without an index, or
    while it is unavailable) and whether the subscriber runs."""

    replicas: dict[str, ReplicaStats]
    totals: dict[str, int]
    queue_depth: int
    queue_capacity: int
    queue_bytes: int
    queue_bytes_capacity: int
    index: IndexStats | None
    running: bool


class RouterMetrics:
    """What a Router decided: requests ranked, fallbacks, tokens reusable at the top pick.

    Updated by every :meth:`~prefixkey.fleet.Router.rank` with at least one
    candidate; read the attributes, :attr:`fallback_rate`, :attr:`hit_rate`, or
    :meth:`as_dict`.
    """

    __slots__ = ("decisions", "fallbacks", "hit_tokens", "predicted", "prompt_tokens")

    def __init__(self) -> None:
        #: Requests ranked.
        self.decisions = 0
        #: Requests no candidate held a block of (ranked by rendezvous hashing).
        self.fallbacks = 0
        #: Tokens the top-ranked replica would reuse, summed over the requests.
        self.hit_tokens = 0
        #: Requests whose top pick's hit uses predicted entries (evidence ``"predicted"``).
        self.predicted = 0
        #: Prompt tokens of the ranked requests.
        self.prompt_tokens = 0

    def observe(self, hit_tokens: int, num_tokens: int, fallback: bool, predicted: bool) -> None:
        self.decisions += 1
        self.fallbacks += fallback
        self.hit_tokens += hit_tokens
        self.predicted += predicted
        self.prompt_tokens += num_tokens

    @property
    def fallback_rate(self) -> float:
        """Share of the requests ranked by rendezvous hashing (0.0 before any)."""
        return self.fallbacks / self.decisions if self.decisions else 0.0

    @property
    def hit_rate(self) -> float:
        """Share of the prompt tokens the top picks would reuse (0.0 before any)."""
        return self.hit_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def as_dict(self) -> dict[str, int]:
        return {"decisions": self.decisions, "fallbacks": self.fallbacks,
                "hit_tokens": self.hit_tokens, "predicted": self.predicted,
                "prompt_tokens": self.prompt_tokens}


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def family_lines(lines: list[str], name: str, kind: str, help_text: str,
                 samples: Iterable[tuple[dict[str, str], float]]) -> None:
    """Append one metric family (HELP, TYPE and its samples) to ``lines``."""
    lines.append(f"# HELP {name} {help_text}")
    lines.append(f"# TYPE {name} {kind}")
    for labels, value in samples:
        text = ",".join(f'{k}="{_label(v)}"' for k, v in labels.items())
        number = repr(float(value)) if isinstance(value, float) else str(int(value))
        lines.append(f"{name}{{{text}}} {number}" if text else f"{name} {number}")


_ROUTER_HELP: Final = {
    "decisions": "Requests ranked by the router.",
    "fallbacks": "Requests no candidate held a block of (rendezvous hashing).",
    "hit_tokens": "Tokens the top-ranked replica would reuse.",
    "predicted": "Requests whose top pick's hit uses predicted entries.",
    "prompt_tokens": "Prompt tokens of the ranked requests.",
}


def prometheus_text(stats: Mapping[str, Any]) -> str:
    """Render :meth:`Subscriber.stats` in the Prometheus text exposition format (0.0.4).

    A ``"router"`` entry (:meth:`RouterMetrics.as_dict`) adds the router's counters.
    """
    lines: list[str] = []
    replicas: dict[str, dict[str, Any]] = stats["replicas"]
    family = functools.partial(family_lines, lines)

    for counter, help_text in COUNTERS.items():
        family(f"prefixkey_subscriber_{counter}_total", "counter", help_text.capitalize() + ".",
               (({"replica": k}, v[counter]) for k, v in replicas.items()))
    family("prefixkey_subscriber_decode_errors_by_type_total", "counter",
           "Payloads that failed to decode, by error type.",
           (({"replica": k, "error": e}, n) for k, v in replicas.items()
            for e, n in sorted(v["decode_errors_by_type"].items())))
    family("prefixkey_subscriber_last_message_timestamp_seconds", "gauge",
           "Unix time of the last message received from the replica.",
           (({"replica": k}, float(v["last_seen"])) for k, v in replicas.items()
            if v["last_seen"] is not None))
    family("prefixkey_subscriber_idle_seconds", "gauge",
           "Seconds since the last message (or since start).",
           (({"replica": k}, float(v["idle_seconds"])) for k, v in replicas.items()))
    family("prefixkey_subscriber_idle", "gauge", "1 while the replica is idle, else 0.",
           (({"replica": k}, int(v["idle"])) for k, v in replicas.items()))
    family("prefixkey_subscriber_epochs", "gauge",
           "Publisher epochs seen after the first (restarts).",
           (({"replica": k}, v["epochs"]) for k, v in replicas.items()))
    family("prefixkey_index_replica_entries", "gauge", "Index entries held for the replica.",
           (({"replica": k}, v["index_size"]) for k, v in replicas.items()))
    family("prefixkey_subscriber_queue_depth", "gauge", "Messages waiting to be decoded.",
           [({}, stats["queue_depth"])])
    family("prefixkey_subscriber_queued_bytes", "gauge", "Bytes of the messages waiting.",
           (({"replica": k}, v["queued_bytes"]) for k, v in replicas.items()))
    family("prefixkey_subscriber_queue_capacity", "gauge", "Bound of the message queue.",
           [({}, stats["queue_capacity"])])
    index = stats.get("index")
    if index is not None:
        family("prefixkey_index_entries", "gauge", "Entries held by the index.",
               [({}, index["size"])])
        family("prefixkey_index_max_entries", "gauge", "The index's entry bound.",
               [({}, index["max_entries"])])
        for name, help_text in INDEX_COUNTERS.items():
            if name in index:  # the contract's counters (a custom backend may lack some)
                family(f"prefixkey_index_{name}_total", "counter",
                       help_text.capitalize() + ".", [({}, index[name])])
    router = stats.get("router")
    if router is not None:
        for name, help_text in _ROUTER_HELP.items():
            family(f"prefixkey_router_{name}_total", "counter", help_text, [({}, router[name])])
    return "\n".join(lines) + "\n"
