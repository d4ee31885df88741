"""InternVL3 in transformers' layout: ``<img>``, 256 ``<IMG_CONTEXT>`` per tile, ``</img>``.

vLLM 0.31 serves ``InternVLForConditionalGeneration`` with ``interns1.py``
(``InternS1MultiModalProcessor``): each ``<IMG_CONTEXT>`` of the prompt (the processor's
``image_token``, which the chat template writes for an image) is replaced, in order, by
the tokens of ``<img>`` + ``<IMG_CONTEXT>`` x (``image_seq_length`` x tiles) + ``</img>``.
The tile count is ``image_num_patches`` of transformers' ``InternVLProcessor`` run on
the image alone: ``InternVLProcessorKwargs`` default ``crop_to_patches`` to true, and
``GotOcr2ImageProcessor.crop_image_to_patches`` picks the grid of ``size`` tiles between
``min_patches`` and ``max_patches`` (``preprocessor_config.json``) whose aspect ratio is
closest to the image's (``get_optimal_tiled_canvas``), adding a thumbnail when the grid
has more than one tile. The processor kwargs ``crop_to_patches``, ``min_patches`` and
``max_patches`` (the server's, then the body's) override them. The remote-code layout
(``InternVLChatModel``, ``max_dynamic_patch``) is another processor, refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final

from .._errors import RenderUnsupportedError
from ._base import RUN_ENTRIES, ImageSize, VisionFamily, VisionFolder, remember

__all__ = ["InternVL", "optimal_tiled_canvas"]

_PREPROCESSOR: Final = "preprocessor_config.json"
_PROCESSOR_TYPES: Final = frozenset({"GotOcr2ImageProcessor", "GotOcr2ImageProcessorFast"})
_CONTEXT: Final = "<IMG_CONTEXT>"
_START: Final = "<img>"
_END: Final = "</img>"


def optimal_tiled_canvas(height: int, width: int, tile_height: int, tile_width: int,
                         min_tiles: int, max_tiles: int) -> tuple[int, int]:
    """transformers' ``get_optimal_tiled_canvas``: ``(columns, rows)`` of tiles."""
    grids = sorted(((w, h) for w in range(1, max_tiles + 1) for h in range(1, max_tiles + 1)
                    if min_tiles <= w * h <= max_tiles), key=lambda g: g[0] * g[1])
    aspect = width / height
    area = width * height
    best_diff = float("inf")
    best = (1, 1)
    for grid in grids:
        diff = abs(aspect - grid[0] / grid[1])
        if diff < best_diff:
            best_diff, best = diff, grid
        elif diff == best_diff and area > 0.5 * tile_height * tile_width * grid[0] * grid[1]:
            best = grid
    return best


class InternVL(VisionFamily):
    """InternVL3 / InternVL2.5 converted to transformers (``InternVLForConditionalGeneration``)."""

    name: ClassVar[str] = "InternVL"
    kwargs: ClassVar[frozenset[str]] = frozenset({"crop_to_patches", "min_patches",
                                                  "max_patches"})

    def __init__(self, folder: VisionFolder) -> None:
        super().__init__(folder)
        pre = folder.preprocessor
        folder.processor_type(self.name, _PROCESSOR_TYPES)
        size = pre.get("size")
        if not (isinstance(size, dict) and set(size) == {"height", "width"}):
            raise RenderUnsupportedError(f"{_PREPROCESSOR} size", f"{size!r} is not a verified "
                                         "shape ({'height': …, 'width': …})")
        self.tile = (folder.number(size, "height", f"{_PREPROCESSOR} size"),
                     folder.number(size, "width", f"{_PREPROCESSOR} size"))
        self.min_patches = folder.number(pre, "min_patches", _PREPROCESSOR, default=1)
        self.max_patches = folder.number(pre, "max_patches", _PREPROCESSOR, default=12)
        self.seq_len = folder.number(folder.processor, "image_seq_length",
                                     "processor_config.json", default=256)
        self.context = folder.token(_CONTEXT, "InternVLProcessor's image_token")
        self.start = folder.token(_START, "InternVLProcessor's start_image_token")
        self.end = folder.token(_END, "InternVLProcessor's end_image_token")
        self.marker = (self.context,)
        #: Image size → its tiles (default kwargs), and tiles → the expansion (immutable).
        self._tiles: dict[ImageSize, int] = {}
        self._runs: dict[int, tuple[int, ...]] = {}

    def placeholder(self, index: int) -> str | None:
        return _CONTEXT

    def check_kwargs(self, kwargs: Mapping[str, Any], field: str) -> None:
        super().check_kwargs(kwargs, field)
        for name, value in kwargs.items():
            ok = type(value) is bool if name == "crop_to_patches" else (
                type(value) is int and value >= 1)
            if not ok:
                raise RenderUnsupportedError(
                    f"{field}.{name}", f"{self.name}: only a "
                    f"{'bool' if name == 'crop_to_patches' else 'positive int'} is reproduced")

    def tiles(self, size: ImageSize, kwargs: Mapping[str, Any]) -> int:
        """``image_num_patches``: the image's tiles, its thumbnail included."""
        if not kwargs.get("crop_to_patches", True):
            return 1
        columns, rows = optimal_tiled_canvas(
            size.height, size.width, *self.tile, kwargs.get("min_patches", self.min_patches),
            kwargs.get("max_patches", self.max_patches))
        return 1 if columns * rows == 1 else columns * rows + 1

    def expansion(self, size: ImageSize, kwargs: Mapping[str, Any]) -> Sequence[int]:
        if kwargs:
            tiles = self.tiles(size, kwargs)
        else:
            found = self._tiles.get(size)
            tiles = remember(self._tiles, size, self.tiles(size, kwargs)) if found is None \
                else found
        run = self._runs.get(tiles)
        if run is None:
            run = remember(self._runs, tiles, (self.start,) + (self.context,) * (
                self.seq_len * tiles) + (self.end,), RUN_ENTRIES)
        return run
