"""The load a LiteLLM gateway gives the Router: each deployment's prefill still waiting.

docs/routing.md ("Feeding it the load") tells a gateway to count, in prefill
tokens, what it sent each replica and release it at the request's first
token, with :class:`~prefixkey.fleet.PrefillBacklog`'s rule (the work done
on each replica's oldest request, at the rate measured from its first
tokens). :class:`Outstanding` keeps that backlog and pushes it to the Router
(``set_load``, so a ranking reads the least loaded first): at each send and
release, and before each ranking for the replicas with sends in flight (only
their backlog moves with time); it tells the Router where each request went
(``sent``, the cache pressure). A send is matched to its outcome by a ticket stamped in the
request's ``metadata``, which LiteLLM hands back to its callbacks
(``litellm_params["metadata"]``), filed under the call's ``litellm_trace_id``
(which the callbacks get too) in the order of its attempts: LiteLLM stamps the
caller's own dict, the same object for every attempt and for every call given
it, and runs a sync call's success callbacks on its logging thread pool
(``litellm_core_utils/thread_pool_executor.py``) after the call returned, so
a callback may read the dict after a later call or attempt stamped it. Each
outcome takes its call's oldest ticket, and only its own call's.
What LiteLLM 1.110.2 reports, and when
(read in its ``CustomStreamWrapper`` and ``Logging``), decides the release:

* a **sync stream**: every chunk is logged (``log_stream_event``, from a
  logging thread) as it arrives: the first one is the first token, timed;
* an **async stream** (``acompletion(stream=True)``, the proxy's path): no
  chunk reaches a ``CustomLogger`` before the end (the per-chunk deployment
  hook runs on the last chunk only), but LiteLLM writes
  ``completion_start_time`` in the attempt's call details at the first
  chunk, and hands those details (a live dict) to ``log_pre_api_call`` before
  the request is sent: the stream is released at its first chunk, timed
  then, seen before the next ranking (:meth:`Outstanding.refresh`) or read;
  the success event at its end carries the same time, if no ranking came
  between;
* a **whole response**: LiteLLM reports no first token (the answer arrives
  after the decode): released untimed at its success;
* a **failure**: released untimed when LiteLLM logs it.

:class:`Outcomes` is the ``CustomLogger`` doing this. A request whose event
never comes (a callback LiteLLM drops, or one its closed event loop never ran)
counts until ``timeout`` seconds after it was sent; sends expire in order,
checked at each send.
"""

from __future__ import annotations

import datetime
import itertools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .._extras import needs_extra

with needs_extra("litellm", "prefixkey.gateways.litellm"):
    from litellm.integrations.custom_logger import CustomLogger

from ..core._checks import check_number
from ..fleet import PrefillBacklog, ReplicaId, RouteDecision
from ..fleet import Router as PrefixRouter

__all__ = ["SEND_KEY", "Outcomes", "Outstanding"]

#: The request ``metadata`` key that carries a send's ticket to LiteLLM's callbacks.
SEND_KEY = "prefixkey_send"
#: Tickets are unique in the process: every strategy's callback sees every request.
_tickets = itertools.count(1)
#: Held while a ticket is filed in, or taken from, a request's metadata: LiteLLM's
#: logging threads and the callers' threads reach one dict.
_filing = threading.Lock()


def _filed_as(owner: int, kwargs: Mapping[str, Any]) -> str:
    """Where ``owner``'s (an :class:`Outstanding`'s) tickets of a call are filed: the call
    is the pick's request's or the callback's ``litellm_trace_id`` (its attempts share it)."""
    call = kwargs.get("litellm_trace_id")
    return f"{owner}/{call if isinstance(call, str) else ''}"


def _file(metadata: dict[str, Any], call: str, ticket: int) -> None:
    """File ``ticket`` as ``call``'s newest in the request's metadata."""
    with _filing:
        filed = metadata.get(SEND_KEY)
        if not isinstance(filed, dict):
            filed = metadata[SEND_KEY] = {}
        filed.setdefault(call, []).append(ticket)


def _newest(metadata: object, call: str) -> int | None:
    """``call``'s newest ticket still filed (its attempt in flight), left in place."""
    if not isinstance(metadata, dict):
        return None
    with _filing:
        filed = metadata.get(SEND_KEY)
        waiting = filed.get(call) if isinstance(filed, dict) else None
        return waiting[-1] if waiting else None


