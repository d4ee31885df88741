"""Generate the image fixtures of tests/render/vision_more/images/ (run again: the same bytes).

Run from the repository root: ``python tests/render/vision_more/make_images.py``.
Sizes, not pixels, decide how many placeholder tokens an image becomes, so the
images are flat colours with one marked corner (small files at any size): a
square at the vision towers' native sizes, wide, tall and near-square aspect
ratios on both sides of Gemma 3's pan-and-scan thresholds, LLaVA-NeXT's grid
pinpoints and odd sizes between them, extreme strips, and a JPEG whose EXIF
orientation (6: rotate) swaps its width and height when vLLM loads it.
The bytes are those of the Pillow that made them; the committed files are the fixtures.
"""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image

OUT = Path(__file__).resolve().parent / "images"

#: name -> (width, height) as stored in the file
SIZES: dict[str, tuple[int, int]] = {
    "sq_896.png": (896, 896),
    "sq_336.png": (336, 336),
    "sq_448.png": (448, 448),
    "wide_1200x400.png": (1200, 400),
    "land_900x600.png": (900, 600),
    "tall_300x1000.png": (300, 1000),
    "near_1000x900.png": (1000, 900),
    "short_500x200.png": (500, 200),
    "huge_4000x1000.png": (4000, 1000),
    "strip_2000x10.png": (2000, 10),
    "line_1x500.png": (1, 500),
    "pin_672x336.png": (672, 336),
    "pin_336x1344.png": (336, 1344),
    "odd_337x211.png": (337, 211),
    "odd_1023x767.png": (1023, 767),
    "big_2048x1536.png": (2048, 1536),
    "portrait_720x1280.png": (720, 1280),
}


def _image(w: int, h: int, seed: int) -> Image.Image:
    img = Image.new("RGB", (w, h), ((seed * 53) % 256, (seed * 97) % 256, (seed * 31) % 256))
    img.paste((255, 255, 255), (0, 0, max(1, w // 8), max(1, h // 8)))
    return img


def _exif_rotated_jpeg(w: int, h: int) -> bytes:
    img = _image(w, h, 99)
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: rotate 90 CW when displayed (vLLM transposes it)
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=80, exif=exif.tobytes())
    return buf.getvalue()


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for seed, (name, (w, h)) in enumerate(sorted(SIZES.items())):
        buf = io.BytesIO()
        _image(w, h, seed + 1).save(buf, "PNG", optimize=True)
        (OUT / name).write_bytes(buf.getvalue())
    (OUT / "exif6_1200x400.jpg").write_bytes(_exif_rotated_jpeg(1200, 400))


if __name__ == "__main__":
    main()
