"""vLLM's multimodal identifier of an image, release by release, as data.

An identifier era is a frozen record: the releases whose chat server gives an
image the same identifier for the same bytes and configuration, the release
that started it, what changed, and the facts the identifier needs. Each fact
is consulted in one place (named in its comment); versions are resolved with
:func:`prefixkey.core.resolve_release`, so pre-, post-, dev and local builds
belong to the era of their release.

What each release does was read from its wheel (``vllm/multimodal/hasher.py``,
``image.py`` / ``media/image.py``, the ``MediaConnector`` and the hash call
site); ``tools/harvest_mm.py`` runs that code and ``tests/multimodal`` replays it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Final, Literal

from packaging.version import Version

from ..core import resolve_release
from ..core._era_table import era_at
from ..errors import UnknownVersionError

__all__ = ["IDENTIFIER_ERAS", "IdentifierEra", "identifier_era"]

#: What the image contributes: the raw RGB pixels; the RGB image as an RGBA
#: ndarray; its mode and ndarray; its original encoded bytes; or those bytes
#: with the loader's ``io_config`` when the decoded mode is converted.
ImagePayload = Literal["rgb_bytes", "rgba_array", "mode_array", "encoded", "encoded_io_config"]
#: How a non-RGB decode becomes RGB before pixels are hashed: Pillow's
#: ``convert`` (alpha dropped), RGBA pasted over white, or over the loader's
#: ``rgba_background_color``.
RGBConversion = Literal["convert", "white_background", "background_option"]
#: Which hash factors join the identifier: the processor kwargs; those and the
#: tokenization kwargs; or ``{"media_io_kwargs": …, "mm_processor_kwargs": …}``
#: scoped to the item's modality.
HashFactors = Literal["processor", "processor_tokenization", "scoped"]
#: How ``--media-io-kwargs`` reach the image loader: not at all; as extra
#: keyword arguments next to ``image_mode="RGB"``; merged over it.
MediaIOKwargs = Literal["none", "extra", "merged"]


@dataclass(frozen=True, slots=True)
class IdentifierEra:
    """Releases that give an image one identifier, and what distinguishes them."""

    name: str
    #: First upstream release of the era.
    since: str
    #: What changed in ``since``.
    changes: str
    #: Hasher algorithms offered, the default first (:meth:`MMHasher.__init__`).
    algorithms: tuple[str, ...]
    #: How the algorithm is chosen: fixed, ``VLLM_MM_HASHER_ALGORITHM``, ``--mm-hasher-algorithm``.
    algorithm_option: Literal["fixed", "env", "config"]
    #: The digest input (``_encoding``): keys and values concatenated, or framed and tagged.
    encoding: Literal["concat", "framed"]
    #: Keyword arguments hashed in sorted order (else model_id, item, factors).
    sorted_kwargs: bool
    #: ``_image.image_payload``.
    image_payload: ImagePayload
    #: ``_image.rgb_pixels`` (pixel eras only).
    rgb_conversion: RGBConversion
    #: ``MMHasher._factor_kwargs``.
    hash_factors: HashFactors
    #: ``MMHasher.__init__``: whether and how ``media_io_kwargs["image"]`` reach the loader.
    media_io_kwargs: MediaIOKwargs
    #: A user uuid names the item (``multi_modal_uuids``, a content part's ``uuid``).
    uuids: bool
    #: A ``None`` factor value: pickled (protocol 4), or its key alone (0.14+).
    none_value: Literal["pickle", "key_only"]
    #: ``--enable-tower-connector-lora`` prefixes ``f"{lora_name}:"``.
    tower_connector_lora: bool
    #: ``VLLM_MAX_IMAGE_PIXELS`` (0: no limit) refuses larger images (``_image.decode``).
    max_image_pixels: int
    #: Formats ``Image.open`` may use (None: every format Pillow registers).
    image_formats: tuple[str, ...] | None = None
    #: Some processors re-hash each image identifier with their own kwargs
    #: (``MMHasher.image``'s ``model_hash_kwargs``).
    processor_rehash: bool = False
    first_version: Version = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "first_version", Version(self.since))

    @property
    def hashes_pixels(self) -> bool:
        """Whether the identifier covers decoded pixels (exact only for lossless formats)."""
        return self.image_payload in ("rgb_bytes", "rgba_array", "mode_array")


#: vLLM's VLLM_MAX_IMAGE_PIXELS default (Pillow's decompression-bomb error threshold).
_MAX_PIXELS: Final = 178_956_970

#: vLLM 0.33's ``ALLOWED_IMAGE_FORMATS`` (vllm/multimodal/image.py).
_ALLOWED_FORMATS_0_33: Final = (
    "AVIF", "BLP", "BMP", "CUR", "DCX", "DDS", "DIB", "FITS", "FLI", "FTEX", "GBR", "GIF",
    "ICNS", "ICO", "IM", "IMT", "IPTC", "JPEG", "JPEG2000", "MCIDAS", "MSP", "PCD", "PCX",
    "PIXAR", "PNG", "PPM", "PSD", "QOI", "SGI", "SPIDER", "SUN", "TGA", "TIFF", "WEBP", "XBM",
    "XPM", "XVTHUMB",
)


def _eras() -> tuple[IdentifierEra, ...]:
    """Each era is the one before it with what its first release changed."""
    a = IdentifierEra(
        name="A", since="0.7.0",
        changes=(
            "blake3 over model_id, the image's decoded RGB pixels (tobytes) and the processor "
            "kwargs, in call order, keys and values concatenated"
        ),
        algorithms=("blake3",), algorithm_option="fixed", encoding="concat",
        sorted_kwargs=False, image_payload="rgb_bytes", rgb_conversion="convert",
        hash_factors="processor", media_io_kwargs="none", uuids=False, none_value="pickle",
        tower_connector_lora=False, max_image_pixels=0,
    )
    b = replace(
        a, name="B", since="0.9.0", image_payload="rgba_array", rgb_conversion="white_background",
        changes=(
            "the image is hashed as an RGBA ndarray (dtype, shape, data); RGBA decodes are "
            "pasted over white before (was: alpha dropped)"
        ),
    )
    c = replace(
        b, name="C", since="0.9.2", hash_factors="processor_tokenization", media_io_kwargs="extra",
        changes="tokenization kwargs join the identifier; --media-io-kwargs reach the loader",
    )
    d = replace(
        c, name="D", since="0.10.1", rgb_conversion="background_option",
        changes=(
            "media_io_kwargs image.rgba_background_color replaces white; an EXIF ImageID that "
            "is a uuid.UUID object would name the image (never the case for file bytes)"
        ),
    )
    e = replace(
        d, name="E", since="0.10.2", uuids=True,
        changes=(
            "a user uuid (multi_modal_uuids, a content part's uuid) is the identifier, or is "
            "hashed in the image's place when there are hash factors"
        ),
    )
    f = replace(
        e, name="F", since="0.11.0", image_payload="mode_array",
        changes="the image is hashed as {mode, ndarray} (the chat path's decode is always RGB)",
    )
    g = replace(
        f, name="G", since="0.13.0", image_payload="encoded",
        changes="the chat path hashes the image's original encoded bytes (MediaWithBytes)",
    )
    h = replace(
        g, name="H", since="0.14.0", tower_connector_lora=True, none_value="key_only",
        changes=(
            "--enable-tower-connector-lora prefixes the identifier with 'lora_name:'; a None "
            "value contributes its key alone (was: pickled)"
        ),
    )
    i = replace(
        h, name="I", since="0.15.0", algorithms=("blake3", "sha256", "sha512"),
        algorithm_option="env",
        changes="VLLM_MM_HASHER_ALGORITHM chooses blake3, sha256 or sha512",
    )
    j = replace(i, name="J", since="0.16.0", sorted_kwargs=True,
                changes="keyword arguments are hashed in sorted order")
    k = replace(j, name="K", since="0.17.0", hash_factors="processor",
                changes="tokenization kwargs no longer join the identifier")
    l_ = replace(
        k, name="L", since="0.25.0", max_image_pixels=_MAX_PIXELS,
        changes="VLLM_MAX_IMAGE_PIXELS (default 178956970) refuses larger images",
    )
    m = replace(
        l_, name="M", since="0.27.0", algorithm_option="config",
        image_payload="encoded_io_config", media_io_kwargs="merged",
        changes=(
            "--mm-hasher-algorithm replaces the environment variable; a decode whose mode "
            "is converted adds io_config {image_mode, rgba_background_color}; "
            "media_io_kwargs may set image_mode (None keeps the decoded mode)"
        ),
    )
    n = replace(
        m, name="N", since="0.30.0", hash_factors="scoped",
        changes=(
            "hash factors are {media_io_kwargs: {image: …}, mm_processor_kwargs: …} scoped "
            "to the item's modality (other modalities' *_kwargs dropped); media_io_kwargs "
            "join the identifier"
        ),
    )
    o = replace(
        n, name="O", since="0.31.0", encoding="framed",
        changes=(
            "the digest input is framed: each chunk preceded by its 8-byte little-endian "
            "length, each value tagged None / sequence / mapping / leaf"
        ),
    )
    p = replace(
        o, name="P", since="0.33.0", image_formats=_ALLOWED_FORMATS_0_33,
        processor_rehash=True,
        changes=(
            "Image.open accepts only ALLOWED_IMAGE_FORMATS (no EPS, WMF, …); DeepSeek-VL2, "
            "H2OVL and Unlimited-OCR re-hash each identifier with their own kwargs"
        ),
    )
    return (a, b, c, d, e, f, g, h, i, j, k, l_, m, n, o, p)


#: Ordered oldest first; each era runs until the next one starts.
IDENTIFIER_ERAS: Final[tuple[IdentifierEra, ...]] = _eras()


def identifier_era(vllm_version: str, *, strict: bool = True) -> IdentifierEra:
    """The identifier era of a vLLM version (``strict``: as in ``core.resolve_release``)."""
    era = era_at(IDENTIFIER_ERAS, resolve_release(vllm_version, strict=strict).release)
    if era is None:
        raise UnknownVersionError(f"vllm_version {vllm_version}: no identifier scheme is known "
                                  f"before {IDENTIFIER_ERAS[0].since}")
    return era
