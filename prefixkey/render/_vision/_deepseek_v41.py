"""DeepSeek-V4.1: one ``<\uff5cdeepseek_image\uff5c>`` per image, grown to its token grid.

vLLM 0.30-0.33 (``vllm/models/deepseek_v41``, ``common/mm_preprocess.py``) registers a
processor for ``DeepseekV41ForCausalLM``; its encoder writes the placeholder text
``<\uff5cdeepseek_image\uff5c>`` for each image part (render/_deepseek_v41.py), and each such
token of the prompt is replaced, in order, by the image's span: ``n_h * (n_w + 1) + 2``
copies of the same token (start, ``n_w`` image tokens and a newline per row, end; the
roles travel beside the ids). ``n_h`` x ``n_w`` is the image's grid after the
processor's sizing, read from ``config.json``'s ``vision_config`` (``patch_size`` 14,
``downsample_ratio`` 3, ``max_image_tokens`` 1024, ``min_pixels`` 295936,
``max_wh_ratio`` none by default): a wider image than the ratio is narrowed, one under
``min_pixels`` scaled up, the size rounded up to whole patches, and a grid over the token
budget shrunk to the largest one inside it with the image's aspect.

What vLLM answers per request (ValueError, 400): a tokenizer without the token ("Token
not found in tokenizer: …", DeepSeek-V3's, which the verification folders borrow), or
with it at another id than 129264 (the id the model's router keys on). The model takes
images only: an audio or video part is vLLM's 400 "At most 0 audio(s) …" (its
``get_supported_mm_limits`` names no other modality), and ``get_placeholder_str`` gives
the same placeholder for every image. ``mm_processor_kwargs``: the processor takes none.
A body's own (0.31 on, only under ``--trust-request-mm-kwargs``) with an image is vLLM's
400 "Unexpected processor kwargs: [...]" (its ``get_hf_processor``), after the images
load; without an image nothing reads them. The server's (``--mm-processor-kwargs``) reach
only the processor's call, whose ``**kwargs`` ignores them: the grid stays the
``vision_config``'s (real_dsv4_ corpus, 0.30-0.33).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final

from .._errors import ModelFolderError, RenderRequestError, RenderUnsupportedError
from ._base import ImageSize, VisionFamily, VisionFolder

__all__ = ["IMAGE_TOKEN", "DeepseekV41Vision", "image_grid"]

IMAGE_TOKEN: Final = "<\uff5cdeepseek_image\uff5c>"
#: The id vLLM requires of the token (its IMAGE_SENTINEL_BASE_ID; config image_token_id).
_SENTINEL: Final = 129264
#: ``vision_config`` key → the processor's default.
_DEFAULTS: Final = {"patch_size": 14, "downsample_ratio": 3, "max_image_tokens": 1024,
                    "min_pixels": 295936}


def _span(rows: int, columns: int) -> int:
    return rows * (columns + 1) + 2


def _grid(height: float, width: float, patch: int, ratio: int) -> tuple[int, int]:
    """The aligner's token grid over a size in whole patches."""
    return math.ceil((height // patch) / ratio), math.ceil((width // patch) / ratio)


def _fit(height: float, width: float, patch: int, ratio: int, budget: int
         ) -> tuple[float, float]:
    """The largest size with the image's aspect whose grid fits the budget."""
    aspect = height / width
    columns = math.sqrt((budget - 2) / aspect + 0.25) - 0.5
    rows = columns * aspect
    cell = patch * ratio
    if columns < 1.0:  # so tall that one column is all the budget allows
        return (budget - 2) // 2 * cell, cell
    if rows < 1.0:  # so wide: one row
        return cell, (budget - 3) * cell
    scale = min(math.floor(columns) * cell / width, math.floor(rows) * cell / height)
    return (math.floor(height * scale / patch) * patch,
            math.floor(width * scale / patch) * patch)


def image_grid(width: int, height: int, *, patch: int, ratio: int, budget: int,
               min_pixels: int, max_wh_ratio: float | None) -> tuple[int, int]:
    """``(rows, columns)`` of an image's token grid, as the V4.1 processor sizes it."""
    w: float = width
    h: float = height
    if max_wh_ratio is not None and w > h * max_wh_ratio:
        w = h * max_wh_ratio
    if 0 < w * h < min_pixels:
        up = (min_pixels / (w * h)) ** 0.5
        w, h = int(w * up), int(h * up)
    rows, columns = _grid(math.ceil(h / patch) * patch, math.ceil(w / patch) * patch,
                          patch, ratio)
    if _span(rows, columns) > budget:
        rows, columns = _grid(*_fit(h, w, patch, ratio, budget), patch, ratio)
    return rows, columns


class DeepseekV41Vision(VisionFamily):
    """DeepSeek-V4.1 (``DeepseekV41ForCausalLM``, tokenizer mode ``deepseek_v41``)."""

    name: ClassVar[str] = "DeepSeek-V4.1"
    releases: ClassVar[frozenset[str]] = frozenset({"0.30.0", "0.31.0", "0.32.0", "0.33.0"})
    modalities: ClassVar[frozenset[str] | None] = frozenset({"image"})

    def __init__(self, folder: VisionFolder) -> None:
        super().__init__(folder)
        vision = folder.config.get("vision_config") or {}
        if not isinstance(vision, Mapping):
            raise ModelFolderError("config.json vision_config", "must be an object")
        self._patch, self._ratio, self._budget, self._min_pixels = (
            folder.number(vision, key, "config.json vision_config", default=default)
            for key, default in _DEFAULTS.items())
        wh = vision.get("max_wh_ratio")
        if wh is not None and (isinstance(wh, bool) or not isinstance(wh, (int, float))
                               or not math.isfinite(wh) or wh <= 0):
            raise ModelFolderError("config.json vision_config max_wh_ratio",
                                   "must be a positive number or null")
        self._max_wh_ratio: float | None = wh
        self._token = folder.token_id(IMAGE_TOKEN)
        self.marker = () if self._token is None else (self._token,)

    def placeholder(self, index: int) -> str | None:
        return IMAGE_TOKEN

    def grid(self, size: ImageSize) -> tuple[int, int]:
        return image_grid(size.width, size.height, patch=self._patch, ratio=self._ratio,
                          budget=self._budget, min_pixels=self._min_pixels,
                          max_wh_ratio=self._max_wh_ratio)

    def check_kwargs(self, kwargs: Mapping[str, Any], field: str) -> None:
        """Any name passes here: the server's kwargs reach only the processor's call, whose
        ``**kwargs`` drops them; the body's are refused once its images are loaded."""

    def check_request_kwargs(self, kwargs: Mapping[str, Any]) -> None:
        # get_hf_processor(**the body's kwargs) takes none (0.30-0.33).
        if kwargs:
            raise RenderRequestError("mm_processor_kwargs",
                                     f"Unexpected processor kwargs: {sorted(kwargs)}")

    def expansion(self, size: ImageSize, kwargs: Mapping[str, Any]) -> Sequence[int]:
        token = self._token
        if token is None:
            raise RenderRequestError("messages", f"Token not found in tokenizer: {IMAGE_TOKEN}")
        if token != _SENTINEL:
            raise RenderRequestError(
                "messages", f"Image placeholder {IMAGE_TOKEN!r} has id {token}, expected "
                f"{_SENTINEL} (the config's image_token_id); the DeepSeek-V4.1 vision path "
                "keys image routing and engram masking off this id.")
        rows, columns = self.grid(size)
        length = _span(rows, columns)
        if length > self._budget:  # vLLM's own assertion; never seen
            raise RenderUnsupportedError("messages", f"{self.name}: an image whose grid "
                                         "overruns the token budget is not reproduced")
        return [token] * length