def _take(metadata: object, call: str) -> int | None:
    """``call``'s oldest ticket still filed, taken out (None: none left)."""
    if not isinstance(metadata, dict):
        return None
    with _filing:
        filed = metadata.get(SEND_KEY)
        if not isinstance(filed, dict) or not filed.get(call):
            return None
        waiting = filed[call]
        ticket: int = waiting.pop(0)
        if not waiting:  # a dict reused for every call keeps no entry per call
            del filed[call]
        return ticket


@dataclass(slots=True)
class _Send:
    replica: str
    ticket: int  # the backlog's
    deadline: float


class Outstanding:
    """Each deployment's prefill sent and not yet first-tokened, as a
    :class:`~prefixkey.fleet.PrefillBacklog` counts it (the caller holds the Router's
    lock around every method)."""

    def __init__(self, router: PrefixRouter, replicas: Iterable[str], timeout: float) -> None:
        self.timeout = check_number("outstanding_timeout", timeout, strict=True)
        #: Files this backlog's tickets apart from other strategies' (each one's callback
        #: sees every request).
        self.owner = next(_tickets)
        self._router = router
        self._replicas = tuple(replicas)
        #: The backlog the Router reads (``queued``), on :func:`time.monotonic`'s clock.
        self.backlog = PrefillBacklog()
        self._sends: OrderedDict[int, _Send] = OrderedDict()
        self._busy: set[str] = set()  # the replicas with sends in flight
        #: The streams in flight by ticket: LiteLLM's live call details, where it writes
        #: ``completion_start_time`` at the first chunk (read before each ranking).
        self._streams: dict[int, Mapping[str, object]] = {}
        for name in self._replicas:  # every replica's load is known, 0, from the start
            router.set_load(name, 0.0)

    def queued(self, replica: ReplicaId | str) -> float:
        """The replica's prefill tokens still waiting now."""
        return self.backlog.queued(replica, time.monotonic())

    def refresh(self) -> None:
        """Push the loads that moved since the last push: the busy replicas' (before a
        ranking)."""
        self._first_chunks()
        now = time.monotonic()
        for name in self._busy:
            self._router.set_load(name, self.backlog.queued(name, now))

    def sent(self, decision: RouteDecision, kwargs: Mapping[str, object]) -> None:
        """Count ``decision``'s prefill on its replica; its ticket goes in the request metadata."""
        self._router.sent(decision)
        now = time.monotonic()
        self._expire(now)
        # LiteLLM's request kwargs always carry a metadata dict (its callbacks get it back);
        # a pick called without one is not counted, as no outcome could release it
        metadata = kwargs.get("metadata")
        if not isinstance(metadata, dict):
            return
        ticket = next(_tickets)
        _file(metadata, _filed_as(self.owner, kwargs), ticket)
        name = decision.replica.name
        self._sends[ticket] = _Send(
            name, self.backlog.sent(name, decision.prefill_tokens, now), now + self.timeout)
        self._busy.add(name)
        self._push(name, now)

    def streaming(self, ticket: object, details: Mapping[str, object]) -> None:
        """The request of ``ticket`` is a stream whose LiteLLM call details are ``details``:
        its first token is read there (``completion_start_time``) before each ranking."""
        if isinstance(ticket, int) and ticket in self._sends:
            self._streams[ticket] = details

    def first_token(self, ticket: object, at: float) -> None:
        """The request of ``ticket`` got its first token at ``at`` (monotonic seconds, maybe
        past): released and timed (a ticket not counted here: no-op)."""
        send = self._pop(ticket)
        if send is not None:
            now = time.monotonic()
            self.backlog.first_token(send.ticket, min(at, now))
            self._push(send.replica, now)

    def done(self, ticket: object) -> None:
        """The request of ``ticket`` ended with no first token seen: released untimed."""
        send = self._pop(ticket)
        if send is not None:
            self.backlog.failed(send.ticket)
            self._push(send.replica, time.monotonic())

    def outstanding(self) -> dict[str, tuple[int, float]]:
        """Each replica's sends not yet released and prefill tokens still waiting, as the
        Router reads them now."""
        self._first_chunks()
        now = time.monotonic()
        self._expire(now)
        return {name: (self.backlog.requests(name), self.backlog.queued(name, now))
                for name in self._replicas}

    def _pop(self, ticket: object) -> _Send | None:
        if not isinstance(ticket, int):
            return None
        self._streams.pop(ticket, None)
        return self._sends.pop(ticket, None)

    def _first_chunks(self) -> None:
        """Release the streams whose first chunk LiteLLM received, timed when it did."""
        for ticket, details in list(self._streams.items()):
            at = _monotonic_of(details.get("completion_start_time"))
            if at is not None:
                self.first_token(ticket, at)

    def _expire(self, now: float) -> None:
        while self._sends:  # deadlines grow with the sends: the oldest is first
            ticket, send = next(iter(self._sends.items()))
            if send.deadline > now:
                return
            self._pop(ticket)
            self.backlog.failed(send.ticket)
            self._push(send.replica, now)

    def _push(self, name: str, now: float) -> None:
        self._router.set_load(name, self.backlog.queued(name, now))
        if not self.backlog.requests(name):
            self._busy.discard(name)


