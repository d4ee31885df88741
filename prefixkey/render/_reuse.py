"""Prompt ids a chat body reuses from a prefill stage (``kv_transfer_params``), per era.

Disaggregated serving forwards the prefill stage's ids in
``kv_transfer_params.prompt_token_ids``; vLLM then skips templating and feeds them
to the engine. How it takes them is a render era's ``reused_ids``
(prefixkey/render/_eras.py): before 0.32 an empty list is no ids; 0.32 ignores them
beside ``echo`` or a non-text content part and answers 400 for anything but a
non-empty list of non-negative ints inside the vocabulary (its tokenizer's largest id or
config.json's ``vocab_size``, whichever is larger).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from ..core import check_token_ids
from ._eras import ReusedIds
from ._errors import RenderRequestError, RenderUnsupportedError
from ._fields import TokenizeParams

__all__ = ["checked_reused_ids", "reused_prompt_ids", "text_vocab_size"]

_FIELD: Final = "kv_transfer_params.prompt_token_ids"
# vLLM 0.32 renderers/chat_utils.py: the part types that carry no multimodal data, and
# the keys that make a part multimodal whatever its type.
_TEXT_PART_TYPES: Final = frozenset(
    {"text", "input_text", "output_text", "refusal", "thinking", "tool_reference"})
_MEDIA_PART_KEYS: Final = frozenset(
    {"input_image", "image_url", "image_embeds", "audio_embeds", "video_embeds",
     "prompt_embeds", "image_pil", "audio_url", "input_audio", "video_url"})


def _has_non_text_part(messages: Any) -> bool:
    """vLLM 0.32's ``has_non_text_content``: only list contents are looked at."""
    if not isinstance(messages, list):
        return False
    for message in messages:
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(content, list):
            continue
        for part in content:
            if isinstance(part, Mapping):
                kind = part.get("type", "text")
                if (any(key in part for key in _MEDIA_PART_KEYS) or not isinstance(kind, str)
                        or kind not in _TEXT_PART_TYPES):
                    return True
    return False


def text_vocab_size(config: Mapping[str, Any]) -> Any:
    """config.json's ``vocab_size`` as vLLM reads it (the text config's, when nested)."""
    text = config.get("text_config")
    return (text if isinstance(text, Mapping) else config).get("vocab_size")


def reused_prompt_ids(raw: Any, rule: ReusedIds, body: Mapping[str, Any],
                      vocab_size: Any, *, max_token_id: Callable[[], int] | None = None,
                      messages_checked: bool = True) -> list[int] | None:
    """The ids a chat body reuses, or None to render its messages.

    ``raw`` is ``kv_transfer_params.prompt_token_ids`` (None when absent);
    ``vocab_size`` is config.json's; ``max_token_id`` the tokenizer's largest id as vLLM
    computes it (render/_tokenizer.py ``HfTokenizer.max_token_id``; None: not reproduced
    for this tokenizer). ``messages_checked`` is False on the Harmony path, where vLLM
    0.32 does not look at the messages' parts.
    """
    if raw is None:
        return None
    if rule == "lenient":
        # The ids go as they are into the engine request's token_ids (pydantic, lax).
        if isinstance(raw, str) and raw and not raw.isdigit():
            # Taken character by character: one that is no digit fails validation.
            raise RenderRequestError(_FIELD, "Input should be a valid integer, unable to "
                                     "parse string as an integer")
        if not isinstance(raw, list):
            raise RenderUnsupportedError(_FIELD, "only a list of token ids is reproduced")
        ids = [int(x) if type(x) is bool else x for x in raw]  # lax: true is 1
        if any(type(x) is int and x < 0 for x in ids):
            raise RenderRequestError(_FIELD, "token_ids must not contain negative values")
        return ids or None
    if body.get("echo") is True or (messages_checked and _has_non_text_part(
            body.get("messages"))):
        return None  # vLLM renders the messages instead
    if body.get("echo") not in (None, False):
        raise RenderUnsupportedError("echo", "a non-bool echo beside reused ids is not "
                                     "reproduced")
    if not isinstance(raw, list) or not raw or any(type(x) is not int or x < 0 for x in raw):
        raise RenderRequestError(_FIELD, "`kv_transfer_params['prompt_token_ids']` must be a "
                                 "non-empty list of non-negative integers.")
    # vLLM admits ids up to max(its tokenizer's largest id, vocab_size - 1)
    # (renderers/base.py ``validate_token_ids``).
    top = max(raw)
    if type(vocab_size) is int and top <= vocab_size - 1:
        return raw
    if max_token_id is None:
        raise RenderUnsupportedError(_FIELD, "ids past config.json's vocab_size: vLLM checks "
                                     "them against its tokenizer's largest id too, which is "
                                     "not reproduced for this tokenizer")
    if top <= max_token_id():
        return raw
    if type(vocab_size) is not int:
        raise RenderUnsupportedError(_FIELD, "ids past the tokenizer's largest id, and "
                                     "config.json gives no vocab_size (vLLM takes its config "
                                     "class's default, not known here)")
    raise RenderRequestError(_FIELD, f"Token id {top} is out of vocabulary")


def checked_reused_ids(reused: list[int], params: TokenizeParams, *,
                       images: bool) -> list[int]:
    """Reused ids (:func:`reused_prompt_ids`) as the engine takes them: each a token id,
    their length within ``get_max_tokens``' bound; beside images (``images``: the
    request gives their placeholders) not reproduced."""
    if images:
        raise RenderUnsupportedError(_FIELD, "reused prompt ids with images are not "
                                     "reproduced")
    checked = check_token_ids(reused, field=_FIELD)
    params.check_reused_length(len(checked))
    return list(checked)
