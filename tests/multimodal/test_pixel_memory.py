"""Hashing pixels (vLLM 0.7-0.12) within a bound of memory (issue 23, item 13).

Those releases hash the decoded image's RGB (or RGBA) bytes. A 140 KB PNG that
decodes to a large image took 2.35 GB: the RGB conversion, its ``tobytes()``,
the RGBA conversion and its bytes, all whole. The pixels are now converted and
hashed a strip of rows at a time. The Python-side allocations (tracemalloc:
the ``tobytes()`` copies) must stay far below the image's RGBA size; the
identifiers themselves are checked against vLLM by test_mm_vectors.py.
"""

from __future__ import annotations

import io
import tracemalloc

import pytest
from PIL import Image

from prefixkey.multimodal import MMHasher

SIDE = 3000  # 9 M pixels: 27 MB as RGB bytes, 36 MB as RGBA
RGBA_BYTES = SIDE * SIDE * 4


def _png(mode: str) -> bytes:
    image = Image.new(mode, (SIDE, SIDE), 0)
    image.paste(1 if mode in ("1", "P") else 200, (0, 0, SIDE // 2, SIDE // 3))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


@pytest.mark.parametrize("release", ["0.8.0", "0.10.0", "0.11.0"])  # RGB bytes, RGBA, {mode}
@pytest.mark.parametrize("mode", ["1", "L", "RGB"])
def test_pixels_are_hashed_without_whole_copies(release: str, mode: str) -> None:
    data = _png(mode)
    assert len(data) < 200_000  # small on the wire, large decoded
    hasher = MMHasher(model="m", vllm_version=release)
    tracemalloc.start()
    try:
        identifier = hasher.image(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(identifier) == 64
    assert peak < RGBA_BYTES // 2, f"{peak:,} bytes traced hashing a {RGBA_BYTES:,}-byte image"
