"""vLLM's render endpoints as a source of token ids: their JSON answers, parsed (sans-IO).

``POST /v1/chat/completions/render`` and ``/v1/completions/render`` return what vLLM's
OpenAI server would hand its engine for a body, without generating. Their JSON changed
shape once (read from each release's wheel):

* **0.15.0-0.17.1** (``engine-prompts``): the routes live beside the OpenAI server's own
  (``entrypoints/openai/*/api_router.py``, a serving engine needed). Chat answers
  ``[conversation, [engine_prompt]]``, completions ``[engine_prompt, ...]``; an engine
  prompt is vLLM's prompt dict — ``prompt_token_ids``, optionally ``prompt`` (the text),
  ``cache_salt`` and (0.17) ``type: "token"``. No multimodal hashes: vLLM could not
  serialise a multimodal prompt there, so one is refused here.
* **0.18.0-0.33.0** (``generate-request``): the answer is the ``GenerateRequest`` a
  ``/generate`` service takes — one object for chat, a list (one per prompt) for
  completions — with ``token_ids``, ``model``, ``cache_salt`` and ``features``:
  ``mm_hashes`` and ``mm_placeholders`` (``{offset, length}``) per modality
  (``kwargs_data`` from 0.20, ``mm_metadata`` from 0.30, ``token_offsets`` from 0.25 add
  nothing to the keys). In 0.31 ``vllm launch render`` always serves them and
  ``vllm serve`` with ``--enable-scale-out``.

An answer carries the body's ``model`` (0.18+) and ``cache_salt``, but never a LoRA
path: the adapter comes from the server's ``--lora-modules``, given to the parser.
Its ``mm_hashes`` are the processor's hashes; the engine keys a block by
``"<lora_name>:<hash>"`` instead when it runs with ``--enable-tower-connector-lora``
and the request has a LoRA (``InputProcessor._get_mm_identifier``, 0.15-0.33), which
the parser then reproduces. An error answer (``{"error": {message, type, param,
code}}``) becomes the :class:`RenderRequestError` the in-process renderer raises for
the same body, with vLLM's status.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from packaging.version import Version

from ..core import DEFAULT_VLLM_VERSION, LoRA, MMItem, Request, check_token_ids, resolve_release
from ..core._checks import int_refusal
from ..core._era_table import era_at
from ..core._frozen import Frozen
from ..errors import InvalidRequestError, PrefixKeyError
from ._errors import RenderRequestError
from ._renderer import CHAT_ENDPOINT, COMPLETIONS_ENDPOINT, Rendered

__all__ = [
    "RENDER_PATHS",
    "RENDER_RESPONSE_SHAPES",
    "RenderEndpointError",
    "RenderResponseParser",
    "RenderResponseShape",
    "render_response_shape",
]

#: The render route of each OpenAI endpoint.
RENDER_PATHS: Final = {
    CHAT_ENDPOINT: CHAT_ENDPOINT + "/render",
    COMPLETIONS_ENDPOINT: COMPLETIONS_ENDPOINT + "/render",
}


@dataclass(frozen=True, slots=True)
class RenderResponseShape:
    """One era of the render endpoints' JSON: its first release and what it carries."""

    name: str
    since: str
    carries: str

    @property
    def first_version(self) -> Version:
        return Version(self.since)


#: The answer shapes, oldest first (:func:`render_response_shape` picks a release's).
RENDER_RESPONSE_SHAPES: Final = (
    RenderResponseShape(
        "engine-prompts",
        "0.15.0",
        "chat: [conversation, [engine prompt]]; completions: [engine prompt, ...]; "
        "an engine prompt has prompt_token_ids, prompt, cache_salt; no multimodal hashes",
    ),
    RenderResponseShape(
        "generate-request",
        "0.18.0",
        "GenerateRequest objects (a list for completions): token_ids, model, cache_salt, "
        "features.mm_hashes / features.mm_placeholders",
    ),
)


class RenderEndpointError(PrefixKeyError):
    """vLLM's render endpoint could not give token ids: unreachable, failed, or malformed.

    ``status`` is the HTTP status where there was an answer (a 5xx, or a 200 whose JSON
    is not the release's render response), else None. ``field`` names what is at fault:
    ``"render_url"`` for the connection, or the path inside the answer
    (``"response.token_ids"``, ``"response.features.mm_placeholders.image[1]"``).
    A body vLLM refuses (4xx) is a :class:`RenderRequestError` instead.
    """

    def __init__(self, field: str, message: str, *, status: int | None = None) -> None:
        self.field = field
        self.status = status
        self.reason = message
        super().__init__(f"{field}: {message}")


def render_response_shape(vllm_version: str) -> RenderResponseShape:
    """The JSON shape a release's render endpoints answer with (strict release check)."""
    shape = era_at(RENDER_RESPONSE_SHAPES, resolve_release(vllm_version).release)
    if shape is None:
        raise RenderEndpointError(
            "vllm_version",
            f"vLLM {vllm_version} has no render endpoints (they appeared in "
            f"{RENDER_RESPONSE_SHAPES[0].since})",
        )
    return shape


