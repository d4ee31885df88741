"""The load a LiteLLM gateway gives the Router: the prefill it sent each deployment, unanswered.

docs/routing.md ("Feeding it the load") recommends a gateway's own counts in
prefill tokens: add a request's ``prefill_tokens`` (its decision's) to its
replica when it is sent and take it off when the request is answered or
fails. :class:`Outstanding` keeps those counts and pushes them to the Router
(``set_load``, so a ranking reads the least loaded first) with ``sent`` for
the cache pressure. A send is matched to its outcome by a ticket stamped in
the request's ``metadata``, which LiteLLM hands back to its callbacks
(``litellm_params["metadata"]``): :class:`Outcomes` is the ``CustomLogger``
whose success and failure events (a stream's success comes when it ends)
release it. A request whose event never comes (a stream the caller stops
reading, a callback LiteLLM drops) counts until ``timeout`` seconds after it
was sent; sends expire in order, checked at each send.
"""

from __future__ import annotations

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
from ..fleet import RouteDecision
from ..fleet import Router as PrefixRouter

__all__ = ["SEND_KEY", "Outcomes", "Outstanding"]

#: The request ``metadata`` key that carries a send's ticket to LiteLLM's callbacks.
SEND_KEY = "prefixkey_send"
#: Tickets are unique in the process: every strategy's callback sees every request.
_tickets = itertools.count(1)


@dataclass(slots=True)
class _Send:
    replica: str
    tokens: float
    deadline: float


class Outstanding:
    """Each deployment's requests and prefill tokens sent and not yet answered (the
    caller holds the Router's lock around every method)."""

    def __init__(self, router: PrefixRouter, replicas: Iterable[str], timeout: float) -> None:
        self.timeout = check_number("outstanding_timeout", timeout, strict=True)
        self._router = router
        self._sends: OrderedDict[int, _Send] = OrderedDict()
        self._tokens: dict[str, float] = {}
        self._requests: dict[str, int] = {}
        for name in replicas:  # every replica's load is known, 0, from the start
            self._set(name, 0, 0.0)

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
        name, tokens = decision.replica.name, decision.prefill_tokens
        self._sends[ticket] = _Send(name, tokens, now + self.timeout)
        self._set(name, self._requests.get(name, 0) + 1, self._tokens.get(name, 0.0) + tokens)

    def done(self, ticket: object) -> None:
        """The request of ``ticket`` was answered or failed (a ticket not counted here: no-op)."""
        if not isinstance(ticket, int):
            return
        send = self._sends.pop(ticket, None)
        if send is not None:
            self._release(send)

    def outstanding(self) -> dict[str, tuple[int, float]]:
        """Each replica's outstanding requests and prefill tokens, as the Router was given them."""
        self._expire(time.monotonic())
        return {name: (self._requests[name], self._tokens[name]) for name in self._tokens}

    def _expire(self, now: float) -> None:
        while self._sends:  # deadlines grow with the sends: the oldest is first
            ticket, send = next(iter(self._sends.items()))
            if send.deadline > now:
                return
            del self._sends[ticket]
            self._release(send)

    def _release(self, send: _Send) -> None:
        left = self._requests[send.replica] - 1
        # the last one out leaves 0 exactly, whatever the floats' rounding left
        self._set(send.replica, left, self._tokens[send.replica] - send.tokens if left else 0.0)

    def _set(self, name: str, requests: int, tokens: float) -> None:
        self._requests[name], self._tokens[name] = requests, max(tokens, 0.0)
        self._router.set_load(name, self._tokens[name])


class Outcomes(CustomLogger):  # type: ignore[misc]  # litellm is untyped here
    """LiteLLM's success and failure callbacks, releasing each request's send."""

    def __init__(self, release: Callable[[object], None]) -> None:
        super().__init__()
        self.release = release
        # LiteLLM adds no logger whose class and public str/int/bool attributes equal
        # a registered one's: this one's are its own
        self.name = f"prefixkey-outcomes-{next(_tickets)}"

    def _release(self, kwargs: Mapping[str, Any]) -> None:
        params = kwargs.get("litellm_params")
        metadata = params.get("metadata") if isinstance(params, dict) else None
        ticket = metadata.get(SEND_KEY) if isinstance(metadata, dict) else None
        if ticket is not None:
            self.release(ticket)

    def log_success_event(self, kwargs: Any, response_obj: Any, start_time: Any,
                          end_time: Any) -> None:
        self._release(kwargs)

    def log_failure_event(self, kwargs: Any, response_obj: Any, start_time: Any,
                          end_time: Any) -> None:
        self._release(kwargs)

    async def async_log_success_event(self, kwargs: Any, response_obj: Any, start_time: Any,
                                      end_time: Any) -> None:
        self._release(kwargs)

    async def async_log_failure_event(self, kwargs: Any, response_obj: Any, start_time: Any,
                                      end_time: Any) -> None:
        self._release(kwargs)
