"""Image content parts of a chat body, as vLLM 0.31's chat server and processor take them.

vLLM's ``chat_utils`` loads each ``image_url`` / ``input_image`` part
(``MediaConnector``: data: URLs, file:// URLs under
``--allowed-local-media-path``; an http(s) URL is fetched by the caller, or by
a fetcher the caller opts into, and only from ``--allowed-media-domains``:
:func:`fetch_media_url`), hands the template ``{"type": "image", <the part's
unknown fields>}`` in 'openai' format or the model's placeholder string in
'string' format (the placeholders an image part leaves are put before the
message's text, as ``_get_full_multimodal_text_prompt`` does), and checks the
per-prompt item limit as each part arrives (``--limit-mm-per-prompt`` and the
model's own; a modality the model does not take has the limit 0); the render
server loads the images once the whole conversation is parsed. After tokenization
the model's processor replaces each image's marker by its expansion: the folder's
vision family (prefixkey/render/_vision) computes it from the image's size and the
processor kwargs in force, and says where each item lies. The identifier is
:class:`~prefixkey.multimodal.MMHasher`'s, with the ``--model`` string,
``--mm-hasher-algorithm``, ``--media-io-kwargs`` and the body's own
``mm_processor_kwargs``.
"""

from __future__ import annotations

import http.client
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, NoReturn

from ..core import MMItem, check_token_ids
from ..errors import InvalidRequestError, RemoteMediaError
from ._audio import AUDIO_ARCHITECTURES, AUDIO_LIMIT, AudioChat
from ._chat import _KNOWN_PART_FIELDS, ContentParts
from ._deadline import Watchdog, watched_opener
from ._eras import render_era, render_release
from ._errors import RenderRequestError, RenderUnsupportedError
from ._options import ServerOptions
from ._vision import (
    DEFAULT_LIMIT,
    FAMILIES,
    MISTRAL_FORMAT,
    UNVERIFIED,
    ImageSize,
    VisionFamily,
    VisionFolder,
    family_architecture,
)

if TYPE_CHECKING:
    from ..multimodal import LoadedImage, MediaSource, MMHasher

__all__ = ["IMAGE_ARCHITECTURES", "ImageChat", "ImageParts", "MediaFetcher", "fetch_media_url"]

#: Fetches an http(s) image URL's bytes (``field`` names the part in errors).
MediaFetcher = Callable[[str, str], bytes]
# vLLM's VLLM_IMAGE_FETCH_TIMEOUT default, and MediaSource's per-item bound.
_FETCH_TIMEOUT: Final = 5.0
_FETCH_MAX_BYTES: Final = 64 << 20
#: Architectures whose image path prefixkey reproduces (their family in render/_vision).
IMAGE_ARCHITECTURES: Final = FAMILIES
_IMAGE_PARTS: Final = ("image_url", "input_image")
#: The other media parts vLLM's item tracker counts, by modality.
_MODALITIES: Final = {"input_audio": "audio", "audio_url": "audio", "video_url": "video"}
#: Distinct per-request processor kwargs whose hashers a Renderer keeps.
_HASHERS_KEPT: Final = 64


def image_architecture(config: Mapping[str, Any]) -> str | None:
    """The folder's architecture when its image path is reproduced, else None."""
    architecture = family_architecture(config)
    return architecture if architecture in FAMILIES else None


class _Placeholder(str):
    """An image's placeholder text in 'string' content format (put before the text)."""

    __slots__ = ()


