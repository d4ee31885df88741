"""``PythonBackend``'s rules the reproduced Python tokenizers share (transformers 5.17).

``PythonBackend.tokenize`` splits the text on the added tokens (the longest match at the
leftmost position) and lets an added token with ``lstrip``/``rstrip`` strip the
whitespace of its neighbours (Python's ``str.rstrip``/``str.lstrip``, whose whitespace is
not Rust's: ``\\x1c`` is stripped); several classes read a flat vocabulary file;
``prepare_for_model`` truncates before the special tokens are added, keeping room for them.
render/_python_tokenizer.py (byte, code point and vocabulary classes) and
render/_python_spm.py (SentencePiece classes) build on these.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from ._errors import ModelFolderError, RenderUnsupportedError
from ._hf_python import Added

__all__ = ["prepare_for_model", "read_vocab", "split_added"]


def split_added(splitter: re.Pattern[str] | None, by_content: Mapping[str, Added],
                text: str) -> list[str]:
    """``PythonBackend.tokenize``'s split: the text at every odd index is a token of
    ``splitter``; an added token with ``lstrip``/``rstrip`` strips its neighbours."""
    tokens = splitter.split(text) if splitter else [text]
    tokens = [t for t in tokens if t is not None]
    for i, token in enumerate(tokens):
        added = by_content.get(token) if i % 2 else None
        if added is None:
            continue
        if added.rstrip and i + 1 < len(tokens) and tokens[i + 1]:
            tokens[i + 1] = tokens[i + 1].lstrip()
        if added.lstrip and i > 0 and tokens[i - 1]:
            tokens[i - 1] = tokens[i - 1].rstrip()
    return tokens


def read_vocab(tokenizer_path: Path, codec_class: str, name: str, *,
               lines: bool = False) -> dict[str, int]:
    """A folder's flat ``{token: id}`` vocabulary (a JSON object, or a text file by line);
    ``lines``: as ``load_vocab`` reads vocab.txt (``readlines``, each line's line break
    stripped, a later duplicate's index winning)."""
    path = tokenizer_path / name
    try:
        text = path.read_text("utf-8")
        if lines:
            tokens = text.split("\n")
            vocab = {t: i for i, t in enumerate(tokens[:-1] if tokens[-1] == "" else tokens)}
        else:
            vocab = (json.loads(text) if name.endswith(".json") else
                     {line.strip(): i for i, line in enumerate(text.splitlines())})
    except (OSError, ValueError) as exc:
        raise ModelFolderError(name, f"cannot be read: {exc}") from None
    if not isinstance(vocab, dict) or not all(
            isinstance(k, str) and type(v) is int and v >= 0 for k, v in vocab.items()):
        raise RenderUnsupportedError(name, "only a flat {token: id} vocabulary is "
                                     f"reproduced for {codec_class}")
    return vocab


def prepare_for_model(ids: list[int], wrap: Callable[[list[int]], list[int]], *,
                      add_special_tokens: bool, max_length: int, side: str) -> list[int]:
    """``prepare_for_model``: room is left for the special tokens ``wrap`` adds, the ids
    are truncated to it on ``side``, then the special tokens are added."""
    room = max_length - (len(wrap([])) if add_special_tokens else 0)
    if len(ids) > room:  # truncate_sequences drops len(ids) - room (all, room < 0)
        ids = ids[len(ids) - room:] if side == "left" else ids[:max(room, 0)]
    return wrap(ids) if add_special_tokens else ids
