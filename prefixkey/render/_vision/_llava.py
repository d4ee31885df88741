"""LLaVA-1.5, LLaVA-NeXT and LLaVA-OneVision: each ``<image>`` becomes a run of itself.

vLLM 0.31 (``model_executor/models/llava.py``, ``BaseLlavaMultiModalProcessor``)
replaces each ``image_token_index`` token of the prompt (``PromptReplacement``, items in
order) by ``[image_token_index] * n``; the whole run is the placeholder. ``n`` comes
from ``config.json`` and the loaded image's size, never from the image processor's
output:

- LLaVA-1.5 (``LlavaProcessingInfo.get_num_image_tokens``): the vision tower's patch
  count, ``(image_size // patch_size) ** 2`` plus CLIP's class token (SigLIP has none),
  after ``vision_feature_select_strategy`` (``default`` drops one, ``full`` keeps all):
  576 for 336 px CLIP-L/14, whatever the image.
- LLaVA-NeXT (``LlavaNextProcessingInfo``): that base count, plus the unpadded features
  of the any-resolution grid (transformers' ``select_best_resolution`` over
  ``image_grid_pinpoints``, tiles of the tower's ``image_size``, the padding removed as
  vLLM rounds it) and one newline feature per row of them.
- LLaVA-OneVision (``LlavaOnevisionProcessingInfo``): the same, the unpadded grid scaled
  down when it holds more than 1.1 times nine tiles' patches (``anyres_max_9``).

The chat templates put ``<image>`` (``get_placeholder_str``) in the prompt; a literal
``<image>`` in a text part is a marker too, matched in order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final

from .._errors import ModelFolderError, RenderUnsupportedError
from ._base import RUN_ENTRIES, ImageSize, VisionFamily, VisionFolder, remember

__all__ = ["Llava", "LlavaNext", "LlavaOnevision", "select_best_resolution"]

_CONFIG: Final = "config.json"
#: Vision towers whose token count this module reproduces, and their extra class token.
_TOWERS: Final[Mapping[str, int]] = {"clip_vision_model": 1, "siglip_vision_model": 0}
#: ``get_num_selected_vision_tokens``: what each strategy keeps of the tower's tokens.
_SELECT: Final[Mapping[str, int]] = {"default": -1, "full": 0}


def select_best_resolution(height: int, width: int,
                           pinpoints: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """transformers' ``select_best_resolution``: the (height, width) pinpoint that keeps
    the most of the image, then wastes the least."""
    best = pinpoints[0]
    best_effective = 0
    least_wasted = math.inf
    for ph, pw in pinpoints:
        scale = min(pw / width, ph / height)
        effective = min(int(width * scale) * int(height * scale), width * height)
        wasted = pw * ph - effective
        if effective > best_effective or (effective == best_effective
                                          and wasted < least_wasted):
            best_effective, least_wasted, best = effective, wasted, (ph, pw)
    return best


class Llava(VisionFamily):
    """LLaVA-1.5 (``LlavaForConditionalGeneration``) with a CLIP or SigLIP tower."""

    name: ClassVar[str] = "LLaVA-1.5"

    def __init__(self, folder: VisionFolder) -> None:
        super().__init__(folder)
        config = folder.config
        vision = config.get("vision_config")
        if not isinstance(vision, dict):
            raise ModelFolderError(f"{_CONFIG} vision_config", "must be an object")
        tower = vision.get("model_type")
        if not isinstance(tower, str) or tower not in _TOWERS:
            raise RenderUnsupportedError(
                f"{_CONFIG} vision_config.model_type", f"{self.name} with a {tower!r} "
                f"vision tower is not verified (verified: {', '.join(_TOWERS)}): render it "
                "with vLLM's render endpoint")
        strategy = config.get("vision_feature_select_strategy")
        if not isinstance(strategy, str) or strategy not in _SELECT:
            raise RenderUnsupportedError(
                f"{_CONFIG} vision_feature_select_strategy", f"{strategy!r} is not verified "
                f"(verified: {', '.join(_SELECT)}): render it with vLLM's render endpoint")
        self.image_size = folder.number(vision, "image_size", f"{_CONFIG} vision_config")
        patch = folder.number(vision, "patch_size", f"{_CONFIG} vision_config")
        if tower == "clip_vision_model" and self.image_size % patch:
            # vLLM's CLIPEncoderInfo asserts it; SigLIP's floors (384 // 14 = 27).
            raise ModelFolderError(f"{_CONFIG} vision_config.image_size",
                                   "must be a multiple of patch_size for a CLIP tower")
        self.grid = self.image_size // patch
        self.base = self.grid ** 2 + _TOWERS[tower] + _SELECT[strategy]
        self.image_token = folder.number(config, "image_token_index", _CONFIG)
        self.marker = (self.image_token,)
        #: Image size → its token count, and count → its run (one immutable tuple each).
        self._counts: dict[ImageSize, int] = {}
        self._runs: dict[int, tuple[int, ...]] = {}

    def placeholder(self, index: int) -> str | None:
        return "<image>"

    def count(self, size: ImageSize) -> int:
        """``get_num_image_tokens`` for an image of this size."""
        return self.base

    def expansion(self, size: ImageSize, kwargs: Mapping[str, Any]) -> Sequence[int]:
        count = self._counts.get(size)
        if count is None:
            count = remember(self._counts, size, self.count(size))
        run = self._runs.get(count)
        if run is None:
            run = remember(self._runs, count, (self.image_token,) * count, RUN_ENTRIES)
        return run


class LlavaNext(Llava):
    """LLaVA-NeXT (``LlavaNextForConditionalGeneration``): any-resolution tiles."""

    name: ClassVar[str] = "LLaVA-NeXT"
    #: OneVision's ``anyres_max_9`` reduction of the unpadded grid.
    max_tiles: ClassVar[int | None] = None

    def __init__(self, folder: VisionFolder) -> None:
        super().__init__(folder)
        pinpoints = folder.config.get("image_grid_pinpoints")
        if not (isinstance(pinpoints, list) and pinpoints and all(
                isinstance(p, list) and len(p) == 2 and all(type(v) is int and v > 0
                                                            for v in p) for p in pinpoints)):
            raise ModelFolderError(f"{_CONFIG} image_grid_pinpoints",
                                   "must be a non-empty list of [height, width] ints")
        self.pinpoints = tuple((h, w) for h, w in pinpoints)

    def count(self, size: ImageSize) -> int:
        width, height = size.width, size.height
        ph, pw = select_best_resolution(height, width, self.pinpoints)
        cur_h = self.grid * (ph // self.image_size)
        cur_w = self.grid * (pw // self.image_size)
        if width / height > cur_w / cur_h:
            new_h = int(round(height * (cur_w / width), 7))
            cur_h -= 2 * ((cur_h - new_h) // 2)
        else:
            new_w = int(round(width * (cur_h / height), 7))
            cur_w -= 2 * ((cur_w - new_w) // 2)
        unpadded, newlines = cur_h * cur_w, cur_h
        if self.max_tiles is not None:
            ratio = math.sqrt(cur_h * cur_w / (self.max_tiles * self.grid ** 2))
            if ratio > 1.1:
                rows, cols = int(cur_h // ratio), int(cur_w // ratio)
                unpadded, newlines = rows * cols, rows
        return unpadded + newlines + self.base


class LlavaOnevision(LlavaNext):
    """LLaVA-OneVision (``LlavaOnevisionForConditionalGeneration``), images only."""

    name: ClassVar[str] = "LLaVA-OneVision"
    max_tiles: ClassVar[int | None] = 9