class ImageParts(ContentParts):
    """One chat body's images, collected while its messages are parsed (one per render)."""

    def __init__(self, chat: ImageChat, kwargs: Mapping[str, Any]) -> None:
        self._chat = chat
        self._kwargs = kwargs
        #: Each image's part, field and URL, counted as it is parsed, loaded by finish().
        self._pending: list[tuple[Mapping[str, Any], str | None, str]] = []
        self.images: list[LoadedImage] = []
        #: Which image each placeholder takes, where the encoder says (DeepSeek V4.1, whose
        #: 0.33 renderer reorders them, dropping those it left out); None: in order.
        self.order: list[int] | None = None
        #: Each image's part (the body's own object) and bytes, in the images' order: the
        #: mistral path hands mistral_common the image as it opens the URL itself.
        self.sources: list[tuple[Mapping[str, Any], bytes]] = []
        #: The first part of a modality the model takes whose processor is not run here.
        self._refused: RenderUnsupportedError | None = None
        #: Each audio part (type, part, field, wrap), counted as parsed, checked by finish().
        self._audio: list[tuple[str, Mapping[str, Any], str, bool]] = []

    @property
    def first_clip(self) -> str | None:
        """The field of the body's first audio part (checked by finish()), else None."""
        return self._audio[0][2] if self._audio else None

    @property
    def identifiers(self) -> list[str]:
        return [image.identifier for image in self.images]

    def media_part(self, part_type: str, part: Mapping[str, Any], field: str, *,
                   wrap: bool) -> Any:
        if part_type not in _IMAGE_PARTS:
            modality = _MODALITIES.get(part_type)
            self._chat.check_modality(modality, field)
            if modality == "audio" and self._chat.audio is not None:
                self._chat.check_count(len(self._audio) + 1, "audio")
                self._audio.append((part_type, part, field, wrap))
                return None  # Whisper has no placeholder text (get_placeholder_str: None)
            try:
                return super().media_part(part_type, part, field, wrap=wrap)
            except RenderUnsupportedError as exc:
                if not self._chat.takes_unrun(modality):
                    raise
                # vLLM counts every part before it loads any, so a later part's 400 comes
                # first: refused once the parse is done.
                self._refused = self._refused or exc
                return None
        self._chat.check_modality("image", field)
        url, url_field = self._chat.admit(part_type, part, field, len(self._pending) + 1)
        self._pending.append((part, url, url_field))
        if wrap:
            return {"type": "image",
                    **{k: v for k, v in part.items() if k not in _KNOWN_PART_FIELDS}}
        text = self._chat.placeholder(len(self._pending))
        return None if text is None else _Placeholder(text)

    def finish(self) -> None:
        """vLLM's tracker resolves the items once the whole conversation is parsed (and
        counted): each image loaded, in order."""
        if self._refused is not None:
            raise self._refused
        audio = self._chat.audio
        for part_type, part, field, wrap in self._audio:
            assert audio is not None  # media_part() kept no audio part otherwise
            audio.check_clip(part_type, part, field, wrap)
        for part, url, url_field in self._pending:
            self.images.append(self._chat.load(part, url, url_field, self._kwargs,
                                               self.sources))
        self._pending.clear()

    def join_texts(self, parts: list[Any]) -> str:
        """``_get_full_multimodal_text_prompt``: the texts joined, missing placeholders first."""
        placeholders = [p for p in parts if isinstance(p, _Placeholder)]
        text = "\n".join(p for p in parts if not isinstance(p, _Placeholder))
        if not placeholders:
            return text
        missing: list[str] = []
        for placeholder in dict.fromkeys(placeholders):
            count = placeholders.count(placeholder) - text.count(placeholder)
            if count < 0:
                raise RenderRequestError(
                    "messages", f"Found more '{placeholder}' placeholders in input prompt than "
                    "actual multimodal data items.")
            missing.extend([str(placeholder)] * count)
        return "\n".join([*missing, text] if text else missing)


#: The media parts vLLM hands its item tracker, which for an architecture its registry
#: does not call multimodal answers 400 "<served name> is not a multimodal model"
#: (MultiModalRegistry.create_processor; real_dsv32_/real_dsv4_vectors.jsonl).
_TRACKED_PARTS: Final = frozenset({"image_url", "input_audio", "audio_url", "video_url"})
#: The architectures whose render servers answered those parts so (harvested: the
#: DeepSeek encoder modes'; DeepseekV41ForCausalLM is multimodal there: a vision family).
TEXT_ONLY_ARCHITECTURES: Final = frozenset({"DeepseekV32ForCausalLM", "DeepseekV4ForCausalLM"})

#: Architectures without a vision family -> the modalities their model takes
#: (``get_supported_mm_limits``): a part of another modality is vLLM's 400 (its limit is
#: 0; Whisper's image part: real_whisper_vectors.jsonl), one of theirs needs their
#: processor (refused: ContentParts.media_part).
OTHER_MODALITIES: Final[Mapping[str, frozenset[str]]] = {
    "WhisperForConditionalGeneration": frozenset({"audio"}),
}


