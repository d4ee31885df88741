"""GPTNeoXJapaneseTokenizer's ``SubWordJapaneseTokenizer`` (transformers 5.17, vLLM 0.31).

models/gpt_neox_japanese/tokenization_gpt_neox_japanese.py reads vocab.txt (each line one
id; a line holding a comma lists the spellings sharing it) and emoji.json. ``tokenize``
writes spaces, line breaks and tabs as ``<SP>``, ``<BR>``, ``<TAB>``, both dashes as
``ー`` and each emoji.json ``emoji`` key as its value, then walks the text: at a ``<``
the longest vocabulary entry of more than two characters that starts there wins, else
among the entries of up to three characters starting there the one of the lowest id; a
character no entry starts is ``<KIGOU>`` (a symbol of the ranges below), ``<U2000U2BFF>``
or its UTF-8 bytes as ``<|byteN|>``. Its ``do_clean_text`` (URLs, dates, prices, … as
placeholders) is refused (render/_hf_python.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Final

from ._errors import ModelFolderError

__all__ = ["SubWordJapanese", "read_subword_japanese"]

#: ``tokenize``'s fixed rewrites, in order.
_REWRITES: Final = ((" ", "<SP>"), ("\u3000", "<SP>"), ("\r\n", "<BR>"), ("\n", "<BR>"),
                    ("\r", "<BR>"), ("\t", "<TAB>"), ("\u2014", "\u30fc"),
                    ("\u2212", "\u30fc"))
#: ``check_symbol``'s two-byte UTF-8 ranges as code points (C2A1-C2BF, C780-C783,
#: CAB9-CBBF, CC80-CDA2), and ``checku2e``'s three-byte one (E28080-E2B07F).
_KIGOU: Final = ((0xA1, 0xBF), (0x1C0, 0x1C3), (0x2B9, 0x2FF), (0x300, 0x362))
_U2000_U2BFF: Final = (0x2000, 0x2BFF)


@dataclass(frozen=True, slots=True)
class SubWordJapanese:
    """The folder's vocabulary (each spelling → its line's id) and emoji rewrites."""

    vocab: Mapping[str, int]
    #: Each line as written (its spellings joined): ``get_vocab()``'s keys.
    raw_vocab: Mapping[str, int]
    emoji: tuple[tuple[str, str], ...]
    maxlen: int

    def tokenize(self, text: str) -> list[str]:
        for old, new in _REWRITES:
            text = text.replace(old, new)
        for old, new in self.emoji:
            text = text.replace(old, new)
        pos = 0
        result: list[str] = []
        while pos < len(text):
            end = min(len(text), pos + self.maxlen + 1) if text[pos] == "<" else pos + 3
            candidates: list[tuple[int, str, int]] = []
            for e in range(end, pos, -1):
                word = text[pos:e]
                if word in self.vocab:
                    if word[0] == "<" and len(word) > 2:
                        candidates = [(self.vocab[word], word, e)]
                        break
                    candidates.append((self.vocab[word], word, e))
            if candidates:
                _, word, pos = min(candidates, key=lambda c: c[0])
                result.append(word)
                continue
            char = text[pos]
            code = ord(char)
            if any(low <= code <= high for low, high in _KIGOU):
                result.append("<KIGOU>")
            elif _U2000_U2BFF[0] <= code <= _U2000_U2BFF[1]:
                result.append("<U2000U2BFF>")
            else:
                result.extend(f"<|byte{b}|>" for b in char.encode("utf-8"))
            pos += 1
        return result


def read_subword_japanese(path: Path, vocab_file: str, emoji_file: str) -> SubWordJapanese:
    """``load_vocab_and_emoji``: vocab.txt's lines as ``readlines`` gives them (a line
    other than a lone ``,`` holding a comma: its spellings), and emoji.json's map."""
    try:
        with (path / emoji_file).open(encoding="utf-8") as file:
            emoji = json.loads(file.read())
        with (path / vocab_file).open(encoding="utf-8") as file:
            lines = file.readlines()
    except (OSError, ValueError) as exc:
        raise ModelFolderError(vocab_file, f"or {emoji_file} cannot be read: {exc}") from None
    table = emoji.get("emoji") if isinstance(emoji, dict) else None
    if not isinstance(table, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in table.items()):
        raise ModelFolderError(emoji_file, "has no \"emoji\" map of strings: "
                               "GPTNeoXJapaneseTokenizer does not load")
    vocab: dict[str, int] = {}
    raw: dict[str, int] = {}
    for index, line in enumerate(lines):
        spellings = ([line.rstrip("\n")] if line == "," or "," not in line
                     else line.rstrip("\n").split(","))
        raw[",".join(spellings)] = index
        for spelling in spellings:
            vocab[spelling] = index
    if not vocab:
        raise ModelFolderError(vocab_file, "is empty: GPTNeoXJapaneseTokenizer does not load")
    return SubWordJapanese(MappingProxyType(vocab), MappingProxyType(raw),
                           tuple(table.items()), max(map(len, vocab)))
