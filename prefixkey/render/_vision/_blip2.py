"""BLIP-2: ``num_query_tokens`` image tokens inserted before the whole prompt.

vLLM 0.31 (``model_executor/models/blip2.py``): ``PromptInsertion`` at
``PromptIndexTargets.start()`` of ``num_query_tokens`` copies of ``image_token_index``
(``config.json``), whatever the image's size; one image per prompt
(``get_supported_mm_limits``); ``get_placeholder_str`` is None, so an image leaves no
text in 'string' content format.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from ._base import ImageSize, Placed, VisionFamily, VisionFolder

__all__ = ["Blip2"]


class Blip2(VisionFamily):
    """BLIP-2 (``Blip2ForConditionalGeneration``)."""

    name: ClassVar[str] = "BLIP-2"
    limit: ClassVar[int | None] = 1

    def __init__(self, folder: VisionFolder) -> None:
        super().__init__(folder)
        config = folder.config
        self.tokens = [folder.number(config, "image_token_index", "config.json")
                       ] * folder.number(config, "num_query_tokens", "config.json")

    def expansion(self, size: ImageSize, kwargs: Mapping[str, Any]) -> Sequence[int]:
        return self.tokens

    def place(self, token_ids: list[int], expansions: Sequence[Sequence[int]]) -> Placed:
        (expansion,) = expansions  # limit 1: a second image is refused before
        return Placed([*expansion, *token_ids], [(0, len(expansion))])