class TextOnlyParts(ImageParts):
    """The parts of a body for a text-only architecture: its media parts are vLLM's 400,
    its other parts as any body's."""

    def __init__(self, chat: ImageChat, kwargs: Mapping[str, Any], model: str) -> None:
        super().__init__(chat, kwargs)
        self._model = model

    def media_part(self, part_type: str, part: Mapping[str, Any], field: str, *,
                   wrap: bool) -> Any:
        if part_type in _TRACKED_PARTS:
            raise RenderRequestError(field, f"{self._model} is not a multimodal model")
        return super().media_part(part_type, part, field, wrap=wrap)


class ImageChat:
    """The image path of one replica: its hasher, media rules and vision family, built once."""

    __slots__ = ("_architecture", "_family", "_fetch", "_hasher", "_hashers", "_limit",
                 "_lock", "_modalities", "_options", "_refusal", "_server_kwargs", "_source",
                 "_text_only", "audio")

    _hasher: MMHasher | None
    _source: MediaSource | None

    def __init__(self, options: ServerOptions, config: Mapping[str, Any],
                 fetch: MediaFetcher | None = None, vision: VisionFolder | None = None,
                 preprocessor: Mapping[str, Any] | None = None) -> None:
        """``preprocessor``: the folder's preprocessor_config.json (an audio model's
        feature extractor)."""
        self._options = options
        self._architecture = family_architecture(config)
        # vLLM's model_config.served_model_name: the first served name, else the model.
        architectures = config.get("architectures")
        first = (architectures[0] if isinstance(architectures, list) and architectures[:1]
                 and isinstance(architectures[0], str) else None)
        self._text_only = (options.served_names[0] if first in TEXT_ONLY_ARCHITECTURES
                           else None)
        self._family: VisionFamily | None = None
        self._refusal = self._why_refused(options)
        self._server_kwargs = dict(options.mm_processor_kwargs)
        if self._refusal is None and vision is not None:
            assert self._architecture is not None
            self._family = FAMILIES[self._architecture](vision)
            self._family.check_kwargs(self._server_kwargs, "--mm-processor-kwargs")
        self._modalities = (self._family.modalities if self._family is not None
                            else OTHER_MODALITIES.get(first) if first is not None else None)
        supported = self._family.limit if self._family is not None else None
        self._limit = {"image": (options.limit_mm_per_prompt.get("image", DEFAULT_LIMIT),
                                 supported),
                       "audio": (options.limit_mm_per_prompt.get("audio", DEFAULT_LIMIT),
                                 AUDIO_LIMIT)}
        #: The audio rule of an architecture whose audio answers are reproduced here
        #: (render/_audio.py), else None: its audio parts are refused.
        self.audio = (AudioChat(config, preprocessor or {},
                                render_era(options.vllm_version).mm_placeholder_bounds)
                      if first in AUDIO_ARCHITECTURES.get(
                          render_release(options.vllm_version).release, frozenset())
                      else None)
        # Only with a list of domains: vLLM fetches from any host when it has none.
        self._fetch = fetch if options.allowed_media_domains else None
        self._hashers: dict[str, MMHasher] = {}
        self._lock = threading.Lock()
        try:
            from ..multimodal import MediaSource
        except ImportError:  # the multimodal extra is missing: images are refused when met
            self._hasher = self._source = None
            return
        self._hasher = self._new_hasher(None)
        self._source = MediaSource(allowed_local_media_path=options.allowed_local_media_path,
                                   allowed_media_domains=options.allowed_media_domains)

    def _why_refused(self, options: ServerOptions) -> str | None:
        architecture = self._architecture
        if architecture is None:
            return ("this architecture's image processor is not verified here (verified "
                    f"families: {', '.join(f.name for f in FAMILIES.values())})")
        if architecture in UNVERIFIED:
            family, why = UNVERIFIED[architecture]
            return f"{family}'s image processor ({architecture}) is {why} here"
        family_cls = FAMILIES[architecture]
        if architecture in MISTRAL_FORMAT and options.tokenizer_mode != "mistral":
            return (f"{family_cls.name}'s images are rendered in --tokenizer-mode mistral "
                    "only (vLLM: This model requires `--tokenizer-mode mistral`)")
        if options.vllm_version not in family_cls.releases:
            return (f"{family_cls.name}'s images were verified against vLLM "
                    f"{', '.join(sorted(family_cls.releases))} only, not "
                    f"{options.vllm_version}")
        return None

    def _new_hasher(self, request_kwargs: Mapping[str, Any] | None) -> MMHasher:
        from ..multimodal import MMHasher

        options = self._options
        return MMHasher(model=options.model, vllm_version=options.vllm_version,
                        mm_hasher_algorithm=options.mm_hasher_algorithm,
                        mm_processor_kwargs=request_kwargs,
                        media_io_kwargs={k: dict(v) for k, v in
                                         options.media_io_kwargs.items()})

    def parts(self, request_kwargs: Mapping[str, Any] | None = None) -> ImageParts:
        """A body's image collector; ``request_kwargs`` its trusted ``mm_processor_kwargs``."""
        kwargs = dict(request_kwargs or {})
        if kwargs and self._family is not None:
            self._family.check_kwargs(kwargs, "mm_processor_kwargs")
        if self._text_only is not None:
            return TextOnlyParts(self, kwargs, self._text_only)
        return ImageParts(self, kwargs)

    def check_modality(self, modality: str | None, field: str) -> None:
        """``validate_num_items`` for a part of a modality the model does not take (its
        family's, or :data:`OTHER_MODALITIES`': its supported limit is 0, whatever
        ``--limit-mm-per-prompt`` says)."""
        modalities = self._modalities
        if modality is not None and modalities is not None and modality not in modalities:
            raise RenderRequestError(
                field, f"At most 0 {modality}(s) may be provided in one prompt.")

    def takes_unrun(self, modality: str | None) -> bool:
        """Whether ``modality`` is one :data:`OTHER_MODALITIES` says the model takes: its
        parts are counted, then refused (no processor of theirs is run here)."""
        return (self._family is None and modality is not None
                and self._modalities is not None and modality in self._modalities)

    def placeholder(self, number: int) -> str | None:
        return None if self._family is None else self._family.placeholder(number)

    def _hasher_for(self, request_kwargs: Mapping[str, Any]) -> MMHasher:
        assert self._hasher is not None
        if not request_kwargs:
            return self._hasher
        key = json.dumps(request_kwargs, sort_keys=True)
        with self._lock:
            hasher = self._hashers.get(key)
            if hasher is None:
                if len(self._hashers) >= _HASHERS_KEPT:
                    self._hashers.clear()
                hasher = self._hashers[key] = self._new_hasher(request_kwargs)
        return hasher

    def admit(self, part_type: str, part: Mapping[str, Any], field: str,
              number: int) -> tuple[str | None, str]:
        """What vLLM checks of an image part as it parses it: its shape, then the
        per-prompt item limit (``MultiModalItemTracker.add``); the URL and its field."""
        if self._refusal is not None or self._family is None:
            raise RenderUnsupportedError(
                field, f"{self._refusal or 'no vision family'}: render it with vLLM's render "
                "endpoint")
        if self._hasher is None or self._source is None:
            raise RenderUnsupportedError(
                field, "an image needs the multimodal extra: pip install 'prefixkey[multimodal]'")
        uuid = part.get("uuid")
        if uuid is not None and not isinstance(uuid, str):
            raise RenderUnsupportedError(f"{field}.uuid", "only a string uuid is reproduced")
        url, url_field = _url(part_type, part, field)
        if url is None and uuid is not None and self._architecture not in MISTRAL_FORMAT:
            # By its uuid alone: vLLM's processor looks the item up in its cache (place()).
            self.check_count(number, "image")
            return None, url_field
        if not url:
            raise RenderUnsupportedError(
                url_field, "an image without data is not reproduced here (by its uuid "
                "alone: the server's cache holds its size; with an empty URL: not verified)")
        self.check_count(number, "image")
        return url, url_field

    def load(self, part: Mapping[str, Any], url: str | None, url_field: str,
             request_kwargs: Mapping[str, Any],
             sources: list[tuple[Mapping[str, Any], bytes]] | None = None) -> LoadedImage:
        """An admitted image's identifier and loaded size (``sources`` gets the part and
        its bytes; an image by its uuid alone, ``url`` None, has neither bytes nor size):
        vLLM's render server loads the items after the parse."""
        assert self._hasher is not None and self._source is not None  # admit() refused
        uuid = part.get("uuid")
        if url is None:
            return self._hasher_for(request_kwargs).loaded_image(None, uuid=uuid,
                                                                 field=url_field)
        data = self._image_bytes(self._source, url, url_field)
        loaded = self._hasher_for(request_kwargs).loaded_image(data, uuid=uuid,
                                                               field=url_field)
        if sources is not None:
            sources.append((part, data))
        return loaded

    def check_count(self, number: int, modality: str) -> None:
        """``validate_num_items`` for the ``number``-th item of ``modality``: the server's
        limit, and the model's own."""
        user, supported = self._limit[modality]
        limit = user if supported is None else min(user, supported)
        if number > limit:
            hint = (" Set `--limit-mm-per-prompt` to increase this limit."
                    if supported is not None and number <= supported else "")
            raise RenderRequestError("messages", f"At most {limit} {modality}(s) may be "
                                     f"provided in one prompt.{hint}")

    def _image_bytes(self, source: MediaSource, url: str, field: str) -> bytes:
        try:
            return source.image_bytes(url, field=field)
        except RemoteMediaError:  # raised only for a host the domain list allows
            if self._fetch is None:
                raise
            return self._fetch(url, field)

    def place(self, ids: list[int], parts: ImageParts,
              placeholder_token_ids: Any = None) -> tuple[list[int], tuple[MMItem, ...]]:
        """The prompt after the processor's updates, and each image's item.

        ``placeholder_token_ids`` (deprecated: the family computes them) must equal the
        expansions when given.
        """
        images = (parts.images if parts.order is None
                  else [parts.images[i] for i in parts.order])
        if not images:
            if placeholder_token_ids:
                raise InvalidRequestError(
                    "placeholder_token_ids", f"has {len(placeholder_token_ids)} entries but "
                    "the body has 0 image(s)")
            return ids, ()
        family = self._family
        assert family is not None  # load() refused the images otherwise
        for index, image in enumerate(images):
            if image.size is None:
                # By its uuid alone: the answer depends on the render server's processor
                # cache (_get_cache_missing_items, 0.29-0.33), which prefixkey cannot see.
                raise RenderUnsupportedError("messages", (
                    f"image {index} is given by its uuid alone: a render server that has not "
                    "processed that uuid answers 400 'Cache miss for image at index "
                    f"{index} but data is not provided.', one that has renders it with the "
                    "cached image's size, which only that server knows: render it with "
                    "vLLM's render endpoint"))
        family.check_request_kwargs(parts._kwargs)
        kwargs = {**self._server_kwargs, **parts._kwargs}
        expansions = []
        for image in images:
            assert image.size is not None
            width, height = image.size
            expansions.append(family.expansion(ImageSize(width, height), kwargs))
        if placeholder_token_ids is not None:
            _check_given(placeholder_token_ids, expansions)
        placed = family.place(ids, expansions)
        items = tuple(MMItem(image.identifier, offset, length)
                      for image, (offset, length) in zip(images, placed.spans, strict=True))
        return placed.token_ids, items


def _check_given(given: Any, expansions: Sequence[Sequence[int]]) -> None:
    """The caller's ``placeholder_token_ids`` (the pre-family interface): only as computed."""
    if not isinstance(given, list):
        raise InvalidRequestError("placeholder_token_ids", "must be an array (one array "
                                  "of token ids per image)")
    if len(given) != len(expansions):
        raise InvalidRequestError(
            "placeholder_token_ids", f"has {len(given)} entries but the "
            f"body has {len(expansions)} image(s)")
    for i, (entry, expansion) in enumerate(zip(given, expansions, strict=True)):
        ids = list(check_token_ids(entry, field=f"placeholder_token_ids[{i}]"))
        if ids != list(expansion):
            raise InvalidRequestError(
                f"placeholder_token_ids[{i}]", "differs from the expansion the model's "
                f"processor gives this image ({len(expansion)} tokens); omit the field: "
                "prefixkey computes it")


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
