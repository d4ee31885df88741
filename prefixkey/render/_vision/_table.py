"""Which family expands a folder's images: ``config.json`` architectures → families.

One row per architecture. :data:`FAMILIES` are verified (their vectors replay in
tests/vision/); :data:`UNVERIFIED` are vision architectures vLLM 0.31 serves whose
placeholders are not reproduced yet: an image for them is a RenderUnsupportedError
naming the render endpoint. A family moves from the second table to the first with
its module and its vectors.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from ._base import VisionFamily
from ._blip2 import Blip2
from ._deepseek_v41 import DeepseekV41Vision
from ._gemma3 import Gemma3
from ._internvl import InternVL
from ._llama4 import Llama4
from ._llava import Llava, LlavaNext, LlavaOnevision
from ._pixtral import Pixtral
from ._qwen import Qwen2_5VL, Qwen2VL, Qwen3VL, Qwen3VLMoe

__all__ = ["FAMILIES", "MISTRAL_FORMAT", "UNVERIFIED", "family_architecture"]

FAMILIES: Final[Mapping[str, type[VisionFamily]]] = MappingProxyType({
    "Blip2ForConditionalGeneration": Blip2,
    # Its images reach the prompt through the deepseek_v41 encoder (render/_deepseek_v41.py).
    "DeepseekV41ForCausalLM": DeepseekV41Vision,
    "Qwen2VLForConditionalGeneration": Qwen2VL,
    "Qwen2_5_VLForConditionalGeneration": Qwen2_5VL,
    "Qwen3VLForConditionalGeneration": Qwen3VL,
    "Qwen3VLMoeForConditionalGeneration": Qwen3VLMoe,
    "Gemma3ForConditionalGeneration": Gemma3,
    "LlavaForConditionalGeneration": Llava,
    "LlavaNextForConditionalGeneration": LlavaNext,
    "LlavaOnevisionForConditionalGeneration": LlavaOnevision,
    "InternVLForConditionalGeneration": InternVL,
    "Llama4ForConditionalGeneration": Llama4,
    # Mistral's format (--tokenizer-mode mistral, params.json): render/_mistral.py.
    "PixtralForConditionalGeneration": Pixtral,
})

#: Families whose images only the mistral mode renders (render/_mistral.py): their
#: processor is mistral_common's (vLLM: "This model requires `--tokenizer-mode mistral`").
MISTRAL_FORMAT: Final = frozenset({"PixtralForConditionalGeneration"})

#: Architecture → (family, why it is refused).
UNVERIFIED: Final[Mapping[str, tuple[str, str]]] = MappingProxyType({
    "InternVLChatModel": ("InternVL (remote-code layout)",
                         "vLLM 0.31 needs the Hub's remote-code processor for it"),
    "Mistral3ForConditionalGeneration": ("Mistral Small 3.x (Hugging Face format)",
                                         "not yet verified"),
    "Phi4MMForCausalLM": ("Phi-4-multimodal",
                          "vLLM 0.31 serves it only with the Hub's remote-code processor"),
})


def family_architecture(config: Mapping[str, Any]) -> str | None:
    """The first of ``config.json``'s architectures that either table names, else None."""
    architectures = config.get("architectures")
    if isinstance(architectures, list):
        for name in architectures:
            if isinstance(name, str) and (name in FAMILIES or name in UNVERIFIED):
                return name
    return None
