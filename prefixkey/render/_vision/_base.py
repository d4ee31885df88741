"""What a vision family is: its inputs, its answer, and the placement every family shares.

See the package docstring (prefixkey/render/_vision/__init__.py) for the contract.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final, TypeVar

from ...core._checks import int_refusal
from .._errors import ModelFolderError, RenderRequestError, RenderUnsupportedError

__all__ = ["RUN_ENTRIES", "ImageSize", "Placed", "VisionFamily", "VisionFolder", "remember",
           "replace_markers"]

#: The per-prompt limit vLLM applies to a modality no ``--limit-mm-per-prompt`` names
#: (``MultiModalConfig.get_limit_per_prompt``).
DEFAULT_LIMIT: Final = 999
#: The most entries a family's memo keeps before it starts afresh: a bound on memory
#: (sizes and tile grids repeat in real traffic; a memo never changes a result). Memos
#: of whole token runs keep fewer (RUN_ENTRIES: a run is up to some 10,000 tokens).
MEMO_ENTRIES: Final = 512
RUN_ENTRIES: Final = 64

_K = TypeVar("_K")
_V = TypeVar("_V")


def remember(memo: dict[_K, _V], key: _K, value: _V, limit: int = MEMO_ENTRIES) -> _V:
    """Store ``value`` in a family's bounded memo (emptied when full) and return it."""
    if len(memo) >= limit:
        memo.clear()
    memo[key] = value
    return value


@dataclass(frozen=True, slots=True)
class ImageSize:
    """An image's size as vLLM's loader hands it to the processor (EXIF orientation applied)."""

    width: int
    height: int


@dataclass(frozen=True, slots=True)
class VisionFolder:
    """The folder's values a family reads, once, when it is built."""

    #: ``config.json``.
    config: Mapping[str, Any]
    #: ``preprocessor_config.json`` (the image processor's), ``{}`` when absent.
    preprocessor: Mapping[str, Any]
    #: ``processor_config.json``, ``{}`` when absent.
    processor: Mapping[str, Any]
    #: The tokenizer's id of one token's text (added tokens included), None if unknown.
    token_id: Callable[[str], int | None]
    #: The tokenizer's ids of a text, without special tokens (``add_special_tokens=False``).
    encode: Callable[[str], list[int]]

    def token(self, text: str, source: str) -> int:
        """The id of a token a family needs; ``source`` says where its text came from."""
        found = self.token_id(text)
        if found is None:
            raise ModelFolderError("tokenizer", f"has no token {text!r} ({source})")
        return found

    def number(self, where: Mapping[str, Any], key: str, file: str, *,
               default: int | None = None) -> int:
        """A positive int field of a config (``file`` names it in errors)."""
        value = where.get(key, default)
        refusal = int_refusal(value)
        if refusal is not None:
            raise ModelFolderError(f"{file} {key}", refusal)
        return value  # type: ignore[no-any-return]  # int_refusal checked it

    def processor_type(self, family: str, verified: frozenset[str]) -> str:
        """The image processor ``preprocessor_config.json`` names, if ``family`` verified it."""
        kind = self.preprocessor.get("image_processor_type")
        if kind not in verified:
            raise RenderUnsupportedError(
                "preprocessor_config.json image_processor_type",
                f"{kind!r} is not verified for {family} (verified: "
                f"{', '.join(sorted(verified))}): render it with vLLM's render endpoint")
        return str(kind)


@dataclass(frozen=True, slots=True)
class Placed:
    """The prompt after a family's prompt updates, and each image's span in it."""

    token_ids: list[int]
    #: ``(offset, length)`` per image, in the body's order: vLLM's ``PlaceholderRange``.
    spans: list[tuple[int, int]]


