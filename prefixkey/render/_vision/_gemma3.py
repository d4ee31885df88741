"""Gemma 3 (``Gemma3ForConditionalGeneration``): vLLM 0.31's image expansion.

vLLM's ``gemma3_mm`` processor replaces each ``<start_of_image>`` of the prompt
(``PromptReplacement`` on the ``boi_token``'s id, items in order) by the tokens of
``processor.full_image_sequence`` — ``"\\n\\n<start_of_image>"``, ``image_seq_length``
(``processor_config.json``) ``<image_soft_token>``s, ``"<end_of_image>\\n\\n"`` — or, when
pan-and-scan crops the image, by the tokens of ``"Here is the original image {seq} and
here are some crops to help you see better {seq} {seq}…"`` (one ``{seq}`` per crop),
each encoded by the tokenizer without special tokens. The number of crops is
``Gemma3ProcessingInfo.get_num_crops`` over the loaded image's size and the merged
images kwargs: ``Gemma3ProcessorKwargs``' defaults, then ``--mm-processor-kwargs``, then
the request's (transformers' ``_merge_kwargs``: flat keys, or an ``images_kwargs`` dict).

After the replacements, the whole prompt's newline tokens are merged as the tokenizer
would have produced them (``\\n``+``\\n\\n`` → ``\\n\\n\\n``, then ``\\n\\n``+``\\n`` →
``\\n\\n\\n``, then ``\\n\\n``+``\\n\\n`` → ``\\n\\n\\n\\n``, each a left-to-right pass), and
each image's placeholder is found again in the prompt with those merged tokens split
back (``_find_mm_placeholders``): its offset is the index of the (possibly merged) token
where its replacement starts, its length the replacement's own length.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["Gemma3Images", "num_crops", "replace_token_matches"]

#: ``Gemma3ProcessorKwargs._defaults["images_kwargs"]`` (transformers 5.17) that the crop
#: count reads.
_PAS_DEFAULTS: Final[Mapping[str, Any]] = {
    "do_pan_and_scan": False,
    "pan_and_scan_min_crop_size": 256,
    "pan_and_scan_max_num_crops": 4,
    "pan_and_scan_min_ratio_to_activate": 1.2,
}


def num_crops(width: int, height: int, kwargs: Mapping[str, Any]) -> int:
    """``Gemma3ProcessingInfo.get_num_crops``: the pan-and-scan crops of an image (0: none)."""
    if not kwargs["do_pan_and_scan"]:
        return 0
    min_crop = kwargs["pan_and_scan_min_crop_size"]
    max_crops = kwargs["pan_and_scan_max_num_crops"]
    min_ratio = kwargs["pan_and_scan_min_ratio_to_activate"]
    if width >= height:
        if width / height < min_ratio:
            return 0
        crops_w = min(int(math.floor(width / min_crop)), int(math.floor(width / height + 0.5)))
        crops_w = min(max_crops, max(2, crops_w))
        crops_h = 1
    else:
        if height / width < min_ratio:
            return 0
        crops_h = min(int(math.floor(height / min_crop)), int(math.floor(height / width + 0.5)))
        crops_h = min(max_crops, max(2, crops_h))
        crops_w = 1
    if min(int(math.ceil(width / crops_w)), int(math.ceil(height / crops_h))) < min_crop:
        return 0
    return int(crops_w * crops_h)


def replace_token_matches(ids: list[int], match: Sequence[int], new: Sequence[int]) -> list[int]:
    """vLLM's ``replace_token_matches``: each non-overlapping match, left to right."""
    first, size = match[0], len(match)
    out: list[int] = []
    start = 0
    i = 0
    last = len(ids) - size
    while i <= last:
        try:
            i = ids.index(first, i, last + 1)
        except ValueError:
            break
        if ids[i:i + size] == match:
            out += ids[start:i]
            out += new
            i = start = i + size
        else:
            i += 1
    out += ids[start:]
    return out


