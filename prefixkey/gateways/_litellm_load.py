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
(``litellm_params["metadata"]``). What LiteLLM 1.110.2 reports, and when
(read in its ``CustomStreamWrapper`` and ``Logging``), decides the release:

* a **sync stream**: every chunk is logged (``log_stream_event``, from a
  logging thread) as it arrives: the first one is the first token, timed;
* an **async stream** (``acompletion(stream=True)``, the proxy's path): no
  chunk reaches a ``CustomLogger`` before the end (the per-chunk deployment
  hook runs on the last chunk only); the success event at the stream's end
  carries ``completion_start_time``, when LiteLLM received the first chunk:
  the first token is released then, timed at that time (so the rate is
  right; the request counted whole until the end);
* a **whole response**: LiteLLM reports no first token (the answer arrives
  after the decode): released untimed at its success;
* a **failure**: released untimed when LiteLLM logs it.

:class:`Outcomes` is the ``CustomLogger`` doing this. A request whose event
never comes (a stream the caller stops reading, a callback LiteLLM drops)
counts until ``timeout`` seconds after it was sent; sends expire in order,
checked at each send.
"""

from __future__ import annotations

import datetime
import itertools
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
        self._router = router
        self._replicas = tuple(replicas)
        #: The backlog the Router reads (``queued``), on :func:`time.monotonic`'s clock.
        self.backlog = PrefillBacklog()
        self._sends: OrderedDict[int, _Send] = OrderedDict()
        self._busy: set[str] = set()  # the replicas with sends in flight
        for name in self._replicas:  # every replica's load is known, 0, from the start
            router.set_load(name, 0.0)

    def queued(self, replica: ReplicaId | str) -> float:
        """The replica's prefill tokens still waiting now."""
        return self.backlog.queued(replica, time.monotonic())

    def refresh(self) -> None:
        """Push the loads that moved since the last push: the busy replicas' (before a
        ranking)."""
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
        metadata[SEND_KEY] = ticket
        name = decision.replica.name
        self._sends[ticket] = _Send(
            name, self.backlog.sent(name, decision.prefill_tokens, now), now + self.timeout)
        self._busy.add(name)
        self._push(name, now)

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
        now = time.monotonic()
        self._expire(now)
        return {name: (self.backlog.requests(name), self.backlog.queued(name, now))
                for name in self._replicas}

    def _pop(self, ticket: object) -> _Send | None:
        return self._sends.pop(ticket, None) if isinstance(ticket, int) else None

    def _expire(self, now: float) -> None:
        while self._sends:  # deadlines grow with the sends: the oldest is first
            ticket, send = next(iter(self._sends.items()))
            if send.deadline > now:
                return
            del self._sends[ticket]
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

    def __init__(self, first_token: Callable[[object, float], None],
                 done: Callable[[object], None]) -> None:
        super().__init__()
        self.first_token = first_token
        self.done = done
        # LiteLLM adds no logger whose class and public str/int/bool attributes equal
        # a registered one's: this one's are its own
        self.name = f"prefixkey-outcomes-{next(_tickets)}"

    @staticmethod
    def _ticket(kwargs: Mapping[str, Any]) -> object:
        params = kwargs.get("litellm_params")
        metadata = params.get("metadata") if isinstance(params, dict) else None
        return metadata.get(SEND_KEY) if isinstance(metadata, dict) else None

    def _chunk(self, kwargs: Mapping[str, Any]) -> None:
        ticket = self._ticket(kwargs)
        if ticket is not None:  # the first chunk releases it; later ones find it gone
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