#: A vLLM ``param`` longer than this is not echoed as the error's field (issue 23: 200 KB).
_MAX_PARAM_CHARS: Final = 256


def _body_field(param: Any) -> str:
    """vLLM's ``param`` as a body field: ``body.messages.0.content`` -> ``messages[0].content``."""
    if not isinstance(param, str) or not param:
        return "body"
    parts = param.split(".")
    if parts[0] == "body" and len(parts) > 1:
        parts = parts[1:]
    field = parts[0]
    for part in parts[1:]:
        field += f"[{part}]" if part.isdigit() else f".{part}"
    return field


def _error_answer(status: int, payload: Any) -> PrefixKeyError:
    error = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("message"), str):
        return RenderEndpointError(
            "response", f"HTTP {status} without vLLM's error object", status=status
        )
    if 400 <= status < 500:
        param = error.get("param")
        if isinstance(param, str) and len(param) > _MAX_PARAM_CHARS:
            # A param is a path into the body: one this long is the server echoing a value.
            return RenderRequestError("body", f"{error['message']} (vLLM's param: "
                                      f"{len(param):,} characters, not echoed)", status=status)
        return RenderRequestError(_body_field(param), error["message"], status=status)
    kind = error.get("type")
    return RenderEndpointError(
        "response", f"HTTP {status} ({kind}): {error['message']}", status=status
    )