class VisionFamily(ABC):
    """One model family's image processor, bound to a folder (see the package docstring)."""

    #: The family's name in docs and errors ("Qwen2-VL").
    name: ClassVar[str]
    #: ``mm_processor_kwargs`` names this family honours as vLLM does; any other is refused.
    kwargs: ClassVar[frozenset[str]] = frozenset()
    #: ``get_supported_mm_limits()["image"]``: the model's own cap (None: only the server's).
    limit: ClassVar[int | None] = None
    #: The vLLM releases whose answers this family was verified against.
    releases: ClassVar[frozenset[str]] = frozenset({"0.31.0"})
    #: The modalities ``get_supported_mm_limits`` names, where verified: a part of another
    #: (audio, video) is vLLM's 400 "At most 0 audio(s) …". None: such a part is refused
    #: as not reproduced.
    modalities: ClassVar[frozenset[str] | None] = None

    #: The token ids an image's expansion replaces (vLLM's ``PromptReplacement`` target).
    marker: tuple[int, ...] = ()

    def __init__(self, folder: VisionFolder) -> None:
        self.folder = folder

    def placeholder(self, index: int) -> str | None:
        """The text an image leaves in 'string' content format (``get_placeholder_str``).

        ``index`` counts the body's images from 1. None: the image leaves no text.
        """
        return None

    @abstractmethod
    def expansion(self, size: ImageSize, kwargs: Mapping[str, Any]) -> Sequence[int]:
        """The token ids that replace one image's marker; a pure function of its inputs.

        ``kwargs`` are the processor kwargs in force (``--mm-processor-kwargs`` merged
        with the body's), already checked against :attr:`kwargs`.
        """

    def place(self, token_ids: list[int], expansions: Sequence[Sequence[int]]) -> Placed:
        """The prompt after the updates; by default each marker replaced in order."""
        return replace_markers(token_ids, self.marker, expansions)

    def check_request_kwargs(self, kwargs: Mapping[str, Any]) -> None:
        """What the processor says of the body's own ``mm_processor_kwargs`` once its
        images are loaded (they passed :meth:`check_kwargs`); by default nothing."""
        return None

    def check_kwargs(self, kwargs: Mapping[str, Any], field: str) -> None:
        """Refuse kwargs this family does not reproduce (override to check values too)."""
        for name in kwargs:
            if name not in self.kwargs:
                honoured = ", ".join(sorted(self.kwargs)) or "none"
                raise RenderUnsupportedError(
                    f"{field}.{name}", f"{self.name}: this processor kwarg is not reproduced "
                    f"(reproduced: {honoured}); render it with vLLM's render endpoint")


def replace_markers(token_ids: list[int], marker: Sequence[int],
                    expansions: Sequence[Sequence[int]]) -> Placed:
    """vLLM's token-level ``PromptReplacement``: the i-th match of ``marker`` becomes the
    i-th expansion, matches taken left to right without overlap; markers past the last
    image stay as they are (``_plan_prompt_updates`` stops when every item is placed)."""
    assert marker, "a family replacing markers must set its marker"  # a family's bug
    out: list[int] = []
    spans: list[tuple[int, int]] = []
    width = len(marker)
    first = marker[0]
    start = 0
    n = len(token_ids)
    for expansion in expansions:
        at = _find(token_ids, marker, first, width, start, n)
        if at < 0:
            # vLLM then matches the markers in the decoded text instead
            # (_apply_prompt_updates_via_text). A family's marker is a special token, which
            # the tokenizer always splits out of text, so the decoded prompt holds no more of
            # it either: the fallback fails on this item, an AssertionError vLLM answers 500
            # (seen for LLaVA's and Gemma 3's 'string' content format, whose templates drop
            # string content's images).
            raise RenderRequestError(
                "messages", "Failed to apply prompt replacement for "
                f"mm_items['image'][{len(spans)}]", status=500)
        out.extend(token_ids[start:at])
        spans.append((len(out), len(expansion)))
        out.extend(expansion)
        start = at + width
    out.extend(token_ids[start:])
    return Placed(out, spans)


def _find(ids: list[int], marker: Sequence[int], first: int, width: int, start: int,
          n: int) -> int:
    while True:
        try:
            at = ids.index(first, start)
        except ValueError:
            return -1
        if width == 1 or (at + width <= n and ids[at:at + width] == list(marker)):
            return at
        start = at + 1
