"""Qwen2-VL, Qwen2.5-VL and Qwen3-VL: an image becomes its merged patch grid of ``<|image_pad|>``.

vLLM 0.31 (``model_executor/models/qwen2_vl.py``, ``qwen2_5_vl.py``, ``qwen3_vl.py``,
``_get_prompt_updates``; ``qwen3_vl_moe.py`` registers Qwen3-VL's processor and dummy
inputs, only its config class differs) replaces each ``<|image_pad|>`` token of the prompt by
``grid_t * grid_h * grid_w // merge_size**2`` copies of it, where the grid is the
``image_grid_thw`` transformers' ``Qwen2VLImageProcessor`` returns for the image: its
``smart_resize`` to multiples of ``patch_size * merge_size`` within
``[min_pixels, max_pixels]``, divided by ``patch_size`` (``grid_t`` is 1 for an image).
``<|vision_start|>``/``<|vision_end|>`` come from the chat template and stay outside the
item's span. The values are the image processor's (``preprocessor_config.json``:
``patch_size``, ``merge_size``, ``size`` or the legacy top-level ``min_pixels`` /
``max_pixels``; the class defaults 14, 2 and 3136 / 12845056 pixels otherwise).

Processor kwargs (the server's ``--mm-processor-kwargs`` merged with the body's, as
observed on vLLM 0.31's render server): ``min_pixels`` and ``max_pixels`` each replace
their bound of the configured ``size``, alone or together (transformers'
``Qwen2VLImageProcessor`` takes them one by one when vLLM builds it, though its
call-time ``_standardize_kwargs`` takes them only as a pair); a ``size`` kwarg replaces
the bounds whole, over a lone ``min_pixels`` or ``max_pixels``, and without both
``shortest_edge`` and ``longest_edge`` the resize fails (vLLM's 400).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final

from .._errors import ModelFolderError, RenderRequestError, RenderUnsupportedError
from ._base import ImageSize, VisionFamily, VisionFolder

__all__ = ["Qwen2VL", "Qwen2_5VL", "Qwen3VL", "Qwen3VLMoe"]

_PREPROCESSOR: Final = "preprocessor_config.json"
#: transformers' Qwen2VLImageProcessor class defaults (transformers 5.17).
_DEFAULT_PATCH: Final = 14
_DEFAULT_MERGE: Final = 2
_DEFAULT_MIN_PIXELS: Final = 56 * 56
_DEFAULT_MAX_PIXELS: Final = 28 * 28 * 1280
#: The image processors whose resize this module reproduces.
_PROCESSOR_TYPES: Final = frozenset({"Qwen2VLImageProcessor", "Qwen2VLImageProcessorFast"})
#: smart_resize refuses images whose long side exceeds this many times the short one.
_MAX_ASPECT: Final = 200
_IMAGE_PAD: Final = "<|image_pad|>"
_PLACEHOLDER: Final = "<|vision_start|><|image_pad|><|vision_end|>"


def smart_resize(height: int, width: int, factor: int, min_pixels: int,
                 max_pixels: int) -> tuple[int, int]:
    """transformers' ``smart_resize``: the resized (height, width), multiples of ``factor``."""
    if max(height, width) / min(height, width) > _MAX_ASPECT:
        raise RenderRequestError(
            "messages", f"absolute aspect ratio must be smaller than {_MAX_ASPECT}, got "
            f"{max(height, width) / min(height, width)}")
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


