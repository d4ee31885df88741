"""A family's expansions are built once per shape and reused, in bounded memos.

The answers are replayed by test_vision_vectors.py (every corpus, so a memo that changed a
result fails there); these pin the reuse itself and the bound on memory.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any, Final

import pytest

pytest.importorskip("PIL", reason="the multimodal extra (Pillow) is not installed")
pytest.importorskip("jinja2", reason="the render extra (jinja2) is not installed")

import real_models
from images import materialize
from vision_cases import renderer, vision_cases

from prefixkey.render import Renderer, ServerOptions
from prefixkey.render._vision import ImageSize, VisionFamily
from prefixkey.render._vision._base import MEMO_ENTRIES, remember
from prefixkey.render._vision._gemma3 import Gemma3


@pytest.fixture(scope="module")
def image_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server's --allowed-local-media-path: where file:// images are written."""
    return tmp_path_factory.mktemp("vision-images")


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


GEMMA_OK: Final = [c for c in vision_cases("gemma3_") if c.status == 200]


def test_gemma3_s_shortcut_is_taken_and_skipped_by_the_corpus(
        image_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gemma 3's placement skips the newline passes when nothing can merge; the corpus
    has bodies on both sides (its replay checks both against vLLM), and forcing the
    full passes changes no answer."""
    taken = skipped = 0
    for case in GEMMA_OK:
        r = renderer(case, image_dir)
        family = r._images._family if r._images is not None else None
        assert isinstance(family, Gemma3)
        body = materialize(case.body, image_dir)
        shortcut = family._untouched
        seen: list[bool] = []

        def spy(*args: Any, shortcut: Any = shortcut, seen: list[bool] = seen) -> bool:
            seen.append(shortcut(*args))
            return seen[-1]

        monkeypatch.setattr(family, "_untouched", spy)
        fast = r.render_chat(body)
        taken += all(seen)
        skipped += not all(seen)
        monkeypatch.setattr(family, "_untouched", lambda *args: False)
        full = r.render_chat(body)
        monkeypatch.undo()
        assert list(fast.token_ids) == list(full.token_ids)
        assert [(m.offset, m.length) for m in fast.request.mm_items] == [
            (m.offset, m.length) for m in full.request.mm_items]
    assert taken and skipped, (taken, skipped)