@dataclass(frozen=True, slots=True)
class Gemma3Images:
    """One folder's Gemma 3 image facts, bound once."""

    boi_id: int
    #: ``\\n``, ``\\n\\n``, ``\\n\\n\\n``, ``\\n\\n\\n\\n``'s ids.
    newlines: tuple[int, int, int, int]
    boi_token: str
    #: ``processor.full_image_sequence``.
    full_image_sequence: str
    #: The server's ``--mm-processor-kwargs`` (merged under each request's).
    server_kwargs: Mapping[str, Any]

    def crops(self, width: int, height: int, request_kwargs: Mapping[str, Any]) -> int:
        return num_crops(width, height, self.merged_kwargs(request_kwargs))

    def merged_kwargs(self, request_kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The images kwargs the crop count reads, as ``_merge_kwargs`` gives them."""
        passed = {**self.server_kwargs, **request_kwargs}
        merged = dict(_PAS_DEFAULTS)
        nested = passed.get("images_kwargs")
        for key in _PAS_DEFAULTS:
            if isinstance(nested, Mapping) and key in nested:
                merged[key] = nested[key]
            elif key in passed:
                merged[key] = passed[key]
        return merged

    def replacement_text(self, crops: int) -> str:
        if crops == 0:
            text = self.boi_token
        else:
            text = (f"Here is the original image {self.boi_token} and here are some crops "
                    "to help you see better " + " ".join([self.boi_token] * crops))
        return text.replace(self.boi_token, self.full_image_sequence)

    def apply(self, prompt: list[int], replacements: Sequence[list[int]]
              ) -> tuple[list[int], list[tuple[int, int]]] | None:
        """The prompt after the replacements and newline merging, and each image's
        (offset, length); None when the prompt has fewer ``<start_of_image>`` than images
        (vLLM then falls back to text matching, which fails)."""
        out: list[int] = []
        start = 0
        for replacement in replacements:
            try:
                at = prompt.index(self.boi_id, start)
            except ValueError:
                return None
            out += prompt[start:at]
            out += replacement
            start = at + 1
        out += prompt[start:]
        n1, n2, n3, n4 = self.newlines
        out = replace_token_matches(out, (n1, n2), (n3,))
        out = replace_token_matches(out, (n2, n1), (n3,))
        out = replace_token_matches(out, (n2, n2), (n4,))
        return out, self._placeholders(out, replacements)

    def _placeholders(self, ids: list[int], replacements: Sequence[list[int]]
                      ) -> list[tuple[int, int]]:
        n1, n2, n3, n4 = self.newlines
        split: list[int] = []
        origin: list[int] = []
        for index, token in enumerate(ids):
            parts = (n1, n2) if token == n3 else (n2, n2) if token == n4 else (token,)
            split += parts
            origin += [index] * len(parts)
        found: list[tuple[int, int]] = []
        i = 0
        for replacement in replacements:
            size = len(replacement)
            while i + size <= len(split):
                if split[i] == replacement[0] and split[i:i + size] == replacement:
                    found.append((origin[i], size))
                    i += size
                    break
                i += 1
            else:
                break
        return found


def gemma3_images(config: Mapping[str, Any], processor_config: Mapping[str, Any],
                  vocab: Mapping[str, int], special: Callable[[str], str],
                  server_kwargs: Mapping[str, Any]) -> Gemma3Images:
    """Bind a folder's facts: ``special(name)`` is the tokenizer's ``boi_token`` etc."""
    boi, eoi, image = special("boi_token"), special("eoi_token"), special("image_token")
    seq_len = int(processor_config.get("image_seq_length", 256))
    return Gemma3Images(
        boi_id=vocab[boi],
        newlines=(vocab["\n"], vocab["\n\n"], vocab["\n\n\n"], vocab["\n\n\n\n"]),
        boi_token=boi,
        full_image_sequence=f"\n\n{boi}{image * seq_len}{eoi}\n\n",
        server_kwargs=dict(server_kwargs),
    )
