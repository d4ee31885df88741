"""Image content parts of a chat body, as vLLM 0.31's chat server and processor take them.

vLLM's ``chat_utils`` loads each ``image_url`` / ``input_image`` part
(``MediaConnector``: data: URLs, file:// URLs under
``--allowed-local-media-path``; an http(s) URL is fetched by the caller, or by
a fetcher the caller opts into, and only from ``--allowed-media-domains``:
:func:`fetch_media_url`), hands the template ``{"type": "image", <the part's
unknown fields>}`` in 'openai' format or the model's placeholder string in
'string' format (BLIP-2 has none: ``get_placeholder_str`` returns None, so the
image leaves no text), and checks the per-prompt item limit as each part
arrives. After tokenization the model's processor puts each image's expansion
into the prompt; where it lands is the architecture's own rule
(:data:`IMAGE_ARCHITECTURES`), and what it is comes from the caller
(``placeholder_token_ids``): prefixkey never guesses a span.
The identifier is :class:`~prefixkey.multimodal.MMHasher`'s, with the
``--model`` string, ``--mm-hasher-algorithm`` and ``--media-io-kwargs``.
"""

from __future__ import annotations

import http.client
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, NoReturn

from ..core import MMItem, check_token_ids
from ..errors import InvalidRequestError, RemoteMediaError
from ._chat import _KNOWN_PART_FIELDS, ContentParts
from ._deadline import Watchdog, watched_opener
from ._errors import RenderRequestError, RenderUnsupportedError
from ._options import ServerOptions

if TYPE_CHECKING:
    from ..multimodal import MediaSource, MMHasher

__all__ = ["IMAGE_ARCHITECTURES", "ImageChat", "ImageParts", "MediaFetcher", "fetch_media_url"]

#: Fetches an http(s) image URL's bytes (``field`` names the part in errors).
MediaFetcher = Callable[[str, str], bytes]
# vLLM's VLLM_IMAGE_FETCH_TIMEOUT default, and MediaSource's per-item bound.
_FETCH_TIMEOUT: Final = 5.0
_FETCH_MAX_BYTES: Final = 64 << 20


@dataclass(frozen=True, slots=True)
class _Placement:
    """Where an architecture's processor puts an image's expansion (vLLM 0.31)."""

    #: ``get_supported_mm_limits()["image"]``: the images one prompt may carry.
    limit: int
    #: How a caller finds the expansion in the folder, for error messages.
    hint: str


#: Architectures whose image path prefixkey reproduces, checked against a real 0.31 render
#: server: BLIP-2's processor inserts its expansion at the prompt's start
#: (``PromptInsertion(target=PromptIndexTargets.start())``), one image per prompt.
IMAGE_ARCHITECTURES: Final[Mapping[str, _Placement]] = {
    "Blip2ForConditionalGeneration": _Placement(
        1, "config.json num_query_tokens copies of image_token_index (the '<image>' id)"),
}
_IMAGE_PARTS: Final = ("image_url", "input_image")


def image_architecture(config: Mapping[str, Any]) -> str | None:
    """The folder's architecture when its image path is reproduced, else None."""
    architectures = config.get("architectures")
    if isinstance(architectures, list):
        for name in architectures:
            if isinstance(name, str) and name in IMAGE_ARCHITECTURES:
                return name
    return None


class ImageParts(ContentParts):
    """One chat body's images, collected while its messages are parsed (one per render)."""

    def __init__(self, chat: ImageChat) -> None:
        self._chat = chat
        self.identifiers: list[str] = []

    def media_part(self, part_type: str, part: Mapping[str, Any], field: str, *,
                   wrap: bool) -> Any:
        if part_type not in _IMAGE_PARTS:
            return super().media_part(part_type, part, field, wrap=wrap)
        self.identifiers.append(self._chat.identifier(part_type, part, field,
                                                      len(self.identifiers) + 1))
        if wrap:
            return {"type": "image",
                    **{k: v for k, v in part.items() if k not in _KNOWN_PART_FIELDS}}
        return None  # the architecture's placeholder string is None: the image leaves no text


