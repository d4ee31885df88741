"""A subscriber's options, written once: defaults, validation and meaning (sans-IO).

:class:`SubscriberOptions` is one frozen record used by both transports
(:class:`~prefixkey.fleet.Subscriber`, :class:`~prefixkey.fleet.AsyncSubscriber`),
their :class:`~prefixkey.fleet.feed._feed_set.FeedSet` and every
:class:`~prefixkey.fleet.feed._feed.ReplicaFeed`. The transports also take each
option as a keyword of their own (``Subscriber(replicas, queue_size=100)``),
applied over ``options`` with :meth:`SubscriberOptions.with_changes`; a bad value
raises :class:`~prefixkey.errors.InvalidRequestError` naming the option.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from ...core._checks import check_int, check_number
from ...errors import InvalidRequestError
from ...events import DEFAULT_MAX_JUMP, DecodeLimits

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_MAX_RANKS",
    "DEFAULT_QUEUE_BYTES",
    "DEFAULT_RETRY_SECONDS",
    "SubscriberOptions",
]

#: Bytes of messages that may wait per replica (their frames' lengths).
DEFAULT_QUEUE_BYTES: Final = 64 * 1024 * 1024
#: Distinct data-parallel ranks one endpoint may announce (vLLM: one per publisher).
DEFAULT_MAX_RANKS: Final = 8
#: How long one batch is retried while the index is unavailable (then counted in apply_errors).
DEFAULT_RETRY_SECONDS: Final = 30.0
#: The SUB sockets' bound on one frame: the decoder's payload bound plus framing.
#: libzmq drops a connection that sends more (counted as a disconnect).
DEFAULT_MAX_MESSAGE_BYTES: Final = DecodeLimits().max_payload_bytes + 64 * 1024

#: The checks, as data: option -> (kind, least value). "count": an int >= least;
#: "seconds": a finite int or float >= least (> 0 when least is None); "flag": a bool.
_CHECKS: Final[dict[str, tuple[str, int | None]]] = {
    "queue_size": ("count", 1),
    "queue_bytes": ("count", 1),
    "replay_timeout": ("seconds", None),
    "idle_timeout": ("seconds", None),
    "catch_up": ("flag", None),
    "max_jump": ("count", 1),
    "max_ranks": ("count", 1),
    "learn_schemes": ("flag", None),
    "retry_seconds": ("seconds", 0),
    "rcvhwm": ("count", 0),
    "max_message_bytes": ("count", 1),
    "reconnect_ivl_ms": ("count", 1),
    "reconnect_ivl_max_ms": ("count", 1),
}


@dataclass(frozen=True, slots=True)
class SubscriberOptions:
    """What a subscriber does with its replicas' messages, besides where they go.

    Per replica, ``queue_size`` messages and ``queue_bytes`` bytes may wait to be
    decoded (beyond, a message is dropped and counted in ``dropped``; the seq gap
    it leaves is replayed). ``replay_timeout`` bounds one replay exchange;
    ``idle_timeout`` is the silence after which a replica counts as idle.
    ``restart_policy`` is ``"clear"`` (a restarted publisher's replica loses its
    index entries: its new process starts with an empty prefix cache) or
    ``"keep"``. ``catch_up`` replays the history of a publisher first met at
    seq > 0. ``max_jump`` is the largest seq gap taken as a gap (beyond: a
    restart); ``max_ranks`` bounds the data-parallel ranks one endpoint may
    announce. ``learn_schemes`` learns the scheme of a replica configured
    without one from its events. ``retry_seconds`` is how long a batch is
    retried, with backoff, while the index raises
    :class:`~prefixkey.fleet.IndexUnavailableError` (counted in
    ``apply_retries``; then in ``apply_errors``). ``rcvhwm``,
    ``max_message_bytes``, ``reconnect_ivl_ms`` and ``reconnect_ivl_max_ms``
    are the SUB sockets' ZMQ options (a frame over ``max_message_bytes`` ends
    the connection, which is made again and counted in ``disconnects``).
    """

    queue_size: int = 10_000
    queue_bytes: int = DEFAULT_QUEUE_BYTES
    replay_timeout: float = 2.0
    idle_timeout: float = 30.0
    restart_policy: Literal["clear", "keep"] = "clear"
    catch_up: bool = True
    max_jump: int = DEFAULT_MAX_JUMP
    max_ranks: int = DEFAULT_MAX_RANKS
    learn_schemes: bool = True
    retry_seconds: float = DEFAULT_RETRY_SECONDS
    rcvhwm: int = 100_000
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    reconnect_ivl_ms: int = 100
    reconnect_ivl_max_ms: int = 2_000

    def __post_init__(self) -> None:
        if self.restart_policy not in ("clear", "keep"):
            raise InvalidRequestError(
                "restart_policy", f"must be 'clear' or 'keep', got {self.restart_policy!r}")
        for name, (kind, least) in _CHECKS.items():
            value = getattr(self, name)
            if kind == "flag":
                if type(value) is not bool:
                    raise InvalidRequestError(name, f"must be True or False, got {value!r}")
            elif kind == "count":
                check_int(name, value, least=least or 0)
            else:
                check_number(name, value, least=least or 0, strict=least is None)
        if type(self.retry_seconds) is int:  # one type read back, whichever was given
            object.__setattr__(self, "retry_seconds", float(self.retry_seconds))

    def with_changes(self, changes: Mapping[str, Any]) -> SubscriberOptions:
        """These options with some replaced (validated again); an unknown name is refused."""
        if not changes:
            return self
        known = {f.name for f in dataclasses.fields(self)}
        for name in changes:
            if name not in known:
                raise InvalidRequestError(
                    name, f"is not a subscriber option (the options: {', '.join(sorted(known))})")
        return dataclasses.replace(self, **changes)
