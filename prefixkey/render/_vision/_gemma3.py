"""Gemma 3: 256 soft tokens between ``<start_of_image>`` and ``<end_of_image>``, and pan-and-scan.

vLLM 0.31 (``model_executor/models/gemma3_mm.py``) replaces each ``<start_of_image>`` of
the prompt (``PromptReplacement`` on its id, items in order) by the tokens of
``processor.full_image_sequence`` — ``"\\n\\n<start_of_image>"``, ``image_seq_length``
(``processor_config.json``) ``<image_soft_token>``s, ``"<end_of_image>\\n\\n"`` — or, when
pan-and-scan crops the image, of ``"Here is the original image {seq} and here are some
crops to help you see better {seq} {seq}…"`` (one ``{seq}`` per crop), each encoded by
the tokenizer without special tokens. The crop count is ``get_num_crops`` over the
loaded image's size and the processor's merged images kwargs: ``Gemma3ProcessorKwargs``'
defaults (``do_pan_and_scan`` false, ``pan_and_scan_min_crop_size`` 256,
``pan_and_scan_max_num_crops`` 4, ``pan_and_scan_min_ratio_to_activate`` 1.2) under the
kwargs in force; the image processor's own config values (``null`` in Gemma 3's files)
are not read.

After the replacements, ``_apply_token_matches`` merges the whole prompt's newline
tokens as the tokenizer would have produced them (``\\n`` ``\\n\\n`` → ``\\n\\n\\n``, then
``\\n\\n`` ``\\n`` → ``\\n\\n\\n``, then ``\\n\\n`` ``\\n\\n`` → ``\\n\\n\\n\\n``, each a
left-to-right pass), and ``_find_mm_placeholders`` finds each image's replacement again
in the prompt with those merged tokens split back: its offset is the index of the
(possibly merged) token where the replacement starts, its length the replacement's.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any, ClassVar, Final

from .._errors import RenderRequestError, RenderUnsupportedError
from ._base import (
    RUN_ENTRIES,
    ImageSize,
    Placed,
    VisionFamily,
    VisionFolder,
    remember,
    replace_markers,
)

__all__ = ["Gemma3", "num_crops", "replace_token_matches"]

_PROCESSOR_TYPES: Final = frozenset({"Gemma3ImageProcessor", "Gemma3ImageProcessorFast"})
_BOI: Final = "<start_of_image>"
_EOI: Final = "<end_of_image>"
_SOFT: Final = "<image_soft_token>"
#: Crop counts whose expansions a family keeps encoded.
_CACHED_CROPS: Final = 64
#: The longest run of newline tokens whose merging a family keeps.
_KEPT_RUN: Final = 32
#: ``Gemma3ProcessorKwargs._defaults["images_kwargs"]`` that the crop count reads
#: (transformers 5.17), and the type each value must have to be reproduced.
_DEFAULTS: Final[Mapping[str, Any]] = {
    "do_pan_and_scan": False,
    "pan_and_scan_min_crop_size": 256,
    "pan_and_scan_max_num_crops": 4,
    "pan_and_scan_min_ratio_to_activate": 1.2,
}
_TYPES: Final[Mapping[str, tuple[type, ...]]] = {
    "do_pan_and_scan": (bool,),
    "pan_and_scan_min_crop_size": (int,),
    "pan_and_scan_max_num_crops": (int,),
    "pan_and_scan_min_ratio_to_activate": (int, float),
}


def num_crops(width: int, height: int, kwargs: Mapping[str, Any]) -> int:
    """``Gemma3ProcessingInfo.get_num_crops``: the image's pan-and-scan crops (0: none)."""
    if not kwargs["do_pan_and_scan"]:
        return 0
    min_crop = kwargs["pan_and_scan_min_crop_size"]
    max_crops = kwargs["pan_and_scan_max_num_crops"]
    min_ratio = kwargs["pan_and_scan_min_ratio_to_activate"]
    if width >= height:
        if width / height < min_ratio:
            return 0
        crops_w = min(math.floor(width / min_crop), math.floor(width / height + 0.5))
        crops_w, crops_h = min(max_crops, max(2, crops_w)), 1
    else:
        if height / width < min_ratio:
            return 0
        crops_h = min(math.floor(height / min_crop), math.floor(height / width + 0.5))
        crops_w, crops_h = 1, min(max_crops, max(2, crops_h))
    if min(math.ceil(width / crops_w), math.ceil(height / crops_h)) < min_crop:
        return 0
    return int(crops_w * crops_h)


