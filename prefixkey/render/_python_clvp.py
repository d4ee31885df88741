"""ClvpTokenizer's ``_tokenize`` (transformers 5.17, vLLM 0.31): its English normalizer,
then GPT-2's byte-level BPE over the folder's vocab.json and merges.txt.

models/clvp/number_normalizer.py's ``EnglishNormalizer`` runs on each piece of text
between the added tokens: characters outside ASCII are dropped, the text lower-cased,
numbers spelled out (commas inside digit runs dropped, ``$`` amounts as dollars and
cents, ``1.5`` as "1 point 5", ordinals and every digit run as words), its abbreviations
(``mr.``, ``dr.``, …) written out, whitespace runs (Python ``re``'s ``\\s``) made one
space and ``"`` dropped. The pieces ClvpTokenizer's pattern finds are then encoded as
GPT-2's bytes-to-unicode characters and merged by rank; a lone ``Ġ`` is ``[SPACE]`` when
the vocabulary holds it. After the normalizer the text is ASCII with only spaces for
whitespace, where the pattern's ``\\p{L}``/``\\p{N}`` are ASCII letters and digits.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from tokenizers import models

from ._errors import RenderUnsupportedError
from ._hf_tiktoken import BYTE_CHARS

__all__ = ["ClvpWords", "normalize_english"]

_ABBREVIATIONS: Final = tuple((re.compile(rf"\b{short}\.", re.IGNORECASE), long)
                              for short, long in (
    ("mrs", "misess"), ("mr", "mister"), ("dr", "doctor"), ("st", "saint"), ("co", "company"),
    ("jr", "junior"), ("maj", "major"), ("gen", "general"), ("drs", "doctors"),
    ("rev", "reverend"), ("lt", "lieutenant"), ("hon", "honorable"), ("sgt", "sergeant"),
    ("capt", "captain"), ("esq", "esquire"), ("ltd", "limited"), ("col", "colonel"),
    ("ft", "fort")))
_ONES: Final = ("", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_TEENS: Final = ("ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
                 "seventeen", "eighteen", "nineteen")
_TENS: Final = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty",
                "ninety")
#: ``number_to_words``'s scales from a thousand up, each with its word.
_SCALES: Final = ((10**3, "thousand"), (10**6, "million"), (10**9, "billion"),
                  (10**12, "trillion"), (10**15, "quadrillion"))
_WORDS: Final = re.compile(
    r"'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+")


def _number_to_words(num: int) -> str:
    if num == 0:
        return "zero"
    if num < 0:
        return "minus " + _number_to_words(-num)
    if num < 10:
        return _ONES[num]
    if num < 20:
        return _TEENS[num - 10]
    if num < 100:
        return _TENS[num // 10] + ("-" + _ONES[num % 10] if num % 10 else "")
    if num < 1000:
        return _ONES[num // 100] + " hundred" + (
            " " + _number_to_words(num % 100) if num % 100 else "")
    for (scale, word), (limit, _) in zip(_SCALES, (*_SCALES[1:], (10**18, "")), strict=True):
        if num < limit:
            rest = num % scale
            return f"{_number_to_words(num // scale)} {word}" + (
                ", " + _number_to_words(rest) if rest else "")
    return "number out of range"


def _dollars(match: re.Match[str]) -> str:
    amount = match.group(1)
    parts = amount.split(".")
    if len(parts) > 2:
        return amount + " dollars"
    try:
        dollars = int(parts[0]) if parts[0] else 0
        cents = int(parts[1]) if len(parts) > 1 and parts[1] else 0
    except ValueError:
        raise RenderUnsupportedError("prompt", (
            f"ClvpTokenizer's normalizer raises ValueError on the amount ${amount}; "
            "not reproduced")) from None
    dollar_unit = "dollar" if dollars == 1 else "dollars"
    cent_unit = "cent" if cents == 1 else "cents"
    if dollars and cents:
        return f"{dollars} {dollar_unit}, {cents} {cent_unit}"
    if dollars:
        return f"{dollars} {dollar_unit}"
    return f"{cents} {cent_unit}" if cents else "zero dollars"


def _ordinal(match: re.Match[str]) -> str:
    num = int(match.group(0)[:-2])
    suffix = ("th" if 10 <= num % 100 <= 20
              else {1: "st", 2: "nd", 3: "rd"}.get(num % 10, "th"))
    return _number_to_words(num) + suffix


def _number(match: re.Match[str]) -> str:
    num = int(match.group(0))
    if 1000 < num < 3000:
        if num == 2000:
            return "two thousand"
        if 2000 < num < 2010:
            return "two thousand " + _number_to_words(num % 100)
        if num % 100 == 0:
            return _number_to_words(num // 100) + " hundred"
    return _number_to_words(num)


def normalize_english(text: str) -> str:
    """``EnglishNormalizer.__call__``."""
    text = text.encode("ascii", "ignore").decode("utf-8").lower()
    text = re.sub(r"([0-9][0-9,]+[0-9])", lambda m: m.group(1).replace(",", ""), text)
    text = re.sub(r"£([0-9,]*[0-9])", r"\1 pounds", text)
    text = re.sub(r"\$([0-9.,]*[0-9])", _dollars, text)
    text = re.sub(r"([0-9]++\.[0-9]+)", lambda m: m.group(1).replace(".", " point "), text)
    text = re.sub(r"[0-9]++(st|nd|rd|th)", _ordinal, text)
    text = re.sub(r"[0-9]+", _number, text)
    for pattern, replacement in _ABBREVIATIONS:
        text = pattern.sub(replacement, text)
    return re.sub(r"\s+", " ", text).replace('"', "")


@dataclass(frozen=True, slots=True)
class ClvpWords:
    """The folder's BPE (vocab.json and merges.txt) and whether it holds ``[SPACE]``."""

    bpe: models.BPE
    space: bool

    @classmethod
    def build(cls, vocab: Mapping[str, int], merges: list[tuple[str, str]]) -> ClvpWords:
        return cls(models.BPE(dict(vocab), merges), "[SPACE]" in vocab)

    def tokenize(self, text: str) -> list[str]:
        """``_tokenize``: the normalized text's words, each as its BPE pieces."""
        tokens: list[str] = []
        for word in _WORDS.findall(normalize_english(text)):
            chars = "".join(BYTE_CHARS[b] for b in word.encode("utf-8"))
            tokens.extend("[SPACE]" if t.value == "\u0120" and self.space else t.value
                          for t in self.bpe.tokenize(chars))
        return tokens
