"""Pixtral in Mistral's format: a grid of ``[IMG]`` rows that mistral_common writes itself.

With ``--tokenizer-mode mistral`` vLLM 0.31 renders the chat with mistral_common
(prefixkey/render/_mistral.py), whose image encoder (``ImageEncoder``, configured by the
tokenizer file's ``image`` section: ``image_patch_size``, ``max_image_size``,
``spatial_merge_size``) puts each image's tokens into the prompt itself: ``[IMG]`` per
column, ``[IMG_BREAK]`` after each row, the last token ``[IMG_END]``. The grid comes from
the image as *mistral_common* opens it (``Image.open`` of the URL's bytes: no EXIF
transpose): scaled to fit ``max_image_size`` (both sides divided by the larger ratio,
Python's ``round``, at least 1 px), then ``(side - 1) // (patch * merge) + 1`` per side.

vLLM's processor (``model_executor/models/pixtral.py``) then applies no update: it
computes each image's tokens again by the same rule from the image as *vLLM's loader*
hands it (EXIF orientation applied), and finds them in the prompt, item after item from
where the previous one ended (``_find_mm_placeholders``). The placeholder (the
``mm_items`` offset and length) is the whole run, breaks and end included. An image
whose EXIF orientation swaps its sides into another grid is not found: vLLM's
``_validate_mm_placeholders`` raises, answered 500.

The folder's ``processor`` values (:class:`~._base.VisionFolder`) are the tokenizer's
image config and special ids, as ``MistralCommonImageProcessor`` reads them from
mistral_common's encoder; the Hugging Face folder of a Pixtral (no Mistral tokenizer)
has none: vLLM refuses it ("This model requires `--tokenizer-mode mistral`").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final

from .._errors import ModelFolderError, RenderRequestError, RenderUnsupportedError
from ._base import ImageSize, Placed, VisionFamily, VisionFolder

__all__ = ["PROCESSOR_KEYS", "Pixtral", "grid"]

#: What the mistral path hands the family (VisionFolder.processor), from the tokenizer.
PROCESSOR_KEYS: Final = ("image_patch_size", "max_image_size", "spatial_merge_size",
                         "image_token_id", "image_break_token_id", "image_end_token_id")
#: The spatial merges verified against vLLM's answers (Pixtral-12B-2409's tokenizer has
#: none; Mistral Small 3.1's image config merges 2x2).
_VERIFIED_MERGES: Final = frozenset({1, 2})


def grid(width: int, height: int, patch: int, max_size: int) -> tuple[int, int]:
    """``ImageEncoder._image_to_num_tokens``: (columns, rows) of an image's tokens.

    ``patch`` is the patch size times the spatial merge."""
    ratio = max(height / max_size, width / max_size)
    w: float = width
    h: float = height
    if ratio > 1:  # Python's round (half to even), and never 0 px
        w = max(round(width / ratio), 1)
        h = max(round(height / ratio), 1)
    return int((w - 1) // patch + 1), int((h - 1) // patch + 1)


class Pixtral(VisionFamily):
    """Pixtral / Mistral Small 3.x in Mistral's format (``PixtralForConditionalGeneration``)."""

    name: ClassVar[str] = "Pixtral"
    limit: ClassVar[int | None] = None  # get_supported_mm_limits: {"image": None}

    def __init__(self, folder: VisionFolder) -> None:
        super().__init__(folder)
        values = folder.processor
        if not all(key in values for key in PROCESSOR_KEYS):
            raise ModelFolderError("--tokenizer-mode", "Pixtral's processor is mistral_common's "
                                   "(vLLM: This model requires `--tokenizer-mode mistral`)")
        file = "the tokenizer's image config"
        patch, max_size, merge, img, brk, end = (
            folder.number(values, key, file) for key in PROCESSOR_KEYS)
        if merge not in _VERIFIED_MERGES:
            raise RenderUnsupportedError(
                "tekken.json image.spatial_merge_size", f"{merge} is not verified (verified: "
                f"{', '.join(map(str, sorted(_VERIFIED_MERGES)))}); render it with vLLM's "
                "render endpoint")
        self._patch = patch * merge
        self._max = max_size
        self._ids = (img, brk, end)

    def grid(self, size: ImageSize) -> tuple[int, int]:
        """(columns, rows) of an image of this size."""
        return grid(size.width, size.height, self._patch, self._max)

    def expansion(self, size: ImageSize, kwargs: Mapping[str, Any]) -> Sequence[int]:
        img, brk, end = self._ids
        columns, rows = self.grid(size)
        tokens = ([img] * columns + [brk]) * rows
        tokens[-1] = end
        return tokens

    def place(self, token_ids: list[int], expansions: Sequence[Sequence[int]]) -> Placed:
        """The prompt unchanged; each expansion found in turn (``_iter_placeholders``)."""
        spans: list[tuple[int, int]] = []
        start = 0
        for expansion in expansions:
            want = list(expansion)
            size = len(want)
            at = _find(token_ids, want, start, len(token_ids) - size)
            if at < 0:
                break
            spans.append((at, size))
            start = at + size
        if len(spans) < len(expansions):
            raise RenderRequestError(
                "messages", f"Expected there to be {len(expansions)} prompt placeholders "
                f"corresponding to {len(expansions)} image items, but instead found "
                f"{len(spans)} prompt placeholders!", status=500)
        return Placed(token_ids, spans)


def _find(ids: list[int], want: list[int], start: int, last: int) -> int:
    """The first index ``>= start`` (at most ``last``) where ``want`` starts, else -1."""
    first = want[0]
    while start <= last:
        try:
            at = ids.index(first, start, last + 1)
        except ValueError:
            return -1
        if ids[at:at + len(want)] == want:
            return at
        start = at + 1
    return -1