def replace_token_matches(ids: list[int], match: tuple[int, int], new: int) -> list[int]:
    """vLLM's ``replace_token_matches`` for a two-token match: left to right, no overlap
    (candidates found by ``list.index``, as vLLM's ``iter_token_matches`` does)."""
    first, second = match
    out: list[int] = []
    start = i = 0
    last = len(ids) - 2
    while i <= last:
        try:
            i = ids.index(first, i, last + 1)
        except ValueError:
            break
        if ids[i + 1] == second:
            out += ids[start:i]
            out.append(new)
            i = start = i + 2
        else:
            i += 1
    if start == 0:
        return ids
    out += ids[start:]
    return out


class Gemma3(VisionFamily):
    """Gemma 3 (``Gemma3ForConditionalGeneration``)."""

    name: ClassVar[str] = "Gemma 3"
    kwargs: ClassVar[frozenset[str]] = frozenset({*_DEFAULTS, "images_kwargs"})

    def __init__(self, folder: VisionFolder) -> None:
        super().__init__(folder)
        folder.processor_type(self.name, _PROCESSOR_TYPES)
        seq_len = folder.number(folder.processor, "image_seq_length", "processor_config.json",
                                default=256)
        self.boi = folder.token(_BOI, "Gemma3Processor's boi_token")
        for text in (_EOI, _SOFT):
            folder.token(text, "Gemma3Processor's image tokens")
        self.newlines = tuple(folder.token("\n" * n, "Gemma 3's newline merging")
                              for n in (1, 2, 3, 4))
        self.sequence = f"\n\n{_BOI}{_SOFT * seq_len}{_EOI}\n\n"
        self.marker = (self.boi,)
        self._plain = tuple(folder.encode(self.sequence))
        #: Crop count → its expansion (the tokenizer's encoding of the text above).
        self._crops: dict[int, tuple[int, ...]] = {}
        #: id(expansion) → (expansion, whether it is free of newline merges, the indices
        #: of its ``\n``/``\n\n`` tokens, whether it holds ``<start_of_image>``).
        self._pairs: dict[int, tuple[Sequence[int], bool, tuple[int, ...], bool]] = {}
        #: (width, height, the kwargs' items) → the crop count, for pan-and-scan kwargs.
        self._counts: dict[tuple[Any, ...], int] = {}
        #: A run of newline tokens → what _merge_run makes of it.
        self._runs: dict[tuple[int, ...], tuple[tuple[int, ...], tuple[int, ...], bool]] = {}

    def placeholder(self, index: int) -> str | None:
        return _BOI

    def check_kwargs(self, kwargs: Mapping[str, Any], field: str) -> None:
        super().check_kwargs(kwargs, field)
        nested = kwargs.get("images_kwargs", {})
        if not isinstance(nested, dict) or not set(nested) <= set(_DEFAULTS):
            raise RenderUnsupportedError(
                f"{field}.images_kwargs", f"{self.name}: only an object of "
                f"{', '.join(_DEFAULTS)} is reproduced")
        for name, value, where in [*((n, v, field) for n, v in kwargs.items()
                                     if n != "images_kwargs"),
                                   *((n, v, f"{field}.images_kwargs") for n, v in
                                     nested.items())]:
            if name == "do_pan_and_scan" and isinstance(value, str):
                # transformers' validate_typed_dict refuses it in the processor call:
                # vLLM's ValueError "Failed to apply Gemma3Processor …", answered 400.
                raise RenderRequestError(f"{where}.{name}", "Failed to apply "
                                         "Gemma3Processor: do_pan_and_scan must be a bool")
            if not (type(value) in _TYPES[name] and (name == "do_pan_and_scan" or value > 0)):
                raise RenderUnsupportedError(
                    f"{where}.{name}", f"{self.name}: only a "
                    f"{' or '.join(t.__name__ for t in _TYPES[name])} "
                    f"{'' if name == 'do_pan_and_scan' else '> 0 '}is reproduced")
            if where == field and name in nested:
                # transformers' _merge_kwargs: "passed two times", a ValueError.
                raise RenderUnsupportedError(f"{field}.{name}", f"{self.name}: a kwarg "
                                             "given both flat and in images_kwargs")

    def crops(self, size: ImageSize, kwargs: Mapping[str, Any]) -> int:
        """The crop count; an ``images_kwargs`` value wins over the flat one
        (``_merge_kwargs``)."""
        nested = kwargs.get("images_kwargs", {})
        if not nested.get("do_pan_and_scan", kwargs.get("do_pan_and_scan", False)):
            return 0  # num_crops' first test, without merging the kwargs
        # The count is a function of the size and the kwargs' (checked: bool, int or
        # float) values, so equal items give it: a key of them costs less than the merge.
        key = ((size.width, size.height, *kwargs.items()) if "images_kwargs" not in kwargs
               else (size.width, size.height, *nested.items(), None,
                     *[(k, v) for k, v in kwargs.items() if k != "images_kwargs"]))
        found = self._counts.get(key)
        if found is None:
            flat = {k: v for k, v in kwargs.items() if k != "images_kwargs"}
            found = remember(self._counts, key, num_crops(
                size.width, size.height, {**_DEFAULTS, **flat, **nested}))
        return found

    def expansion(self, size: ImageSize, kwargs: Mapping[str, Any]) -> Sequence[int]:
        crops = self.crops(size, kwargs)
        if crops == 0:
            return self._plain
        cached = self._crops.get(crops)
        if cached is None:
            text = ("Here is the original image " + self.sequence
                    + " and here are some crops to help you see better "
                    + " ".join([self.sequence] * crops))
            cached = tuple(self.folder.encode(text))
            if len(self._crops) < _CACHED_CROPS:  # bounded: a kwarg sets the crop cap
                self._crops[crops] = cached
        return cached

    def place(self, token_ids: list[int], expansions: Sequence[Sequence[int]]) -> Placed:
        placed = replace_markers(token_ids, self.marker, expansions)
        own = self._own_lines(token_ids)
        if self._untouched(placed, expansions, own):
            return placed
        if not self._local(placed, expansions, own):
            placed = Placed(*self._full(placed.token_ids, expansions))
        spans = placed.spans
        if len(spans) < len(expansions):
            # vLLM's _validate_mm_placeholders: a RuntimeError, answered 500 (an image's
            # leading "\n\n" merged with a newline the template put before it, as 'string'
            # content format does with the placeholder it joins to the text by "\n").
            raise RenderRequestError(
                "messages", f"Expected there to be {len(expansions)} prompt placeholders "
                f"corresponding to {len(expansions)} image items, but instead found "
                f"{len(spans)} prompt placeholders!", status=500)
        for (offset, _), (start, length) in zip(spans[1:], spans, strict=False):
            if offset < start + length:
                # Two images' newlines merged into one token: both spans hold it, and the
                # render response's MultiModalFeatures refuses overlapping placeholders.
                raise RenderRequestError(
                    "messages", "1 validation error for MultiModalFeatures: mm_placeholders "
                    "must be globally non-overlapping and sorted")
        return placed

    def _full(self, replaced: list[int], expansions: Sequence[Sequence[int]]
              ) -> tuple[list[int], list[tuple[int, int]]]:
        """vLLM's passes over the whole prompt, then its search: the prompt and the spans
        found (fewer than the images when one is not found)."""
        n1, n2, n3, n4 = self.newlines
        merged = replace_token_matches(replaced, (n1, n2), n3)
        merged = replace_token_matches(merged, (n2, n1), n3)
        merged = replace_token_matches(merged, (n2, n2), n4)
        return merged, self._find(merged, expansions)

    def _own_lines(self, token_ids: list[int]) -> list[int] | None:
        """The indices of the prompt's ``\\n``/``\\n\\n`` tokens, in order; None when it
        holds a merged token (``\\n\\n\\n``/``\\n\\n\\n\\n``), which the search splits."""
        n1, n2, n3, n4 = self.newlines
        if n3 in token_ids or n4 in token_ids:
            return None
        ones, twos = token_ids.count(n1), token_ids.count(n2)
        if ones + twos <= 1:  # the usual prompt: no list.index loop to set up
            return [token_ids.index(n1 if ones else n2)] if ones or twos else []
        return sorted([*_positions(token_ids, n1), *_positions(token_ids, n2)])

    def _local(self, placed: Placed, expansions: Sequence[Sequence[int]],
               own: list[int] | None) -> bool:
        """Make ``placed`` (place's own, rebuilt in place) :meth:`_full`'s answer, from
        the runs of newline tokens alone; False, leaving it as it is, when that cannot be
        shown equal (then :meth:`_full` answers).

        A pass merges two adjacent ``\\n``/``\\n\\n`` tokens, so left to right over the
        prompt it merges each maximal run of them as it would alone: the passes run over
        each run (found from the prompt's own newlines and each expansion's, kept per
        expansion) and the prompt is rebuilt around them. The search then finds each image
        where it was put when splitting the merged tokens back gives each expansion's
        tokens again (no run a split changes overlaps an image) and no expansion merges
        inside (it is pair-free): no earlier match can start, as a match holds the
        expansion's ``<start_of_image>`` and the prompt between two images holds none
        (each of its ``<start_of_image>`` is a marker, replaced in order).
        """
        if own is None:
            return False  # the prompt's own merged tokens are split back too
        out = placed.token_ids
        # Every newline's index in the expanded prompt: a prompt token after k markers
        # moves by the k expansions' lengths less their markers.
        # (map, not comprehensions: this runs per request, and 3.11 calls each of those)
        lines: list[int] = []
        j = shift = 0
        mine = len(own)
        for expansion, (offset, length) in zip(expansions, placed.spans, strict=True):
            free, inner, boi = self._lines(expansion)
            if not (free and boi):
                return False
            marker = offset - shift
            while j < mine and own[j] < marker:
                lines.append(own[j] + shift)
                j += 1
            lines += map(offset.__add__, inner)
            shift += length - 1
        if j < mine:
            lines += map(shift.__add__, own[j:])
        changes: list[tuple[int, int, tuple[int, ...]]] = []
        starts: list[int] = []  # where each merged token starts, in the expanded prompt
        k = 0
        end = len(lines)
        while k < end:
            first = last = lines[k]
            k += 1
            while k < end and lines[k] == last + 1:
                last = lines[k]
                k += 1
            if first == last:
                continue
            new, heads, same = self._merge_run(tuple(out[first:last + 1]))
            if not heads:
                continue
            if not same and any(first < offset + length and offset <= last
                                for offset, length in placed.spans):
                return False
            changes.append((first, last, new))
            starts += map(first.__add__, heads)
        if not changes:
            return True
        for first, last, new in reversed(changes):  # the last first: indices hold
            out[first:last + 1] = new
        spans = placed.spans
        for i, (offset, length) in enumerate(spans):
            spans[i] = (offset - bisect_left(starts, offset), length)
        return True

    def _merge_run(self, run: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...], bool]:
        """A run of newline tokens after the passes, where each merged token starts in the
        run, and whether splitting them back gives the run again (memoized per run: a
        run is a pattern of two tokens, and short ones repeat)."""
        found = self._runs.get(run)
        if found is not None:
            return found
        n1, n2, n3, n4 = self.newlines
        new = replace_token_matches(list(run), (n1, n2), n3)
        new = replace_token_matches(new, (n2, n1), n3)
        new = replace_token_matches(new, (n2, n2), n4)
        split: list[int] = []
        heads: list[int] = []
        for token in new:
            if token in (n3, n4):
                heads.append(len(split))
                split += (n1, n2) if token == n3 else (n2, n2)
            else:
                split.append(token)
        found = (tuple(new), tuple(heads), tuple(split) == run)
        if len(run) <= _KEPT_RUN:  # bounded: a prompt's run can be long
            remember(self._runs, run, found)
        return found

    def _untouched(self, placed: Placed, expansions: Sequence[Sequence[int]],
                   own: list[int] | None) -> bool:
        """Whether the newline merging leaves ``placed`` as it is, so that each image's
        span is where it was put, decided without scanning the expanded prompt.

        The passes only merge two adjacent ``\\n``/``\\n\\n`` tokens, and the search finds
        each expansion where it was put when no token is merged and none is split back
        (no ``\\n\\n\\n``/``\\n\\n\\n\\n``): the expansion's ``<start_of_image>`` appears
        nowhere before it. So: no merged token and no adjacent pair in the prompt's own
        tokens, none inside an expansion, none where an expansion meets its neighbours.
        """
        if own is None or _adjacent(own):  # own: the prompt's newlines (_own_lines)
            return False
        n1, n2 = self.newlines[:2]
        out = placed.token_ids
        end = len(out)
        for expansion, (offset, length) in zip(expansions, placed.spans, strict=True):
            if not length:
                return False
            if expansion[0] in (n1, n2) and offset and out[offset - 1] in (n1, n2):
                return False
            after = offset + length
            if expansion[-1] in (n1, n2) and after < end and out[after] in (n1, n2):
                return False
            if not self._pair_free(expansion):
                return False
        return True

    def _pair_free(self, expansion: Sequence[int]) -> bool:
        """Whether an expansion holds no merged token and no adjacent newline pair."""
        return self._lines(expansion)[0]

    def _lines(self, expansion: Sequence[int]) -> tuple[bool, tuple[int, ...], bool]:
        """Whether an expansion is pair-free, the indices of its ``\\n``/``\\n\\n``
        tokens, and whether it holds ``<start_of_image>`` (memoized per expansion object:
        the family's expansions are shared tuples)."""
        found = self._pairs.get(id(expansion))
        if found is not None and found[0] is expansion:
            return found[1:]
        n1, n2, n3, n4 = self.newlines
        tokens = list(expansion)
        lines = sorted([*_positions(tokens, n1), *_positions(tokens, n2)])
        free = n3 not in tokens and n4 not in tokens and not _adjacent(lines)
        # The entry holds the expansion, so its id is not reused while it is kept.
        entry = (expansion, free, tuple(lines), self.boi in tokens)
        return remember(self._pairs, id(expansion), entry, RUN_ENTRIES)[1:]

    def _find(self, ids: list[int], expansions: Sequence[Sequence[int]]
              ) -> list[tuple[int, int]]:
        """``Gemma3MultiModalProcessor._find_mm_placeholders``: each expansion in turn, in
        the prompt with merged newlines split back, at the index of its first token; the
        search stops at the first image not found."""
        n1, n2, n3, n4 = self.newlines
        merged = sorted([*_positions(ids, n3), *_positions(ids, n4)])
        if not merged:  # nothing merged: the prompt is its own split
            return _search(ids, (), expansions)
        # The split prompt, built by slices: each merged token becomes its two halves.
        split: list[int] = []
        previous = 0
        for at in merged:
            split += ids[previous:at]
            split += (n1, n2) if ids[at] == n3 else (n2, n2)
            previous = at + 1
        split += ids[previous:]
        # Where each merged token starts in the split prompt: a split index s comes from
        # the prompt's index s - (merged tokens starting before s).
        return _search(split, tuple(at + k for k, at in enumerate(merged)), expansions)