def _monotonic_of(when: object) -> float | None:
    """LiteLLM's ``completion_start_time`` (a wall-clock datetime) on the monotonic clock."""
    if not isinstance(when, datetime.datetime):
        return None
    ago = (datetime.datetime.now(when.tzinfo) - when).total_seconds()
    return time.monotonic() - max(ago, 0.0)


class Outcomes(CustomLogger):  # type: ignore[misc]  # litellm is untyped here
    """LiteLLM's stream, success and failure callbacks, releasing each request's send
    (module docs: when each comes)."""

    def __init__(self, owner: int, first_token: Callable[[object, float], None],
                 done: Callable[[object], None],
                 streaming: Callable[[object, Mapping[str, object]], None]) -> None:
        super().__init__()
        self.owner = owner  # the Outstanding whose tickets these outcomes take
        self.first_token = first_token
        self.done = done
        self.streaming = streaming
        # LiteLLM adds no logger whose class and public str/int/bool attributes equal
        # a registered one's: this one's are its own
        self.name = f"prefixkey-outcomes-{next(_tickets)}"

    def _ticket(self, kwargs: Mapping[str, Any]) -> int | None:
        """The send this outcome ends: its call's oldest ticket not yet taken."""
        params = kwargs.get("litellm_params")
        if not isinstance(params, dict):
            return None
        return _take(params.get("metadata"), _filed_as(self.owner, kwargs))

    def log_pre_api_call(self, model: Any, messages: Any, kwargs: Any) -> None:
        """An attempt is about to be sent: a stream's call details are watched for its
        first chunk (the async stream reports none before its end)."""
        if not isinstance(kwargs, dict) or not kwargs.get("stream"):
            return
        params = kwargs.get("litellm_params")
        if not isinstance(params, dict):
            return
        ticket = _newest(params.get("metadata"), _filed_as(self.owner, kwargs))
        if ticket is not None:
            self.streaming(ticket, kwargs)

    def _chunk(self, kwargs: Mapping[str, Any]) -> None:
        ticket = self._ticket(kwargs)
        if ticket is not None:  # the first chunk takes it; later ones find none
            self.first_token(ticket, time.monotonic())

    def _success(self, kwargs: Mapping[str, Any]) -> None:
        ticket = self._ticket(kwargs)
        if ticket is None:
            return
        at = _monotonic_of(kwargs.get("completion_start_time")) if kwargs.get("stream") else None
        if at is None:
            self.done(ticket)  # a whole response: its first token is not seen
        else:
            self.first_token(ticket, at)

    def _failure(self, kwargs: Mapping[str, Any]) -> None:
        ticket = self._ticket(kwargs)
        if ticket is not None:
            self.done(ticket)

    def log_stream_event(self, kwargs: Any, response_obj: Any, start_time: Any,
                         end_time: Any) -> None:
        self._chunk(kwargs)

    async def async_log_stream_event(self, kwargs: Any, response_obj: Any, start_time: Any,
                                     end_time: Any) -> None:
        self._chunk(kwargs)

    def log_success_event(self, kwargs: Any, response_obj: Any, start_time: Any,
                          end_time: Any) -> None:
        self._success(kwargs)

    def log_failure_event(self, kwargs: Any, response_obj: Any, start_time: Any,
                          end_time: Any) -> None:
        self._failure(kwargs)

    async def async_log_success_event(self, kwargs: Any, response_obj: Any, start_time: Any,
                                      end_time: Any) -> None:
        self._success(kwargs)

    async def async_log_failure_event(self, kwargs: Any, response_obj: Any, start_time: Any,
                                      end_time: Any) -> None:
        self._failure(kwargs)
