"""Llama 4: the image as tiles of 144 ``<|patch|>`` each, then the global view.

vLLM 0.31 (``model_executor/models/mllama4.py``, ``Mllama4MultiModalProcessor``) replaces
each ``<|image|>`` of the prompt (the processor's ``image_token``, which the chat template
writes for an image; items in order) by the tokens of transformers'
``Llama4Processor._prompt_split_image`` for the image's tile grid ``(rows, columns)``:
``<|image_start|>``; when the grid holds more than one tile, per row each tile's
``<|patch|>`` run with ``<|tile_x_separator|>`` between tiles and ``<|tile_y_separator|>``
after the row; then ``<|image|>``, one more ``<|patch|>`` run (the global view) and
``<|image_end|>``. A run is ``(image_size // patch_size)² // round(1 / pixel_shuffle_ratio²)``
patches (``config.json`` ``vision_config``: 336, 14, 0.5 give 144). The whole replacement
is the item's span.

The grid is not the HF processor's own output: vLLM's ``_postprocess_hf_mm_data``
recomputes it from the loaded image's size with transformers' ``find_supported_resolutions``
(every ``rows x columns`` canvas of ``vision_config.image_size`` tiles up to the image
processor's ``max_patches``, 16) and ``get_best_fit``: each canvas's scale is the smaller
of ``canvas / image`` per side, computed in float32 on torch tensors; the smallest scale
>= 1 wins (the largest under ``resize_to_max_canvas``), else the largest below 1, and
among canvases of that scale the first of least area. Processor kwargs are not reproduced.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final

from .._errors import ModelFolderError
from ._base import ImageSize, VisionFamily, VisionFolder, remember

__all__ = ["Llama4", "best_fit", "supported_resolutions"]

_CONFIG: Final = "config.json"
_PREPROCESSOR: Final = "preprocessor_config.json"
_PROCESSOR_TYPES: Final = frozenset({"Llama4ImageProcessor", "Llama4ImageProcessorFast"})
_F32: Final = struct.Struct("f")


def supported_resolutions(max_tiles: int, tile: int) -> tuple[tuple[int, int], ...]:
    """transformers' ``find_supported_resolutions``: every (height, width) canvas of up to
    ``max_tiles`` tiles, grouped by aspect ratio in order of first appearance (tile counts
    from the largest down, each count's factors ascending)."""
    by_ratio: dict[float, list[tuple[int, int]]] = {}
    for count in range(max_tiles, 0, -1):
        factors = sorted({f for i in range(1, int(count ** 0.5) + 1) if count % i == 0
                          for f in (i, count // i)})
        for rows in factors:
            by_ratio.setdefault(rows / (count // rows), []).append((rows, count // rows))
    return tuple((rows * tile, columns * tile) for group in by_ratio.values()
                 for rows, columns in group)


def _f32(value: float) -> float:
    """The float32 a torch tensor holds for ``value`` (a correctly rounded quotient of
    two ints below 2**24 stays correctly rounded through float64)."""
    return float(_F32.unpack(_F32.pack(value))[0])


def best_fit(height: int, width: int, canvases: Sequence[tuple[int, int]],
             resize_to_max_canvas: bool) -> tuple[int, int]:
    """transformers' ``get_best_fit`` for an image of ``height`` x ``width``."""
    scales = []
    for canvas_h, canvas_w in canvases:
        scale_w, scale_h = _f32(canvas_w / width), _f32(canvas_h / height)
        scales.append(scale_w if scale_h > scale_w else scale_h)
    upscaling = [s for s in scales if s >= 1]
    if upscaling:
        chosen = max(upscaling) if resize_to_max_canvas else min(upscaling)
    else:
        chosen = max(scales)
    best = None
    for canvas, scale in zip(canvases, scales, strict=True):
        if scale == chosen and (best is None or canvas[0] * canvas[1] < best[0] * best[1]):
            best = canvas
    assert best is not None  # chosen is one of the scales
    return best


class Llama4(VisionFamily):
    """Llama 4 Scout / Maverick (``Llama4ForConditionalGeneration``)."""

    name: ClassVar[str] = "Llama 4"

    def __init__(self, folder: VisionFolder) -> None:
        super().__init__(folder)
        folder.processor_type(self.name, _PROCESSOR_TYPES)
        vision = folder.config.get("vision_config")
        if not isinstance(vision, dict):
            raise ModelFolderError(f"{_CONFIG} vision_config", "must be an object")
        where = f"{_CONFIG} vision_config"
        self.tile = folder.number(vision, "image_size", where)
        patch = folder.number(vision, "patch_size", where)
        if self.tile % patch:
            # vLLM's get_patch_per_chunk asserts it.
            raise ModelFolderError(f"{where}.image_size", "must be a multiple of patch_size")
        ratio = vision.get("pixel_shuffle_ratio")
        if type(ratio) is not float or not 0 < ratio <= 1:
            raise ModelFolderError(f"{where}.pixel_shuffle_ratio",
                                   f"must be a float in (0, 1], got {ratio!r}")
        self.per_tile = (self.tile // patch) ** 2 // round(1.0 / ratio ** 2)
        pre = folder.preprocessor
        max_tiles = folder.number(pre, "max_patches", _PREPROCESSOR, default=16)
        to_max = pre.get("resize_to_max_canvas", False)
        if type(to_max) is not bool:
            raise ModelFolderError(f"{_PREPROCESSOR} resize_to_max_canvas",
                                   f"must be a bool, got {to_max!r}")
        self.resize_to_max_canvas = to_max
        self.canvases = supported_resolutions(max_tiles, self.tile)
        image = folder.processor.get("image_token", "<|image|>")
        source = "Llama4Processor's tokens"
        self.image = folder.token(image if isinstance(image, str) else "", source)
        self.start = folder.token("<|image_start|>", source)
        self.end = folder.token("<|image_end|>", source)
        self.patch = folder.token("<|patch|>", source)
        self.tile_x = folder.token("<|tile_x_separator|>", source)
        self.tile_y = folder.token("<|tile_y_separator|>", source)
        self.marker = (self.image,)
        #: Image size → its expansion, and (rows, columns) → the expansion (one per canvas).
        self._sizes: dict[ImageSize, tuple[int, ...]] = {}
        self._expansions: dict[tuple[int, int], tuple[int, ...]] = {}

    def placeholder(self, index: int) -> str | None:
        return "<|image|>"

    def grid(self, size: ImageSize) -> tuple[int, int]:
        """The image's tiles, (rows, columns): its best-fit canvas in tiles."""
        height, width = best_fit(size.height, size.width, self.canvases,
                                 self.resize_to_max_canvas)
        return height // self.tile, width // self.tile

    def expansion(self, size: ImageSize, kwargs: Mapping[str, Any]) -> Sequence[int]:
        found = self._sizes.get(size)
        if found is None:
            grid = self.grid(size)
            found = self._expansions.get(grid)
            if found is None:
                found = self._expansions[grid] = self._build(*grid)
            remember(self._sizes, size, found)
        return found

    def _build(self, rows: int, columns: int) -> tuple[int, ...]:
        """``_prompt_split_image``'s text as token ids (each piece is one special token)."""
        run = [self.patch] * self.per_tile
        out = [self.start]
        if rows * columns > 1:
            row = [*run]
            for _ in range(columns - 1):
                row += [self.tile_x, *run]
            row.append(self.tile_y)
            out += row * rows
        out += [self.image, *run, self.end]
        return tuple(out)
