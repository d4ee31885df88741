"""A sentence-transformers folder as vLLM 0.29-0.33 reads it when it renders.

Embedding folders (bge, e5, gte, all-MiniLM, Qwen3-Embedding, ...) hold ``modules.json``
and ``sentence_bert_config.json`` beside the model's own files. vLLM reads three facts
from them that change what its render server answers for ``/v1/completions`` and
``/v1/chat/completions`` (the only bodies it renders: it serves no pooling endpoint,
its one supported task being ``render``):

- **The runner.** ``modules.json`` naming a Pooling module makes ``--runner auto`` pool
  whatever the architecture (``ModelConfig._get_default_runner_type`` asks
  ``get_pooling_config`` first: "Some Sentence Transformers models use *ForCausalLM
  archs"), so the tokenizer truncates on the right (render/_runner.py).
- **The context length.** The encoder config (``get_sentence_transformer_tokenizer_config``:
  the first of the ``sentence_*_config.json`` files the model folder holds, read whether
  or not ``modules.json`` is there) replaces the derived length with its
  ``max_seq_length`` (``_get_and_verify_max_len``), when it has the keys the release asks
  for (0.29-0.31 both ``max_seq_length`` and ``do_lower_case``, 0.32 on
  ``max_seq_length``: ``RenderEra.st_encoder_keys``).
- **The special tokens.** With the tokenizer folder's encoder config saying
  ``do_lower_case``, vLLM's ``get_tokenizer`` adds each named special token lowercased as
  a special token (``tokenizer.add_special_tokens``): ``[CLS]`` stays id 101 in the
  post-processor, but a prompt's ``[cls]`` becomes a new id after the vocabulary, and the
  chat template sees the lowercased names (render/_tokenizer.py
  ``HfTokenizer.with_lowercased_specials``). A Python word-piece class adds them through
  its own ``_add_tokens``, and its ``cls_token_id`` then follows the new token
  (render/_python_tokenizer.py ``PythonTokenizer.with_lowercased_specials``).

The prompt itself is not lowercased on these endpoints: ``do_lower_case`` reaches the
text only through the pooling endpoints' and the offline entry points' tokenize
parameters, not through the chat and completions bodies' ``build_tok_params``. Pooling,
Normalize and Dense module configs decide only the pooler and the embedding size.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ._errors import ModelFolderError, RenderUnsupportedError

__all__ = ["SentenceTransformers", "read_sentence_transformers", "refuse_python_lowercase"]

#: The encoder config files vLLM looks for, in its order (transformers_utils/config.py).
ENCODER_FILES: Final = (
    "sentence_bert_config.json", "sentence_roberta_config.json",
    "sentence_distilbert_config.json", "sentence_camembert_config.json",
    "sentence_albert_config.json", "sentence_xlm-roberta_config.json",
    "sentence_xlnet_config.json",
)


@dataclass(frozen=True, slots=True)
class SentenceTransformers:
    """What a folder's sentence-transformers files change about rendering."""

    #: ``modules.json`` names a Pooling module: vLLM's ``--runner auto`` pools.
    pooling: bool = False
    #: The model folder's encoder config's ``max_seq_length`` (the context length).
    max_seq_length: int | None = None
    #: The tokenizer folder's encoder config says ``do_lower_case``.
    lower_specials: bool = False


def _json(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError) as exc:
        raise ModelFolderError(path.name, f"cannot be read as JSON: {exc}") from None


def _pools(folder: Path, pooling_modules: frozenset[str]) -> bool:
    """Whether ``get_pooling_config`` finds a Pooling module in ``modules.json``."""
    path = folder / "modules.json"
    if not path.is_file():
        return False
    modules = _json(path)
    if not isinstance(modules, list) or not all(
            isinstance(m, dict) and "type" in m for m in modules):
        # vLLM reads item["type"] of each item: anything else fails its server's start.
        raise ModelFolderError("modules.json", "must be a list of modules, each with a "
                               "'type' (vLLM's server fails to start reading it otherwise)")
    pooling = next((m for m in modules if m["type"] in pooling_modules), None)
    if pooling is not None and not isinstance(pooling.get("path"), str):
        raise ModelFolderError("modules.json", "its Pooling module needs a 'path' (vLLM "
                               "reads <path>/config.json; its server fails to start otherwise)")
    return pooling is not None


def _encoder_config(folder: Path, keys: tuple[str, ...]) -> dict[str, Any] | None:
    """``get_sentence_transformer_tokenizer_config`` over a local folder: the first
    non-empty encoder config file, kept when it has every key of ``keys``."""
    for name in ENCODER_FILES:
        if (folder / name).is_file():
            value = _json(folder / name)
            if value:
                if not isinstance(value, dict):
                    raise ModelFolderError(name, "must hold a JSON object")
                return value if all(k in value for k in keys) else None
    return None


def read_sentence_transformers(model: Path, tokenizer: Path, *,
                               pooling_modules: frozenset[str],
                               encoder_keys: tuple[str, ...]) -> SentenceTransformers:
    """The folders' sentence-transformers facts (the release's module types and keys)."""
    encoder = _encoder_config(model, encoder_keys)
    length = None if encoder is None else encoder.get("max_seq_length")
    if encoder is not None and (not isinstance(length, int) or isinstance(length, bool)
                                or length <= 0):
        raise ModelFolderError(
            "sentence_bert_config.json", f"max_seq_length must be a positive integer, got "
            f"{length!r} (vLLM takes it as the context length)")
    tokenizer_encoder = (encoder if tokenizer == model
                         else _encoder_config(tokenizer, encoder_keys))
    return SentenceTransformers(
        pooling=_pools(model, pooling_modules), max_seq_length=length,
        lower_specials=bool(tokenizer_encoder and tokenizer_encoder.get("do_lower_case")))


def refuse_python_lowercase(tokenizer_class: str) -> None:
    """A Python tokenizer class adds special tokens its own way (``_add_tokens``, its
    ``get_vocab()``): reproduced for the word-piece classes only
    (render/_python_tokenizer.py ``PythonTokenizer.with_lowercased_specials``)."""
    raise RenderUnsupportedError("sentence_bert_config.json", (
        f"do_lower_case makes vLLM add the {tokenizer_class} tokenizer's special tokens "
        "lowercased, which that Python tokenizer class does its own way; not reproduced "
        "but for the word-piece classes (RoCBert, BertJapanese, ProphetNet)"))
