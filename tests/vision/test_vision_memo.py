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
from prefixkey.render._vision._base import MEMO_ENTRIES, remember, replace_markers
from prefixkey.render._vision._gemma3 import _DEFAULTS as GEMMA_DEFAULTS
from prefixkey.render._vision._gemma3 import Gemma3, num_crops


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


GEMMA_ALL: Final = vision_cases("gemma3_")


def _outcome(r: Renderer, body: dict[str, Any]) -> tuple[Any, ...]:
    """A render's token ids and spans, or its error's type and message."""
    try:
        done = r.render_chat(body)
    except Exception as exc:  # the refusals are answers too: both paths must agree
        return type(exc).__name__, str(exc)
    return list(done.token_ids), [(m.offset, m.length) for m in done.request.mm_items]


def test_gemma3_s_local_newline_merging_equals_the_full_passes_over_the_corpus(
        image_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the shortcut cannot be taken, the passes run over the runs of newlines
    alone (``_local``); the corpus takes that path, and the full passes over the whole
    prompt (``_local`` refusing) give every body the same answer or the same error."""
    taken = 0
    for case in GEMMA_ALL:
        r = renderer(case, image_dir)
        family = r._images._family if r._images is not None else None
        if not isinstance(family, Gemma3):
            continue
        body = materialize(case.body, image_dir)
        local = family._local
        seen: list[bool] = []

        def spy(*args: Any, local: Any = local, seen: list[bool] = seen) -> bool:
            seen.append(local(*args))
            return seen[-1]

        monkeypatch.setattr(family, "_local", spy)
        fast = _outcome(r, body)
        taken += any(seen)
        monkeypatch.setattr(family, "_local", lambda *args: False)
        full = _outcome(r, body)
        monkeypatch.undo()
        assert fast == full, case.id
    assert taken, "no corpus body takes the local newline merging"


def test_gemma3_s_local_newline_merging_equals_the_full_passes_on_random_prompts() -> None:
    """Prompts of text, newline tokens (1 to 4 newlines), markers and plain or
    pan-and-scan expansions: wherever ``_local`` answers, it answers as ``_full``."""
    import random

    family = _family("gemma3_vl")
    assert isinstance(family, Gemma3)
    n1, n2, n3, n4 = family.newlines
    plain = family.expansion(ImageSize(64, 48), {})
    crops = family.expansion(ImageSize(1920, 1080), {"do_pan_and_scan": True})
    assert crops != plain
    text = family.folder.encode("Describe it.")
    rng = random.Random(24)
    taken = refused = 0
    for _ in range(3000):
        prompt: list[int] = []
        expansions = []
        for _ in range(rng.randint(1, 6)):
            kind = rng.random()
            if kind < 0.45:
                prompt.append(rng.choice((n1, n1, n2, n2, n3, n4) if rng.random() < 0.1
                                         else (n1, n2)))
            elif kind < 0.7:
                prompt += text[:rng.randint(1, len(text))]
            else:
                prompt.append(family.boi)
                expansions.append(rng.choice((plain, plain, crops)))
        if not expansions:
            continue
        placed = replace_markers(prompt, family.marker, expansions)
        full = family._full(list(placed.token_ids), expansions)
        before = (list(placed.token_ids), list(placed.spans))
        # _local rebuilds placed in place (place's own), or leaves it as it is.
        if not family._local(placed, expansions, family._own_lines(prompt)):
            assert (placed.token_ids, placed.spans) == before
            refused += 1
            continue
        taken += 1
        assert (placed.token_ids, placed.spans) == full, prompt
    assert taken > 1000 and refused, (taken, refused)


def test_gemma3_s_crop_counts_are_kept_per_size_and_kwargs() -> None:
    """The memo of crop counts answers as num_crops over the merged kwargs, for flat,
    nested and mixed kwargs, asked once and again."""
    family = _family("gemma3_vl")
    assert isinstance(family, Gemma3)
    kwargs_forms: list[dict[str, Any]] = [
        {"do_pan_and_scan": True},
        {"do_pan_and_scan": True, "pan_and_scan_min_crop_size": 32},
        {"images_kwargs": {"do_pan_and_scan": True, "pan_and_scan_max_num_crops": 9,
                           "pan_and_scan_min_crop_size": 16}},
        {"do_pan_and_scan": False, "pan_and_scan_min_ratio_to_activate": 1.0,
         "images_kwargs": {"do_pan_and_scan": True, "pan_and_scan_min_crop_size": 20}},
        {"do_pan_and_scan": True, "pan_and_scan_min_crop_size": 20,
         "images_kwargs": {"pan_and_scan_min_ratio_to_activate": 1.0}},
    ]
    counts = set()
    for kwargs in kwargs_forms:
        nested = kwargs.get("images_kwargs", {})
        flat = {k: v for k, v in kwargs.items() if k != "images_kwargs"}
        merged = {**GEMMA_DEFAULTS, **flat, **nested}
        for width, height in [(64, 48), (640, 480), (1920, 1080), (300, 1000), (64, 64),
                              (2000, 100), (100, 2000), (41, 100)]:
            want = num_crops(width, height, merged)
            for _ in range(2):
                assert family.crops(ImageSize(width, height), kwargs) == want
            counts.add(want)
    assert len(counts) > 2, counts