def _adjacent(positions: list[int]) -> bool:
    """Whether two of the sorted ``positions`` are neighbours."""
    return any(b == a + 1 for a, b in pairwise(positions))


def _positions(ids: list[int], token: int) -> list[int]:
    """Every index of ``token`` in ``ids`` (counted, then found by ``list.index``: no
    exception raised, which costs more than the scans on a short prompt)."""
    out: list[int] = []
    at = -1
    for _ in range(ids.count(token)):
        at = ids.index(token, at + 1)
        out.append(at)
    return out


def _search(split: list[int], starts: Sequence[int], expansions: Sequence[Sequence[int]]
            ) -> list[tuple[int, int]]:
    """vLLM's ``_iter_placeholders``: each expansion in turn from where the previous one
    ended, at its index in the unsplit prompt (``starts``: where each merged token starts
    in ``split``); stops at the first not found."""
    spans: list[tuple[int, int]] = []
    i = 0
    for expansion in expansions:
        want = expansion if isinstance(expansion, list) else list(expansion)
        size = len(want)
        while True:
            try:
                i = split.index(want[0], i, max(i, len(split) - size + 1))
            except ValueError:
                return spans
            if split[i:i + size] == want:
                spans.append((i - bisect_left(starts, i), size))
                i += size
                break
            i += 1
    return spans