class ImageChat:
    """The image path of one replica: its hasher, media rules and architecture, built once."""

    __slots__ = ("_architecture", "_fetch", "_hasher", "_source")

    _hasher: MMHasher | None
    _source: MediaSource | None

    def __init__(self, options: ServerOptions, config: Mapping[str, Any],
                 fetch: MediaFetcher | None = None) -> None:
        self._architecture = image_architecture(config)
        # Only with a list of domains: vLLM fetches from any host when it has none.
        self._fetch = fetch if options.allowed_media_domains else None
        try:
            from ..multimodal import MediaSource, MMHasher
        except ImportError:  # the multimodal extra is missing: images are refused when met
            self._hasher = self._source = None
            return
        self._hasher = MMHasher(model=options.model, vllm_version=options.vllm_version,
                                mm_hasher_algorithm=options.mm_hasher_algorithm,
                                media_io_kwargs={k: dict(v) for k, v in
                                                 options.media_io_kwargs.items()})
        self._source = MediaSource(allowed_local_media_path=options.allowed_local_media_path,
                                   allowed_media_domains=options.allowed_media_domains)

    def parts(self) -> ImageParts:
        return ImageParts(self)

    def identifier(self, part_type: str, part: Mapping[str, Any], field: str,
                   number: int) -> str:
        """The image's identifier, after vLLM's per-prompt item limit."""
        if self._architecture is None:
            raise RenderUnsupportedError(
                field, "where this architecture's processor puts an image's placeholder "
                f"tokens is not verified (verified: {', '.join(IMAGE_ARCHITECTURES)}): "
                "render it with vLLM's render endpoint")
        if self._hasher is None or self._source is None:
            raise RenderUnsupportedError(
                field, "an image needs the multimodal extra: pip install 'prefixkey[multimodal]'")
        uuid = part.get("uuid")
        if uuid is not None and not isinstance(uuid, str):
            raise RenderUnsupportedError(f"{field}.uuid", "only a string uuid is reproduced")
        url, url_field = _url(part_type, part, field)
        data = None if not url else self._image_bytes(self._source, url, url_field)
        identifier = self._hasher.image(data, uuid=uuid, field=url_field)
        # vLLM loads the image, then counts it (MultiModalItemTracker.add).
        limit = IMAGE_ARCHITECTURES[self._architecture].limit
        if number > limit:
            raise RenderRequestError(field, f"At most {limit} image(s) may be provided in "
                                     "one prompt.")
        return identifier

    def _image_bytes(self, source: MediaSource, url: str, field: str) -> bytes:
        try:
            return source.image_bytes(url, field=field)
        except RemoteMediaError:  # raised only for a host the domain list allows
            if self._fetch is None:
                raise
            return self._fetch(url, field)

    def place(self, ids: list[int], identifiers: Sequence[str],
              placeholder_token_ids: Any) -> tuple[list[int], tuple[MMItem, ...]]:
        """The prompt after the processor's updates, and each image's item."""
        if placeholder_token_ids is None:
            if not identifiers:
                return ids, ()
            hint = IMAGE_ARCHITECTURES[self._architecture].hint if self._architecture else ""
            raise InvalidRequestError(
                "placeholder_token_ids", f"the body has {len(identifiers)} image(s): give, per "
                "image in order, the token ids the model's processor puts in the prompt for it "
                f"({hint}); prefixkey does not guess them")
        if not isinstance(placeholder_token_ids, list):
            raise InvalidRequestError("placeholder_token_ids", "must be an array (one array "
                                      "of token ids per image)")
        if len(placeholder_token_ids) != len(identifiers):
            raise InvalidRequestError(
                "placeholder_token_ids", f"has {len(placeholder_token_ids)} entries but the "
                f"body has {len(identifiers)} image(s)")
        expansions = [list(check_token_ids(e, field=f"placeholder_token_ids[{i}]"))
                      for i, e in enumerate(placeholder_token_ids)]
        for i, expansion in enumerate(expansions):
            if not expansion:
                raise InvalidRequestError(f"placeholder_token_ids[{i}]", "must not be empty")
        # BLIP-2 (the one verified architecture, one image): inserted before the prompt.
        (expansion,) = expansions
        return [*expansion, *ids], (MMItem(identifiers[0], 0, len(expansion)),)


def _url(part_type: str, part: Mapping[str, Any], field: str) -> tuple[Any, str]:
    """The part's URL as vLLM reads it (``_parse_chat_message_content_mm_part``)."""
    value = part.get("image_url")
    if part_type == "input_image" and part.get("type") == "input_image":
        return value, f"{field}.image_url"  # the Responses form: the URL itself
    if isinstance(value, dict):
        return value.get("url"), f"{field}.image_url.url"
    if value is not None and part.get("type") == "image_url" and part.get("uuid") is None:
        raise RenderRequestError(f"{field}.image_url", "must be an object with a url")
    return value, f"{field}.image_url"


def fetch_media_url(url: str, field: str, *, timeout: float = _FETCH_TIMEOUT,
                    max_bytes: int = _FETCH_MAX_BYTES) -> bytes:
    """An http(s) URL's body, as vLLM's MediaConnector gets it: one GET, bounded.

    A :data:`MediaFetcher` for ``Renderer(…, media_fetcher=fetch_media_url)``.
    A redirect is refused (vLLM follows it to any host by default, which would
    step outside ``--allowed-media-domains``), as is a status other than 200, a
    body over ``max_bytes`` and an answer not complete within ``timeout`` seconds.
    """
    # ``timeout`` bounds the whole fetch, not each read (a server dripping bytes).
    with Watchdog(timeout) as watchdog:
        opener = watched_opener(watchdog, _NoRedirect)
        try:
            with opener.open(urllib.request.Request(url), timeout=timeout) as response:
                data: bytes = response.read(max_bytes + 1)
        except urllib.error.HTTPError as exc:
            _fetch_failed(field, url, f"HTTP {exc.code}")
        except (OSError, http.client.HTTPException, ValueError) as exc:
            if watchdog.expired:
                _fetch_failed(field, url, f"no complete answer within {timeout:g} s")
            _fetch_failed(field, url, str(getattr(exc, "reason", exc)))
    if watchdog.expired:  # cut short: the body read so far is not the body
        _fetch_failed(field, url, f"no complete answer within {timeout:g} s")
    if len(data) > max_bytes:
        _fetch_failed(field, url, f"more than {max_bytes} bytes")
    return data


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the 3xx then surfaces as an HTTPError


def _fetch_failed(field: str, url: str, why: str) -> NoReturn:
    raise InvalidRequestError(field, f"cannot fetch {url}: {why}")