class Qwen2VL(VisionFamily):
    """Qwen2-VL (``Qwen2VLForConditionalGeneration``)."""

    name: ClassVar[str] = "Qwen2-VL"
    kwargs: ClassVar[frozenset[str]] = frozenset({"min_pixels", "max_pixels", "size"})

    def __init__(self, folder: VisionFolder) -> None:
        super().__init__(folder)
        pre = folder.preprocessor
        folder.processor_type(self.name, _PROCESSOR_TYPES)
        self.patch = folder.number(pre, "patch_size", _PREPROCESSOR, default=_DEFAULT_PATCH)
        self.merge = folder.number(pre, "merge_size", _PREPROCESSOR, default=_DEFAULT_MERGE)
        self.min_pixels, self.max_pixels = self._bounds(pre)
        self.image_pad = folder.token(_IMAGE_PAD, "the processor's image_token")
        self.marker = (self.image_pad,)

    def _bounds(self, pre: Mapping[str, Any]) -> tuple[int, int]:
        """``Qwen2VLImageProcessor.__init__``: ``size``, then top-level min/max_pixels."""
        size = pre.get("size")
        if size is None:
            low, high = _DEFAULT_MIN_PIXELS, _DEFAULT_MAX_PIXELS
        elif isinstance(size, dict) and {"shortest_edge", "longest_edge"} <= size.keys():
            low, high = size["shortest_edge"], size["longest_edge"]
        else:
            raise ModelFolderError(f"{_PREPROCESSOR} size", f"{size!r} is not a verified "
                                   "shape ({'shortest_edge': …, 'longest_edge': …})")
        if pre.get("min_pixels") is not None:
            low = pre["min_pixels"]
        if pre.get("max_pixels") is not None:
            high = pre["max_pixels"]
        for value, what in ((low, "min_pixels"), (high, "max_pixels")):
            if type(value) is not int or value < 1:
                raise ModelFolderError(f"{_PREPROCESSOR} {what}",
                                       f"must be a positive int, got {value!r}")
        return low, high

    def placeholder(self, index: int) -> str | None:
        return _PLACEHOLDER

    def check_kwargs(self, kwargs: Mapping[str, Any], field: str) -> None:
        super().check_kwargs(kwargs, field)
        for name in ("min_pixels", "max_pixels"):
            value = kwargs.get(name)
            if value is not None and (type(value) is not int or value < 1):
                raise RenderUnsupportedError(f"{field}.{name}", "only a positive int is "
                                             "reproduced")
        size = kwargs.get("size")
        if size is not None and not (
                isinstance(size, dict) and set(size) <= {"shortest_edge", "longest_edge"}
                and all(type(v) is int and v >= 1 for v in size.values())):
            raise RenderUnsupportedError(f"{field}.size", "only {'shortest_edge': int, "
                                         "'longest_edge': int} is reproduced")

    def pixel_bounds(self, kwargs: Mapping[str, Any]) -> tuple[int, int]:
        """The ``[min_pixels, max_pixels]`` the image processor resizes within."""
        low, high, size = kwargs.get("min_pixels"), kwargs.get("max_pixels"), kwargs.get("size")
        if size is not None:
            if low is not None and high is not None:
                raise RenderUnsupportedError(
                    "mm_processor_kwargs.size", "a size together with both min_pixels and "
                    "max_pixels is not reproduced")
            # The call-time size wins over one bound (observed with a server max_pixels).
            if "shortest_edge" not in size or "longest_edge" not in size:
                # The image processor's resize refuses a size without both (a ValueError
                # vLLM answers 400).
                raise RenderRequestError(
                    "mm_processor_kwargs.size", "`size` dict must contain 'shortest_edge' "
                    f"and 'longest_edge' keys but got {size}.")
            return size["shortest_edge"], size["longest_edge"]
        if low is not None and low > (self.max_pixels if high is None else high):
            # vLLM 0.31's render server did not answer such a body within 5 minutes (a
            # configured min_pixels above a given max_pixels it does answer).
            raise RenderUnsupportedError(
                "mm_processor_kwargs.min_pixels", f"min_pixels {low} above max_pixels: "
                "vLLM 0.31 was not seen to answer it")
        return (self.min_pixels if low is None else low,
                self.max_pixels if high is None else high)

    def grid(self, size: ImageSize, kwargs: Mapping[str, Any]) -> tuple[int, int, int]:
        """The image processor's ``image_grid_thw`` for the image: (1, rows, columns)."""
        low, high = self.pixel_bounds(kwargs)
        height, width = smart_resize(size.height, size.width, self.patch * self.merge,
                                     low, high)
        return 1, height // self.patch, width // self.patch

    def count(self, size: ImageSize, kwargs: Mapping[str, Any]) -> int:
        """The image's ``<|image_pad|>`` count: its patch grid, merged."""
        t, h, w = self.grid(size, kwargs)
        return t * h * w // (self.merge * self.merge)

    def expansion(self, size: ImageSize, kwargs: Mapping[str, Any]) -> Sequence[int]:
        return [self.image_pad] * self.count(size, kwargs)


class Qwen2_5VL(Qwen2VL):
    """Qwen2.5-VL (``Qwen2_5_VLForConditionalGeneration``): Qwen2-VL's image path."""

    name: ClassVar[str] = "Qwen2.5-VL"


class Qwen3VL(Qwen2VL):
    """Qwen3-VL (``Qwen3VLForConditionalGeneration``): the same image path, 16-pixel patches
    from its preprocessor config (``Qwen3VLProcessor``'s ``image_token_id``)."""

    name: ClassVar[str] = "Qwen3-VL"


class Qwen3VLMoe(Qwen3VL):
    """Qwen3-VL MoE (``Qwen3VLMoeForConditionalGeneration``): vLLM 0.31 registers it with
    Qwen3-VL's multimodal processor (``Qwen3VLMoeProcessingInfo`` only reads the MoE config
    class), so its images are Qwen3-VL's."""

    name: ClassVar[str] = "Qwen3-VL MoE"
