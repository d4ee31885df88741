"""What a Ray Serve call to a vLLM deployment is, as a request prefixkey can hash (sans-IO).

A request router sees the call's positional and keyword arguments
(``PendingRequest.args`` / ``.kwargs``), not an HTTP body. Ray Serve LLM
calls its ``LLMServer`` with one OpenAI request object (a pydantic model:
``chat(request)``, ``completions(request)``), and gives KV-aware routers the
prompt's token ids as the keyword ``request_token_ids``; a plain Serve
deployment is called with whatever its caller passes, often the body as a
dict. :func:`call_body` finds, in that order:

1. ``request_token_ids`` (a list of ints): the prompt's ids, as the engine will hold them;
2. the first argument that is a mapping or a pydantic model (``model_dump``)
   with ``messages`` (a chat body) or ``prompt`` (a completions body).

A completions body whose ``prompt`` is token ids is hashed as it is; any other
body needs a :class:`~prefixkey.render.Renderer` for the replicas' model and
release (``None`` here means the router cannot key the call, and says so in
its counters: it then routes by load alone).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..core import Request, TokenIds, check_token_ids
from ..errors import InvalidRequestError

__all__ = ["CHAT", "COMPLETIONS", "TOKEN_IDS_KWARG", "CallBody", "call_body", "token_request"]

#: The keyword under which Ray Serve LLM hands a call's prompt ids to KV-aware routers.
TOKEN_IDS_KWARG: Final = "request_token_ids"
#: The OpenAI endpoints a body is rendered for (prefixkey.render's names).
CHAT: Final = "/v1/chat/completions"
COMPLETIONS: Final = "/v1/completions"


@dataclass(frozen=True, slots=True)
class CallBody:
    """What a call carries: token ids (``endpoint`` None) or an OpenAI body for ``endpoint``."""

    endpoint: str | None
    body: Mapping[str, Any] | None = None
    token_ids: TokenIds | None = None


def _as_mapping(arg: object) -> Mapping[str, Any] | None:
    if isinstance(arg, Mapping):
        return arg
    dump = getattr(arg, "model_dump", None)  # pydantic v2 (vLLM's and Ray's request models)
    if callable(dump):
        try:
            out = dump(exclude_unset=True)
        except TypeError:
            out = dump()
        if isinstance(out, Mapping):
            return out
    return None


def call_body(args: Sequence[Any], kwargs: Mapping[str, Any]) -> CallBody | None:
    """The request a Serve call carries, or None when it carries none (module docs).

    Ids that are not a list of ints (a bool, a float, a negative id) raise
    :class:`~prefixkey.errors.InvalidRequestError` naming ``request_token_ids``.
    """
    ids = kwargs.get(TOKEN_IDS_KWARG)
    if ids:
        try:
            return CallBody(None, None, check_token_ids(ids))
        except InvalidRequestError as exc:
            raise InvalidRequestError(TOKEN_IDS_KWARG, exc.reason,
                                      position=exc.position) from None
    for arg in args:
        body = _as_mapping(arg)
        if body is None:
            continue
        if body.get("messages") is not None:
            return CallBody(CHAT, body)
        if body.get("prompt") is not None:
            return CallBody(COMPLETIONS, body)
    return None


def token_request(call: CallBody) -> Request | None:
    """The call as a Request without rendering: given ids, or a completions prompt of ids.

    ``cache_salt`` is carried over from the body (vLLM salts block 0 with it).
    None when only a renderer can tell the ids (text, chat).
    """
    if call.token_ids is not None:
        return Request(call.token_ids)
    body = call.body or {}
    salt = body.get("cache_salt")
    if salt is not None and not isinstance(salt, str):
        raise InvalidRequestError("cache_salt", f"must be a string, got {salt!r}")
    prompt = body.get("prompt") if call.endpoint == COMPLETIONS else None
    if isinstance(prompt, list) and prompt and not isinstance(prompt[0], (str, list)):
        try:
            return Request(check_token_ids(prompt), cache_salt=salt or None)
        except InvalidRequestError as exc:
            raise InvalidRequestError("prompt", exc.reason, position=exc.position) from None
    return None
