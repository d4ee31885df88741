"""A family's expansions are built once per shape and reused, in bounded memos.

The answers are replayed by test_vision_vectors.py (every corpus, so a memo that changed a
result fails there); these pin the reuse itself and the bound on memory.
"""

from __future__ import annotations

from functools import cache

import pytest

pytest.importorskip("PIL", reason="the multimodal extra (Pillow) is not installed")
pytest.importorskip("jinja2", reason="the render extra (jinja2) is not installed")

import real_models

from prefixkey.render import Renderer, ServerOptions
from prefixkey.render._vision import ImageSize, VisionFamily
from prefixkey.render._vision._base import MEMO_ENTRIES, remember


@cache
def _family(name: str) -> VisionFamily:
    images = Renderer(ServerOptions(model=str(real_models.folder(name))))._images
    assert images is not None and images._family is not None
    return images._family


def test_a_memo_starts_afresh_when_full() -> None:
    memo: dict[int, int] = {}
    for key in range(MEMO_ENTRIES):
        assert remember(memo, key, key * 2) == key * 2
    assert len(memo) == MEMO_ENTRIES
    remember(memo, -1, 7)
    assert memo == {-1: 7}
    small: dict[int, str] = {}
    for key in range(5):
        remember(small, key, "x", limit=3)
    assert len(small) <= 3


@pytest.mark.parametrize("name", ["llava15", "llava_next", "llava_onevision", "internvl3",
                                  "llama4"])
def test_an_image_size_seen_again_reuses_one_immutable_expansion(name: str) -> None:
    family = _family(name)
    first = family.expansion(ImageSize(640, 480), {})
    assert isinstance(first, tuple)
    assert family.expansion(ImageSize(640, 480), {}) is first
    # Another size with the same shape shares the run too (one run per count / grid).
    other = family.expansion(ImageSize(641, 480), {})
    assert other == first and other is first
