"""vLLM's multimodal identifier of an item, for one configuration bound once.

vLLM's processor hashes each item with ``MultiModalHasher.hash_kwargs(
model_id=<--model>, image=<item>, **<hash factors>)`` and the chat server
hands it the item as ``ImageMediaIO.load_bytes`` loaded it. An
:class:`MMHasher` binds the release, algorithm, model id and hash factors
once: everything but the item is encoded when it is built, so an image costs
one decode (vLLM's too) and one digest of its bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, Protocol

from blake3 import blake3

from ..core import DEFAULT_VLLM_VERSION, resolve_release
from ..core._frozen import Frozen
from ..errors import InvalidRequestError, UnreproducibleIdentifierError
from ._encoding import Value, check_value, item_chunks
from ._eras import IdentifierEra, identifier_era
from ._image import ImageLoader, image_loader, image_payload_and_size

__all__ = ["LoadedImage", "MMHasher", "image_identifier"]


@dataclass(frozen=True, slots=True)
class LoadedImage:
    """An image's identifier and its size as vLLM's loader hands it to the processor."""

    identifier: str
    #: ``(width, height)`` after ``ImageMediaIO.load_bytes`` (EXIF orientation applied);
    #: None for an image given by its uuid alone (no bytes were loaded).
    size: tuple[int, int] | None
    #: ``(width, height)`` as Pillow opens the bytes, EXIF orientation not applied (what
    #: mistral_common reads for Pixtral's grid); None without bytes.
    opened_size: tuple[int, int] | None = None


class _Digest(Protocol):
    def update(self, data: bytes | memoryview, /) -> object: ...
    def hexdigest(self) -> str: ...


_FACTORIES: Final[Mapping[str, Callable[[], _Digest]]] = {
    "blake3": blake3, "sha256": hashlib.sha256, "sha512": hashlib.sha512,
}
#: Processor kwargs scoped to one modality (0.30+ keep only the item's own).
_SCOPED_PROCESSOR_KWARGS: Final = {
    "image": "images_kwargs", "video": "videos_kwargs", "audio": "audio_kwargs",
}
_ALGORITHM_OPTION: Final = {
    "fixed": "no choice of algorithm", "env": "chosen with VLLM_MM_HASHER_ALGORITHM",
    "config": "chosen with --mm-hasher-algorithm",
}


def _mapping(value: Mapping[str, Any] | None, field: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidRequestError(field, f"must be an object, got {type(value).__name__}")
    out = dict(value)
    check_value(out, field)
    return out


class MMHasher(Frozen):
    """vLLM's multimodal identifiers for one replica configuration, bound once and reused.

    ``model`` is vLLM's ``--model`` string (not the served name).
    ``mm_hasher_algorithm`` is blake3 (the default), sha256 or sha512 where the
    release offers them. ``mm_processor_kwargs`` are the request's processor
    kwargs as the processor receives them; ``tokenization_kwargs`` join the
    identifier in 0.9.2-0.16 only (vLLM ignores them elsewhere);
    ``media_io_kwargs`` are the effective ``--media-io-kwargs`` (server and
    request merged), per modality. ``max_image_pixels`` overrides
    ``VLLM_MAX_IMAGE_PIXELS`` (0.25+). Immutable: share one per configuration.
    """

    __slots__ = (
        "_after", "_before", "_factory", "_has_factors", "_loader", "_max_pixels",
        "_none_key_only", "arguments", "era", "release", "warnings",
    )

    era: IdentifierEra
    #: The release ``vllm_version`` names, as at least ``X.Y.Z``.
    release: str
    warnings: tuple[str, ...]
    arguments: Mapping[str, Any]
    _factory: Callable[[], _Digest]
    _before: bytes
    _after: bytes
    _has_factors: bool
    _loader: ImageLoader
    _max_pixels: int
    _none_key_only: bool

    def __init__(
        self,
        *,
        model: str,
        vllm_version: str = DEFAULT_VLLM_VERSION,
        mm_hasher_algorithm: str | None = None,
        mm_processor_kwargs: Mapping[str, Any] | None = None,
        tokenization_kwargs: Mapping[str, Any] | None = None,
        media_io_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
        max_image_pixels: int | None = None,
        strict: bool = True,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise InvalidRequestError("model", "must be a non-empty string (vLLM's --model)")
        check_value(model, "model")
        resolved = resolve_release(vllm_version, strict=strict)
        era = identifier_era(vllm_version, strict=strict)
        algorithm = era.algorithms[0] if mm_hasher_algorithm is None else mm_hasher_algorithm
        if algorithm not in era.algorithms:
            raise InvalidRequestError(
                "mm_hasher_algorithm",
                f"{algorithm!r} is not offered by vLLM {resolved.release_name} (it offers "
                f"{', '.join(era.algorithms)}: {_ALGORITHM_OPTION[era.algorithm_option]})",
            )
        processor = _mapping(mm_processor_kwargs, "mm_processor_kwargs")
        tokenization = _mapping(tokenization_kwargs, "tokenization_kwargs")
        media = _mapping(media_io_kwargs, "media_io_kwargs")
        for modality, kwargs in media.items():
            if not isinstance(kwargs, dict):
                raise InvalidRequestError(f"media_io_kwargs.{modality}", "must be an object")
        image_kwargs: dict[str, Any] = media.get("image", {})
        if max_image_pixels is None:
            max_pixels = era.max_image_pixels
        elif type(max_image_pixels) is not int or not era.max_image_pixels:
            raise InvalidRequestError(
                "max_image_pixels", "must be an int, and VLLM_MAX_IMAGE_PIXELS exists from 0.25.0")
        else:
            max_pixels = max_image_pixels
        factors = self._factor_kwargs(era, processor, tokenization, image_kwargs)
        before, after = self._frame(era, model, factors)
        self._bind(
            era=era, release=resolved.release_name, warnings=resolved.warnings,
            _factory=_FACTORIES[algorithm], _before=before, _after=after,
            _has_factors=bool(factors), _loader=image_loader(era, image_kwargs,
                                                             resolved.release_name),
            _max_pixels=max_pixels, _none_key_only=era.none_value == "key_only",
            arguments=MappingProxyType({
                "model": model, "vllm_version": vllm_version,
                "mm_hasher_algorithm": mm_hasher_algorithm,
                "mm_processor_kwargs": processor, "tokenization_kwargs": tokenization,
                "media_io_kwargs": media, "max_image_pixels": max_image_pixels,
                "strict": strict,
            }),
        )

    @staticmethod
    def _factor_kwargs(era: IdentifierEra, processor: dict[str, Any],
                       tokenization: dict[str, Any],
                       image_kwargs: dict[str, Any]) -> dict[str, Value]:
        """The keyword arguments hash_kwargs receives besides model_id and the item."""
        if era.hash_factors == "scoped":
            scoped = {k: v for k, v in processor.items()
                      if k not in _SCOPED_PROCESSOR_KWARGS.values()
                      or k == _SCOPED_PROCESSOR_KWARGS["image"]}
            factors = {"media_io_kwargs": {"image": image_kwargs} if image_kwargs else {},
                       "mm_processor_kwargs": scoped}
            return {k: v for k, v in factors.items() if v}
        flat = dict(processor)
        if era.hash_factors == "processor_tokenization":
            for key in sorted(tokenization.keys() & processor.keys()):
                raise InvalidRequestError(  # vLLM: "got multiple values for keyword argument"
                    f"tokenization_kwargs.{key}", "is also a processor kwarg")
            flat.update(tokenization)
        for key in ("model_id", "image"):
            if key in flat:
                raise InvalidRequestError(
                    f"mm_processor_kwargs.{key}",
                    "collides with hash_kwargs' own argument (vLLM raises TypeError)")
        return flat

    def _frame(self, era: IdentifierEra, model: str,
               factors: dict[str, Value]) -> tuple[bytes, bytes]:
        """The digest input before and after the item's, encoded once."""
        kwargs: list[tuple[str, Value]] = [("model_id", model), ("image", None),
                                           *factors.items()]
        if era.sorted_kwargs:
            kwargs.sort(key=lambda kv: kv[0])
        at = next(i for i, (key, _) in enumerate(kwargs) if key == "image")
        none_key_only = era.none_value == "key_only"

        def encode(part: list[tuple[str, Value]]) -> bytes:
            return b"".join(bytes(chunk) for key, value in part for chunk in item_chunks(
                era.encoding, key, value, none_key_only=none_key_only))

        return encode(kwargs[:at]), encode(kwargs[at + 1:])


    def __copy__(self) -> MMHasher:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> MMHasher:
        return self

    def __repr__(self) -> str:
        return (f"MMHasher(model={self.arguments['model']!r}, release={self.release!r}, "
                f"era={self.era.name!r})")

    def image(self, data: bytes | None, *, uuid: str | None = None,
              lora_name: str | None = None,
              model_hash_kwargs: Mapping[str, Any] | None = None,
              field: str = "image") -> str:
        """The identifier vLLM gives the image whose encoded bytes are ``data``.

        ``uuid`` is the content part's ``uuid`` (or ``multi_modal_uuids``
        entry): the identifier when there are no hash factors, else hashed in
        the image's place; ``data`` may then be None (vLLM needs no image
        either). ``lora_name`` is the request's LoRA adapter when the server
        runs ``--enable-tower-connector-lora``. ``model_hash_kwargs`` are the
        kwargs a 0.33 processor re-hashes the identifier with (docs/multimodal.md:
        DeepSeek-VL2 and Unlimited-OCR ``{"cropping": …}``, H2OVL
        ``{"use_msac": …}``). ``field`` names the item in errors.
        """
        return self.loaded_image(data, uuid=uuid, lora_name=lora_name,
                                 model_hash_kwargs=model_hash_kwargs, field=field).identifier

    def loaded_image(self, data: bytes | None, *, uuid: str | None = None,
                     lora_name: str | None = None,
                     model_hash_kwargs: Mapping[str, Any] | None = None,
                     field: str = "image") -> LoadedImage:
        """:meth:`image`'s identifier and the image's size as vLLM loads it, from one decode.

        The size is what a model's processor counts placeholder tokens from
        (prefixkey.render's vision families).
        """
        era = self.era
        size: tuple[int, int] | None = None
        opened: tuple[int, int] | None = None
        payload: Value
        if uuid is not None:
            if not era.uuids:
                raise InvalidRequestError("uuid", f"vLLM {self.release} has no multimodal "
                                          "uuids (0.10.2+)")
            if not isinstance(uuid, str):
                raise InvalidRequestError("uuid", f"must be a string, got {type(uuid).__name__}")
            check_value(uuid, "uuid")
        if lora_name is not None:
            if not era.tower_connector_lora:
                raise InvalidRequestError("lora_name", f"vLLM {self.release} has no "
                                          "--enable-tower-connector-lora (0.14.0+)")
            if not isinstance(lora_name, str):
                raise InvalidRequestError("lora_name", "must be a string")
        rehash = None
        if model_hash_kwargs is not None:
            if not era.processor_rehash:
                raise InvalidRequestError("model_hash_kwargs", f"vLLM {self.release}'s "
                                          "processors do not re-hash identifiers (0.33+)")
            rehash = _mapping(model_hash_kwargs, "model_hash_kwargs")
            if "mm_hash" in rehash:
                raise InvalidRequestError("model_hash_kwargs.mm_hash",
                                          "collides with the identifier's own argument")
        if data is not None:
            if not isinstance(data, (bytes, bytearray, memoryview)):
                raise InvalidRequestError(field, f"must be bytes, got {type(data).__name__}")
            payload, size, opened = image_payload_and_size(era, bytes(data), self._loader,
                                                   max_pixels=self._max_pixels, field=field)
        elif uuid is None:
            raise InvalidRequestError(field, "an image needs its bytes or a uuid")
        if uuid is not None and not self._has_factors:
            identifier = uuid
        else:
            if uuid is not None:
                payload = uuid
            digest = self._factory()
            digest.update(self._before)
            for chunk in item_chunks(era.encoding, "image", payload,
                                     none_key_only=self._none_key_only):
                digest.update(chunk)
            digest.update(self._after)
            identifier = digest.hexdigest()
        if rehash is not None:
            # The processor's _get_mm_hashes: hash_kwargs(mm_hash=identifier, **kwargs).
            digest = self._factory()
            for key, value in sorted({"mm_hash": identifier, **rehash}.items()):
                for chunk in item_chunks(era.encoding, key, value,
                                         none_key_only=self._none_key_only):
                    digest.update(chunk)
            identifier = digest.hexdigest()
        return LoadedImage(identifier if lora_name is None else f"{lora_name}:{identifier}",
                           size, opened)

    def audio(self, data: bytes, *, field: str = "audio") -> str:
        """Refused: vLLM hashes audio as its decoded waveform, not its bytes."""
        raise UnreproducibleIdentifierError(
            field, "vLLM hashes audio as the waveform its audio backend decodes (a float "
            "ndarray and the sample rate), which prefixkey does not decode")

    def video(self, data: bytes, *, field: str = "video") -> str:
        """Refused: vLLM hashes video after its video loader samples and decodes frames."""
        raise UnreproducibleIdentifierError(
            field, "vLLM hashes video through its video loader (sampled, decoded frames; from "
            "0.27 the encoded bytes only when the frames are larger), which prefixkey does "
            "not run")


def image_identifier(data: bytes, *, model: str, uuid: str | None = None,
                     lora_name: str | None = None, **configuration: Any) -> str:
    """One image's identifier; builds an :class:`MMHasher` from ``configuration`` each call.

    A router keying many images should build one :class:`MMHasher` and call
    :meth:`MMHasher.image`.
    """
    return MMHasher(model=model, **configuration).image(data, uuid=uuid, lora_name=lora_name)
