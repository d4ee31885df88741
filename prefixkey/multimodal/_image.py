"""An image's part of the identifier: decoded as vLLM's ``ImageMediaIO.load_bytes`` does.

Every release decodes the image (an undecodable one fails the request) and
reads its mode; what it then hashes depends on the era: the original bytes
(0.13+, with ``io_config`` from 0.27 when the decoded mode is converted), or
the decoded pixels converted to RGB (0.7-0.12). Pixels are exact only when the
decode is: lossless formats in modes whose RGB conversion is table lookup or
integer blending. Other images in those eras are refused with
:class:`~prefixkey.errors.UnreproducibleIdentifierError`.
"""

from __future__ import annotations

import importlib.util
import io
import re
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ..errors import (
    InvalidRequestError,
    MissingExtraError,
    UndecodableMediaError,
    UnreproducibleIdentifierError,
)
from ._encoding import Keyed, Streamed, Value
from ._eras import IdentifierEra

if TYPE_CHECKING:
    from PIL import Image

# Pillow is imported when an image is first decoded, not here: a Renderer builds its
# ImageChat (and so imports this module) for every model, and importing PIL costs a
# text-only first build tens of milliseconds. Its absence is still found at import:
# ``prefixkey.multimodal`` raises the MissingExtraError needs_extra gave before.
if importlib.util.find_spec("PIL") is None:
    raise MissingExtraError("prefixkey.multimodal", "multimodal", "PIL")

__all__ = ["ImageLoader", "image_loader", "image_payload", "image_payload_and_size",
           "loaded_size"]

_WHITE: Final = (255, 255, 255)
#: Formats whose decode is lossless, hence the same pixels under any Pillow build.
_LOSSLESS_FORMATS: Final = frozenset({"PNG", "GIF", "BMP", "DIB", "PPM", "TGA", "QOI"})
_LOSSLESS_TIFF: Final = frozenset({"raw", "tiff_lzw", "tiff_adobe_deflate", "tiff_deflate",
                                   "packbits"})
#: Modes whose conversion to RGB is a lookup or an integer blend, stable across Pillow
#: (16-bit and float modes were rescaled differently by different Pillow releases).
_PORTABLE_MODES: Final = frozenset({"1", "L", "LA", "P", "PA", "RGB", "RGBA"})
#: EXIF orientations whose transpose swaps width and height (ImageOps.exif_transpose:
#: TRANSPOSE, ROTATE_270, TRANSVERSE, ROTATE_90).
_SWAPPING_ORIENTATIONS: Final = frozenset({5, 6, 7, 8})
_ORIENTATION_TAG: Final = 0x0112


@dataclass(frozen=True, slots=True)
class ImageLoader:
    """What ``ImageMediaIO`` was built with: the target mode and the RGBA background."""

    #: None keeps the decoded mode (0.27+: ``media_io_kwargs={"image": {"image_mode": None}}``).
    image_mode: str | None
    rgba_background_color: tuple[int, int, int]


def _background(value: Any) -> tuple[int, int, int]:
    # ImageMediaIO's own rule: a list or tuple of three ints in [0, 255].
    if isinstance(value, list):
        value = tuple(value)
    if not (isinstance(value, tuple) and len(value) == 3
            and all(isinstance(c, int) and 0 <= c <= 255 for c in value)):
        raise InvalidRequestError(
            "media_io_kwargs.image.rgba_background_color",
            "must be a list or tuple of 3 integers in the range [0, 255]",
        )
    return (int(value[0]), int(value[1]), int(value[2]))


def image_loader(era: IdentifierEra, image_kwargs: Mapping[str, Any],
                 version: str) -> ImageLoader:
    """The loader ``MediaConnector.fetch_image`` builds from ``media_io_kwargs["image"]``."""
    if era.media_io_kwargs == "none":
        if image_kwargs:
            raise InvalidRequestError(
                "media_io_kwargs", f"vLLM {version} has no --media-io-kwargs (0.9.2+)")
        return ImageLoader("RGB", _WHITE)
    mode: Any = "RGB"
    if "image_mode" in image_kwargs:
        if era.media_io_kwargs == "extra":
            # ImageMediaIO(image_mode="RGB", **kwargs): a TypeError in vLLM.
            raise InvalidRequestError(
                "media_io_kwargs.image.image_mode",
                f"vLLM {version} passes image_mode itself (settable from 0.27.0)")
        mode = image_kwargs["image_mode"]
        if mode is not None and not isinstance(mode, str):
            raise InvalidRequestError("media_io_kwargs.image.image_mode",
                                      "must be a Pillow mode string or null")
    background = _WHITE
    if era.rgb_conversion == "background_option" or not era.hashes_pixels:
        background = _background(image_kwargs.get("rgba_background_color", _WHITE))
    return ImageLoader(mode, background)


def _open(data: bytes, era: IdentifierEra, max_pixels: int, field: str) -> Image.Image:
    from PIL import Image

    try:
        with warnings.catch_warnings():
            # Pillow warns about corrupt metadata and past MAX_IMAGE_PIXELS (the error
            # comes at twice that); the outcome is the identifier or the error alone.
            warnings.simplefilter("ignore")
            image = Image.open(io.BytesIO(data), formats=era.image_formats)
            w, h = image.size
            if max_pixels > 0 and w * h > max_pixels:
                raise UndecodableMediaError(
                    field, f"image dimensions {w}x{h} ({w * h} pixels) exceed "
                    f"VLLM_MAX_IMAGE_PIXELS ({max_pixels})")
            image.load()
    except UndecodableMediaError:
        raise
    except Image.DecompressionBombError as exc:
        raise UndecodableMediaError(field, f"not loadable: {exc}") from None
    except Exception as exc:  # any failure of Pillow's decoders
        # vLLM fails the request on it too. Pillow names the stream object by its
        # address; the message stays reproducible without it.
        reason = re.sub(r" <_io\.BytesIO object at 0x[0-9a-f]+>", "", str(exc))
        raise UndecodableMediaError(field, f"not a loadable image: {reason}") from None
    return image


