"""LLaVA-1.5, LLaVA-NeXT and LLaVA-OneVision: vLLM 0.31's image expansion.

All three replace each ``image_token_index`` token of the prompt (``PromptReplacement``,
items in order) by ``[image_token_index] * n`` (``BaseLlavaMultiModalProcessor``); the
whole run is the placeholder. ``n`` comes from the config alone and the loaded image's
size, never from the image processor's output:

- LLaVA-1.5 (``LlavaProcessingInfo.get_num_image_tokens``): the vision tower's patch
  count, ``(image_size // patch_size) ** 2`` (+1 for CLIP's class token, none for
  SigLIP), then ``vision_feature_select_strategy`` (``default`` drops one, ``full``
  keeps all): 576 for 336 px CLIP-L/14, whatever the image.
- LLaVA-NeXT (``LlavaNextProcessingInfo``): that base count, plus the unpadded features
  of the any-resolution grid (transformers' ``select_best_resolution`` over
  ``image_grid_pinpoints``, the grid of ``image_size`` tiles, the padding removed as
  vLLM rounds it) and one newline feature per row.
- LLaVA-OneVision: the same, with the unpadded grid scaled down when it exceeds nine
  tiles' worth of patches (``anyres_max_9``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["LlavaImages", "llava_images", "select_best_resolution"]


def select_best_resolution(height: int, width: int,
                           pinpoints: Sequence[Sequence[int]]) -> tuple[int, int]:
    """transformers' ``select_best_resolution``: the (height, width) pinpoint that keeps
    most of the image, then wastes least."""
    best = (0, 0)
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


@dataclass(frozen=True, slots=True)
class LlavaImages:
    """One folder's LLaVA image facts, bound once."""

    image_token_id: int
    #: The vision tower's tokens per tile after the feature select strategy.
    base: int
    #: ``image_size // patch_size`` of the vision tower.
    grid: int
    image_size: int
    #: ``image_grid_pinpoints`` (LLaVA-NeXT, OneVision), None for LLaVA-1.5.
    pinpoints: tuple[tuple[int, int], ...] | None
    #: OneVision's reduction of the unpadded grid (``anyres_max_9``).
    max9: bool

    def count(self, width: int, height: int) -> int:
        """``get_num_image_tokens`` of vLLM's processing info for this image size."""
        if self.pinpoints is None:
            return self.base
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
        if self.max9:
            ratio = math.sqrt(cur_h * cur_w / (9 * self.grid ** 2))
            if ratio > 1.1:
                h, w = int(cur_h // ratio), int(cur_w // ratio)
                unpadded, newlines = h * w, h
        return unpadded + newlines + self.base

    def apply(self, prompt: list[int], counts: Sequence[int]
              ) -> tuple[list[int], list[tuple[int, int]]] | None:
        """The prompt with each image token replaced, and each image's (offset, length);
        None when the prompt has fewer image tokens than images."""
        out: list[int] = []
        spans: list[tuple[int, int]] = []
        start = 0
        for n in counts:
            try:
                at = prompt.index(self.image_token_id, start)
            except ValueError:
                return None
            out += prompt[start:at]
            spans.append((len(out), n))
            out += [self.image_token_id] * n
            start = at + 1
        out += prompt[start:]
        return out, spans


_SELECT = {"default": -1, "full": 0}


def llava_images(config: Mapping[str, Any]) -> LlavaImages | str:
    """Bind a LLaVA-family config, or say (a string) why it is not reproduced."""
    model_type = config.get("model_type")
    vision = config.get("vision_config") or {}
    vision_type = vision.get("model_type", "clip_vision_model")
    if vision_type not in ("clip_vision_model", "siglip_vision_model"):
        return f"vision tower {vision_type!r}"
    strategy = config.get("vision_feature_select_strategy", "default")
    if strategy not in _SELECT:
        return f"vision_feature_select_strategy {strategy!r}"
    image_size, patch = int(vision.get("image_size", 224)), int(vision.get("patch_size", 32))
    grid = image_size // patch
    tokens = grid ** 2 + (1 if vision_type == "clip_vision_model" else 0)
    pinpoints = config.get("image_grid_pinpoints")
    return LlavaImages(
        image_token_id=int(config.get("image_token_index", 32000)),
        base=tokens + _SELECT[strategy],
        grid=grid,
        image_size=image_size,
        pinpoints=None if model_type == "llava" else tuple(
            (int(h), int(w)) for h, w in pinpoints or ()),
        max9=model_type == "llava_onevision",
    )
