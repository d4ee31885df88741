"""Generate the image fixtures of tests/multimodal/images/ (run again: the same bytes).

Run from the repository root: ``python tests/multimodal/make_images.py``. The
images cover what vLLM's media path treats differently: each PNG mode (the
mode decides ``io_config`` and the converted pixels), lossy formats (JPEG,
lossy WEBP: their decode is not portable across Pillow versions), EXIF
orientation (transposed before the mode is read), tiny and large sizes, and
files no decoder accepts.
The bytes are those of the Pillow that made them; the committed files are the fixtures.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

from PIL import Image

OUT = Path(__file__).resolve().parent / "images"


def _rgb(w: int, h: int) -> Image.Image:
    img = Image.new("RGB", (w, h))
    img.putdata([((x * 37) % 256, (y * 59) % 256, ((x + y) * 11) % 256)
                 for y in range(h) for x in range(w)])
    return img


def _rgba(w: int, h: int) -> Image.Image:
    img = _rgb(w, h).convert("RGBA")
    img.putalpha(Image.linear_gradient("L").resize((w, h)))
    return img


def _save(img: Image.Image, fmt: str, **kwargs: object) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt, **kwargs)
    return buf.getvalue()


def _exif_rotated_jpeg() -> bytes:
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: rotate 90 CW on display
    return _save(_rgb(12, 8), "JPEG", quality=90, exif=exif.tobytes())


def _exif_rotated_png() -> bytes:
    exif = Image.Exif()
    exif[0x0112] = 6
    return _save(_rgb(12, 8).convert("L"), "PNG", exif=exif.tobytes())


def _palette_transparent() -> bytes:
    img = _rgb(16, 16).quantize(colors=8, dither=Image.Dither.NONE)
    return _save(img, "PNG", transparency=0)


def _png16() -> bytes:
    img = Image.new("I;16", (8, 8))
    img.putdata([(i * 1021) % 65536 for i in range(64)])
    return _save(img, "PNG")


FIXTURES: dict[str, Callable[[], bytes]] = {
    "rgb.png": lambda: _save(_rgb(16, 12), "PNG"),
    "rgba.png": lambda: _save(_rgba(16, 12), "PNG"),
    "palette.png": lambda: _save(_rgb(16, 16).quantize(colors=16, dither=Image.Dither.NONE),
                                 "PNG"),
    "palette_transparent.png": _palette_transparent,
    "gray.png": lambda: _save(_rgb(16, 12).convert("L"), "PNG"),
    "gray_alpha.png": lambda: _save(_rgba(16, 12).convert("LA"), "PNG"),
    "bilevel.png": lambda: _save(_rgb(16, 12).convert("1", dither=Image.Dither.NONE), "PNG"),
    "gray16.png": _png16,
    "tiny.png": lambda: _save(_rgb(1, 1), "PNG"),
    "large.png": lambda: _save(Image.linear_gradient("L").resize((1024, 768)).convert("RGB"),
                               "PNG"),
    "exif_rotated.png": _exif_rotated_png,
    "rgb.jpg": lambda: _save(_rgb(16, 12), "JPEG", quality=90),
    "cmyk.jpg": lambda: _save(_rgb(16, 12).convert("CMYK"), "JPEG", quality=90),
    "exif_rotated.jpg": _exif_rotated_jpeg,
    "lossless.webp": lambda: _save(_rgb(16, 12), "WEBP", lossless=True),
    "lossy.webp": lambda: _save(_rgb(16, 12), "WEBP", quality=80),
    "palette.gif": lambda: _save(_rgb(16, 12).quantize(colors=16, dither=Image.Dither.NONE),
                                 "GIF"),
    "rgb.bmp": lambda: _save(_rgb(16, 12), "BMP"),
    "rgb.tiff": lambda: _save(_rgb(16, 12), "TIFF"),
    "rgba_lzw.tiff": lambda: _save(_rgba(16, 12), "TIFF", compression="tiff_lzw"),
    "undecodable.png": lambda: b"\x89PNG\r\n\x1a\n" + bytes(range(64)),
    # A valid header over a cut-off pixel stream: opens, fails to decode.
    "truncated.png": lambda: _save(_rgb(64, 48), "PNG")[:-40],
    "not_an_image.bin": lambda: b"these bytes are no image format at all\n" * 3,
}


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for name, make in FIXTURES.items():
        (OUT / name).write_bytes(make())


if __name__ == "__main__":
    main()