def _portable(image: Image.Image, data: bytes, field: str) -> None:
    fmt = image.format or ""
    lossless = fmt in _LOSSLESS_FORMATS or (
        fmt == "TIFF" and image.info.get("compression") in _LOSSLESS_TIFF) or (
        fmt == "WEBP" and data[12:16] == b"VP8L")
    if not lossless:
        raise UnreproducibleIdentifierError(
            field, f"vLLM 0.7-0.12 hash decoded pixels, and a lossy {fmt} image decodes "
            "differently across Pillow/libjpeg/libwebp builds")
    if image.mode not in _PORTABLE_MODES:
        raise UnreproducibleIdentifierError(
            field, f"vLLM 0.7-0.12 hash decoded pixels, and mode {image.mode} converts to RGB "
            "differently across Pillow versions")


def _rgb(image: Image.Image, era: IdentifierEra, loader: ImageLoader) -> Image.Image:
    # The release's conversion to RGB (ImageMediaIO._convert_image_mode / convert_image_mode).
    if image.mode == "RGB":
        return image
    if image.mode == "RGBA" and era.rgb_conversion != "convert":
        from PIL import Image

        converted = Image.new("RGB", image.size, loader.rgba_background_color)
        converted.paste(image, mask=image.split()[3])
        return converted
    return image.convert("RGB")


#: Bytes of pixels converted and hashed at a time: the decoded image is never copied whole.
_STRIP_BYTES: Final = 4 * 1024 * 1024


def _pixels(image: Image.Image, era: IdentifierEra, loader: ImageLoader, rgba: bool
            ) -> Streamed:
    """``_rgb(image)`` (then ``.convert("RGBA")`` when ``rgba``) ``.tobytes()``, made a strip
    of rows at a time: each conversion is per pixel, so the strips' bytes are the whole's."""
    w, h = image.size
    channels = 4 if rgba else 3
    rows = max(1, _STRIP_BYTES // max(1, w * channels))

    def chunks() -> Iterator[bytes]:
        for top in range(0, h, rows):
            strip = _rgb(image.crop((0, top, w, min(h, top + rows))), era, loader)
            yield (strip.convert("RGBA") if rgba else strip).tobytes()

    return Streamed(w * h * channels, chunks)


def _array(pixels: Streamed, size: tuple[int, int], channels: int) -> Keyed:
    # np.asarray(image) of a uint8 RGB/RGBA image: dtype, (height, width, channels), bytes.
    w, h = size
    return Keyed("ndarray", {"dtype": "|u1", "shape": (h, w, channels), "data": pixels})


def loaded_size(image: Image.Image) -> tuple[int, int]:
    """``(width, height)`` of the image vLLM's loader hands the processor (0.30+).

    ``ImageMediaIO.load_bytes`` applies ``normalize_image``: ``ImageOps.exif_transpose``,
    its failures ignored. Only the size matters to a processor's token count, and only
    orientations 5-8 change it, so the pixels are not transposed here.
    """
    width, height = image.size
    try:
        orientation = image.getexif().get(_ORIENTATION_TAG, 1)
    except Exception:  # vLLM suppresses any failure of exif_transpose
        return width, height
    if isinstance(orientation, int) and orientation in _SWAPPING_ORIENTATIONS:
        return height, width
    return width, height


def image_payload(era: IdentifierEra, data: bytes, loader: ImageLoader, *, max_pixels: int,
                  field: str) -> Value:
    """The value vLLM hashes under the ``image`` keyword for the image ``data``."""
    return image_payload_and_size(era, data, loader, max_pixels=max_pixels, field=field)[0]


def image_payload_and_size(era: IdentifierEra, data: bytes, loader: ImageLoader, *,
                           max_pixels: int, field: str
                           ) -> tuple[Value, tuple[int, int], tuple[int, int]]:
    """:func:`image_payload`, the size of the image as vLLM loads it (:func:`loaded_size`),
    and its size as Pillow opens the bytes (no EXIF orientation applied)."""
    image = _open(data, era, max_pixels, field)
    opened = image.size  # read before _payload, which may convert the image
    return _payload(era, data, loader, image, field), loaded_size(image), opened


def _payload(era: IdentifierEra, data: bytes, loader: ImageLoader, image: Image.Image,
             field: str) -> Value:
    if era.hashes_pixels:
        _portable(image, data, field)
        if era.image_payload == "rgb_bytes":
            return _pixels(image, era, loader, rgba=False)
        if era.image_payload == "rgba_array":
            return Keyed("image", _array(_pixels(image, era, loader, rgba=True), image.size, 4))
        return Keyed("image", {"mode": "RGB",
                               "data": _array(_pixels(image, era, loader, rgba=False),
                                              image.size, 3)})
    if era.image_payload == "encoded_io_config" and loader.image_mode is not None and (
            image.mode != loader.image_mode):
        # vLLM converts the decode; a mode Pillow cannot convert to fails the request
        # there. Every mode converts to RGB, so only other targets are tried.
        if loader.image_mode != "RGB":
            try:
                image.convert(loader.image_mode)
            except ValueError as exc:
                raise InvalidRequestError("media_io_kwargs.image.image_mode", str(exc)) from None
        io_config: dict[str, Value] = {"image_mode": loader.image_mode,
                     "rgba_background_color": loader.rgba_background_color}
        return Keyed("image", {"io_config": io_config, "data": data})
    return Keyed("image", data)