def _malformed(where: str, message: str) -> RenderEndpointError:
    return RenderEndpointError(where, message, status=200)


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _malformed(where, f"must be a JSON object, got {type(value).__name__}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise _malformed(where, f"must be a JSON array, got {type(value).__name__}")
    return value


def _optional_str(value: Any, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise _malformed(where, f"must be a string or null, got {type(value).__name__}")
    return value


def _count(value: Any, where: str, minimum: int) -> int:
    refusal = int_refusal(value, least=minimum)
    if refusal is not None:
        raise _malformed(where, refusal)
    return value  # type: ignore[no-any-return]  # int_refusal checked it


class RenderResponseParser(Frozen):
    """Turns render-endpoint answers into the :class:`Rendered` prompts to hash.

    Built once per render server: the release whose JSON it answers with
    (``vllm_version``), the static adapters of its ``--lora-modules`` (``loras``, in
    their order: vLLM numbers them from 1), the names it serves the base model as
    (``served_model_names``; when given, a ``model`` that is neither one nor an adapter
    is refused, since its LoRA path is unknown — else such a model counts as the base)
    and whether it runs with ``--enable-tower-connector-lora``. Immutable, thread-safe.
    """

    __slots__ = ("_loras", "_served", "_shape", "_tower_lora", "vllm_version")
    # Declared for type checkers; __slots__ holds them, set once by _bind.
    _loras: dict[str, LoRA]
    _served: frozenset[str]
    _shape: RenderResponseShape
    _tower_lora: bool
    vllm_version: str

    def __init__(self, *, vllm_version: str = DEFAULT_VLLM_VERSION, loras: Iterable[LoRA] = (),
                 served_model_names: Sequence[str] = (),
                 enable_tower_connector_lora: bool = False) -> None:
        shape = render_response_shape(vllm_version)
        by_name: dict[str, LoRA] = {}
        for i, lora in enumerate(loras):
            if not isinstance(lora, LoRA):
                raise InvalidRequestError("loras", "must be LoRA objects", position=i)
            if lora.name in by_name:
                # vLLM refuses to load a second adapter of one name: the server would not start.
                raise InvalidRequestError("loras", f"adapter {lora.name!r} given twice",
                                          position=i)
            by_name[lora.name] = lora
        self._bind(_shape=shape, vllm_version=vllm_version, _loras=by_name,
                   _served=frozenset(served_model_names),
                   _tower_lora=bool(enable_tower_connector_lora))

    @property
    def shape(self) -> RenderResponseShape:
        return self._shape

    def lora_for(self, model: str | None) -> LoRA | None:
        """The adapter a body's ``model`` names; None for the base model."""
        if not model or model in self._served:
            return None
        lora = self._loras.get(model)
        if lora is None and self._served:
            raise RenderEndpointError(
                "response.model",
                f"{model!r} is neither a served name ({', '.join(sorted(self._served))}) nor "
                "a --lora-modules adapter: its LoRA path is unknown",
                status=200,
            )
        return lora

    def parse(self, endpoint: str, status: int, payload: Any, *,
              model: str | None = None) -> tuple[Rendered, ...]:
        """The prompts of one answer, in vLLM's order (one per completions prompt).

        ``endpoint`` is the body's OpenAI endpoint (``/v1/chat/completions`` or
        ``/v1/completions``; the ``/render`` route is accepted too), ``status`` and
        ``payload`` the HTTP status and decoded JSON of the answer, ``model`` the body's
        ``model`` (answers before 0.18 do not echo it). A 4xx answer raises
        :class:`RenderRequestError`, anything else that is not a render answer
        :class:`RenderEndpointError`.
        """
        endpoint = endpoint.removesuffix("/render")
        if endpoint not in RENDER_PATHS:
            raise InvalidRequestError(
                "endpoint", f"must be {CHAT_ENDPOINT!r} or {COMPLETIONS_ENDPOINT!r}, "
                f"got {endpoint!r}")
        if status != 200:
            raise _error_answer(status, payload)
        chat = endpoint == CHAT_ENDPOINT
        if self._shape.name == "engine-prompts":
            if chat:
                pair = _list(payload, "response")
                if len(pair) != 2:
                    raise _malformed("response", "must be [conversation, engine_prompts]")
                prompts = _list(pair[1], "response[1]")
                if len(prompts) != 1:
                    raise _malformed("response[1]", "must hold exactly one engine prompt")
                return (self._engine_prompt(prompts[0], "response[1][0]", model),)
            items = _list(payload, "response")
            return tuple(self._engine_prompt(p, f"response[{i}]", model)
                         for i, p in enumerate(items))
        if chat:
            return (self._generate_request(payload, "response", model),)
        items = _list(payload, "response")
        return tuple(self._generate_request(p, f"response[{i}]", model)
                     for i, p in enumerate(items))

    def _request(self, token_ids: Any, where: str, model: str | None, cache_salt: str | None,
                 mm: tuple[MMItem, ...] = ()) -> Request:
        try:
            ids = check_token_ids(_list(token_ids, where), field=where)
        except InvalidRequestError as exc:
            raise _malformed(where, exc.reason if exc.position is None
                             else f"[{exc.position}] {exc.reason}") from None
        if not ids:
            raise _malformed(where, "is empty")
        lora = self.lora_for(model)
        if mm and lora is not None and self._tower_lora:
            mm = tuple(MMItem(f"{lora.name}:{m.identifier}", m.offset, m.length) for m in mm)
        try:
            request = Request(ids, lora=lora, cache_salt=cache_salt, mm_items=mm)
            request.check_inside(len(ids))
        except InvalidRequestError as exc:
            raise _malformed(f"{where.rsplit('.', 1)[0]}.features", str(exc)) from None
        return request

    def _engine_prompt(self, value: Any, where: str, model: str | None) -> Rendered:
        prompt = _object(value, where)
        if prompt.get("type", "token") != "token" or "multi_modal_data" in prompt \
                or "prompt_embeds" in prompt:
            raise _malformed(where, f"is not a token prompt (vLLM {self.vllm_version}'s render "
                             "answers carry no multimodal hashes or embeddings)")
        salt = _optional_str(prompt.get("cache_salt"), f"{where}.cache_salt")
        request = self._request(prompt.get("prompt_token_ids"), f"{where}.prompt_token_ids",
                                model, salt)
        text = _optional_str(prompt.get("prompt"), f"{where}.prompt")
        return Rendered(request, text, model or "")

    def _generate_request(self, value: Any, where: str, model: str | None) -> Rendered:
        answer = _object(value, where)
        echoed = _optional_str(answer.get("model"), f"{where}.model")
        name = echoed if echoed is not None else model
        salt = _optional_str(answer.get("cache_salt"), f"{where}.cache_salt")
        features = answer.get("features")
        mm = () if features is None else self._mm_items(features, f"{where}.features")
        request = self._request(answer.get("token_ids"), f"{where}.token_ids", name, salt, mm)
        return Rendered(request, None, name or "")

    def _mm_items(self, value: Any, where: str) -> tuple[MMItem, ...]:
        features = _object(value, where)
        hashes = _object(features.get("mm_hashes"), f"{where}.mm_hashes")
        ranges = _object(features.get("mm_placeholders"), f"{where}.mm_placeholders")
        if set(hashes) != set(ranges):
            raise _malformed(where, "mm_hashes and mm_placeholders name different modalities")
        items: list[MMItem] = []
        for modality, modality_hashes in hashes.items():
            at = f"{where}.mm_hashes.{modality}"
            ids = _list(modality_hashes, at)
            spans = _list(ranges[modality], f"{where}.mm_placeholders.{modality}")
            if len(ids) != len(spans):
                raise _malformed(at, f"has {len(ids)} hashes for {len(spans)} placeholders")
            for i, (identifier, span) in enumerate(zip(ids, spans, strict=True)):
                if not isinstance(identifier, str) or not identifier:
                    raise _malformed(f"{at}[{i}]", "must be a non-empty string")
                span_at = f"{where}.mm_placeholders.{modality}[{i}]"
                span = _object(span, span_at)
                offset = _count(span.get("offset"), f"{span_at}.offset", 0)
                length = _count(span.get("length"), f"{span_at}.length", 1)
                items.append(MMItem(identifier, offset, length))
        # The engine keys items in prompt order; the answer groups them by modality.
        items.sort(key=lambda item: item.offset)
        return tuple(items)
