"""A reproduced Python tokenizer (render/_hf_python.py's codecs), with PythonBackend's rules.

``PythonBackend.tokenize`` splits the text on the added tokens (the longest match at the
leftmost position), lets an added token with ``lstrip``/``rstrip`` strip the whitespace
of its neighbours (Python's ``str.rstrip``/``str.lstrip``, whose whitespace is not Rust's:
``\\x1c`` is stripped), encodes every other piece with the class's ``_tokenize``, and
``prepare_for_model`` truncates before the special tokens are added, keeping room for them.
"""

from __future__ import annotations

import heapq
import re
import threading
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from itertools import pairwise
from types import MappingProxyType
from typing import Final

from tokenizers import Tokenizer, models

from ._hf_python import (
    Added,
    PythonCodec,
)
from ._python_backend import prepare_for_model, split_added
from ._python_clvp import ClvpWords
from ._python_subword_japanese import SubWordJapanese
from ._tokenizer import HfTokenizer

__all__ = ["PythonTokenizer"]


@dataclass(frozen=True, slots=True, eq=False, kw_only=True)
class PythonTokenizer(HfTokenizer):
    """A reproduced Python tokenizer; ``tokenizer`` holds its vocabulary for look-ups."""

    codec: PythonCodec
    #: The added tokens by content (the first registration of a content wins).
    by_content: Mapping[str, Added]
    splitter: re.Pattern[str] | None
    #: ``vocab_chars``: the folder's vocabulary, its unknown token's id, whether the text
    #: is upper-cased, and what a space becomes.
    vocab: Mapping[str, int] | None = None
    unk_id: int = 0
    upper: bool = False
    delimiter: str = " "
    #: The named special tokens' ids (``cls_token``, ``eos_token``, …).
    special_ids: Mapping[str, int] = field(default_factory=dict)
    #: ``bpe_words``: merges.txt's ranks, as ``__init__`` reads them (a later duplicate
    #: line's rank wins), and the rewrites of render/_hf_python.py's ``BpeWords``.
    bpe_ranks: Mapping[tuple[str, ...], int] | None = None
    word_pattern: re.Pattern[str] | None = None
    rewrites: tuple[tuple[re.Pattern[str], str], ...] = ()
    #: ``wordpiece``: (``do_lower_case``, ``strip_accents``, ``tokenize_chinese_chars``,
    #: ``CharacterTokenizer`` rather than WordPiece) as the folder sets them, and the
    #: unknown token the word-piece tokenizer keeps from ``__init__`` (a later
    #: ``add_special_tokens`` does not reach it).
    basic: tuple[bool, bool | None, bool, bool] | None = None
    unk_piece: str = ""
    #: ``vits_chars``: (``normalize``, ``add_blank``, ``language``) as the folder sets them.
    vits: tuple[bool, bool, str | None] | None = None
    #: ``subword_japanese``: the folder's vocabulary and emoji rewrites.
    subword_japanese: SubWordJapanese | None = None
    #: ``clvp_bpe``: the folder's byte-level BPE (render/_python_clvp.py).
    clvp: ClvpWords | None = None
    #: MyT5's byte rewrites (``decompose_map``, then ``merge_map``), each a trie of hex
    #: bytes whose ``None`` key holds the replacement.
    byte_rewrites: tuple[Mapping[str | None, object], ...] = ()

    @property
    def max_chars_per_token(self) -> int:
        # get_vocab(): one character per byte or code point (or the folder's vocabulary),
        # and the added tokens.
        return max([1, *map(len, self.by_content), *map(len, self.vocab or ())])

    def _pieces(self, text: str) -> list[int]:
        """``PythonBackend.tokenize`` and the ids of its tokens."""
        if self.vits is not None:
            text = self._vits_prepare(text)
        tokens = split_added(self.splitter, self.by_content, text)
        ids: list[int] = []
        offset = self.codec.offset
        for i, token in enumerate(tokens):
            if not token:
                continue
            if i % 2:
                ids.append(self.by_content[token].id)
            elif self.vocab is not None and self.codec.unit == "vocab_words":
                ids.extend(self.vocab.get(w, self.unk_id) for w in token.split())
            elif self.bpe_ranks is not None:
                ids.extend(self._bpe_ids(token))
            elif self.basic is not None:
                ids.extend(self._wordpiece_ids(token))
            elif self.vits is not None:
                ids.extend(self._vits_ids(token))
            elif self.subword_japanese is not None:
                ids.extend(self._subword_japanese_ids(token))
            elif self.clvp is not None:
                ids.extend(self._clvp_ids(token))
            elif self.vocab is not None:
                piece = (token.upper() if self.upper else token).replace(" ", self.delimiter)
                ids.extend(self.by_content[c].id if c in self.by_content
                           else self.vocab.get(c, self.unk_id) for c in piece)
            elif self.byte_rewrites:
                hexes = [f"{b:02x}" for b in token.encode("utf-8")]
                for trie in self.byte_rewrites:
                    hexes = _rewrite_bytes(trie, hexes)
                ids.extend(int(h, 16) + offset for h in hexes)
            elif self.codec.unit == "bytes":
                ids.extend(b + offset for b in token.encode("utf-8"))
            else:
                ids.extend(ord(c) + offset for c in token)
        return ids

    def _subword_japanese_ids(self, text: str) -> list[int]:
        """``SubWordJapaneseTokenizer.tokenize``, then ``_convert_token_to_id`` (an added
        token's id first; any other unknown spelling the unknown token's)."""
        assert self.subword_japanese is not None
        vocab = self.subword_japanese.vocab
        return [self.by_content[t].id if t in self.by_content else vocab.get(t, self.unk_id)
                for t in self.subword_japanese.tokenize(text)]

    def _clvp_ids(self, text: str) -> list[int]:
        """ClvpTokenizer's ``_tokenize`` (render/_python_clvp.py), then its ids (an added
        token's first, then vocab.json's, else the unknown token's)."""
        assert self.clvp is not None and self.vocab is not None
        return [self.by_content[t].id if t in self.by_content else self.vocab.get(t, self.unk_id)
                for t in self.clvp.tokenize(text)]

    def _vits_prepare(self, text: str) -> str:
        """VitsTokenizer's ``prepare_for_tokenization`` without phonemizing."""
        assert self.vits is not None and self.vocab is not None
        normalize, _, language = self.vits
        if normalize:
            # normalize_text: the first entry matching at each position (vocab.json's
            # order, then the added tokens') is kept, any other character lower-cased.
            words = [*self.vocab, *(a.content for a in sorted(
                self.by_content.values(), key=lambda a: a.id))]
            out: list[str] = []
            i = 0
            while i < len(text):
                word = next((w for w in words if text.startswith(w, i)), None)
                out.append(text[i].lower() if word is None else word)
                i += 1 if word is None else len(word)
            text = "".join(out)
        if language == "ron":
            text = text.replace("\u021b", "\u0163")
        if normalize:
            text = "".join(c for c in text if c in self.vocab).strip()
        return text

    def _vits_ids(self, text: str) -> list[int]:
        """``_tokenize`` (each character, the id-0 token around them with ``add_blank``),
        then ``_convert_token_to_id``."""
        assert self.vits is not None and self.vocab is not None
        ids = [self.vocab.get(c, self.unk_id) for c in text]
        if not self.vits[1]:
            return ids
        blanks = [0] * (2 * len(ids) + 1)
        blanks[1::2] = ids
        return blanks

    def _bpe_ids(self, text: str) -> list[int]:
        """``_tokenize`` of a fastBPE-style class, then ``_convert_token_to_id``."""
        assert self.vocab is not None and self.codec.bpe is not None and self.word_pattern
        lower = self.codec.bpe.lowercase
        ids: list[int] = []
        for word in self.word_pattern.findall(text):
            for pattern, replacement in self.rewrites:
                word = pattern.sub(replacement, word)
            for piece in word.split(" "):
                if piece:
                    ids.extend(self.vocab.get(t.lower() if lower else t, self.unk_id)
                               for t in self._bpe(piece.lower() if lower else piece))
        return ids

    def _bpe(self, piece: str) -> list[str]:
        """``bpe``: ``</w>`` on the last character, then the lowest-ranked pair merged at
        every occurrence, left to right, until no pair is ranked; ``@@`` on every symbol
        but the last. The same merges as ``bpe``'s passes over the whole word, found
        through a heap of the pairs (``bpe`` is quadratic in a word's length): each
        pass takes every pair of the lowest rank at once, in order, and the pairs it
        creates join only after it (a pair is one rank: a rank names one pair)."""
        assert self.bpe_ranks is not None
        if len(piece) == 1:
            return [piece]
        ranks = self.bpe_ranks
        # A linked list over the symbols; a symbol merged into its left one becomes "".
        symbols = [*piece[:-1], piece[-1] + "</w>"]
        end = len(symbols)
        after = list(range(1, end + 1))
        before = list(range(-1, end - 1))
        heap = [(ranks[p], i) for i, p in enumerate(pairwise(symbols)) if p in ranks]
        heapq.heapify(heap)
        while heap:
            rank = heap[0][0]
            merged: list[int] = []
            while heap and heap[0][0] == rank:  # by position: left to right
                i = heapq.heappop(heap)[1]
                j = after[i]
                if not symbols[i] or j == end or ranks.get((symbols[i], symbols[j])) != rank:
                    continue  # consumed or changed since it was queued
                symbols[i] += symbols[j]
                symbols[j] = ""
                after[i] = after[j]
                if after[j] != end:
                    before[after[j]] = i
                merged.append(i)
            for i in merged:
                for first in (before[i], i):
                    second = after[first] if first >= 0 else end
                    if second != end:
                        rank_of = ranks.get((symbols[first], symbols[second]))
                        if rank_of is not None:
                            heapq.heappush(heap, (rank_of, first))
        word = [s for s in symbols if s]
        return [*(s + "@@" for s in word[:-1]), word[-1][:-4]]

    def _wordpiece_ids(self, text: str) -> list[int]:
        """``BasicTokenizer.tokenize`` (the special tokens never split), then
        ``WordpieceTokenizer.tokenize`` of each word, then ``_convert_token_to_id``."""
        assert self.basic is not None and self.vocab is not None
        lower, strip_accents, chinese, characters = self.basic
        text = "".join(" " if _is_whitespace(c) else c for c in text
                       if c not in "\x00\ufffd" and not _is_control(c))
        if chinese:
            text = "".join(f" {c} " if _is_chinese(ord(c)) else c for c in text)
        words: list[str] = []
        # never_split: all_special_tokens (the named tokens as they are now), not the
        # other added tokens.
        specials = self.special_tokens_map.values()
        for word in unicodedata.normalize("NFC", text).split():
            if word not in specials:
                if lower:
                    word = word.lower()
                if (lower and strip_accents is not False) or (not lower and strip_accents):
                    word = "".join(c for c in unicodedata.normalize("NFD", word)
                                   if unicodedata.category(c) != "Mn")
                # _run_split_on_punc asks never_split again, of the lowercased word.
                words.extend([word] if word in specials else _split_on_punctuation(word))
            else:
                words.append(word)
        # _convert_token_to_id_with_added_voc: an added token's id first.
        added = self.by_content
        return [added[piece].id if piece in added else self.vocab.get(piece, self.unk_id)
                for word in " ".join(words).split() for piece in (
                    self._characters(word) if characters else self._wordpiece(word))]

    def _characters(self, word: str) -> list[str]:
        """``CharacterTokenizer.tokenize``: NFKC, then each character or the unknown token."""
        assert self.vocab is not None
        unk = self.unk_piece
        return [c if c in self.vocab else unk for c in unicodedata.normalize("NFKC", word)]

    def _wordpiece(self, word: str) -> list[str]:
        assert self.vocab is not None
        unk = self.unk_piece
        if len(word) > _MAX_WORDPIECE_CHARS:
            return [unk]
        pieces: list[str] = []
        start = 0
        while start < len(word):
            end = len(word)
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    pieces.append(piece)
                    break
                end -= 1
            else:
                return [unk]
            start = end
        return pieces

    def _wrap(self, ids: list[int]) -> list[int]:
        wrap, special = self.codec.wrap, self.special_ids
        if wrap == "none":
            return ids
        if wrap == "sep":
            return [*ids, special["sep_token"]]
        if wrap in ("cls_sep", "cls_eos"):
            return [special["cls_token"], *ids,
                    special["sep_token" if wrap == "cls_sep" else "eos_token"]]
        eos = special["eos_token"]
        return ids if ids and ids[-1] == eos else [*ids, eos]

    def with_added(self, tokens: list[Added],
                   specials: Mapping[str, str] | None = None) -> PythonTokenizer:
        """This tokenizer with ``tokens`` in its ``added_tokens_decoder`` at their ids
        (``PythonBackend``: the text splits on them, a piece equal to one takes its id, and
        a later one wins a content), and ``specials`` as its named tokens: their ids
        (the special tokens ``_wrap`` adds) are then the added tokens' for their text."""
        by_content = {**self.by_content, **{t.content: t for t in tokens}}
        names = sorted(by_content, key=len, reverse=True)
        named = {**self.special_tokens_map, **(specials or {})}
        # get_vocab(): the class's vocabulary, then the added tokens (``vocab`` stays the
        # class's own, which its _tokenize reads).
        lookup = {**self.tokenizer.get_vocab(), **{t.content: t.id for t in tokens}}
        return replace(
            self, tokenizer=Tokenizer(models.WordLevel(lookup, unk_token=None)),
            special_tokens_map=named, _max_chars=[], _truncating=[], _lock=threading.Lock(),
            by_content=MappingProxyType(by_content),
            splitter=re.compile("(" + "|".join(map(re.escape, names)) + ")"),
            special_ids=MappingProxyType({k: by_content[v].id if v in by_content else
                                          self.special_ids[k] for k, v in named.items()}))

    def with_lowercased_specials(self) -> HfTokenizer:
        """vLLM's ``add_special_tokens`` of the named tokens lowercased (a
        sentence-transformers ``do_lower_case``: render/_sentence_transformers.py), as
        ``PythonBackend._add_tokens`` adds them: a text ``get_vocab()`` holds keeps its id,
        a new one takes the next after ``get_vocab()``'s length; the class's attributes
        become the lowercased tokens, so their ids are the special tokens it adds."""
        # render/_python_folder.py build_folder_tokenizer refuses the other classes.
        assert self.codec.wordpiece is not None and self.vocab is not None
        vocab = {**self.vocab, **{a.content: a.id for a in self.by_content.values()}}
        size = len(vocab)
        # special_tokens_map: the class's SPECIAL_TOKENS_ATTRIBUTES (ProphetNet's
        # x_sep_token after the standard seven).
        order = [*_SPECIAL_TOKENS_ATTRIBUTES,
                 *(k for k in self.special_tokens_map if k not in _SPECIAL_TOKENS_ATTRIBUTES)]
        named = {k: self.special_tokens_map[k].lower() for k in order
                 if self.special_tokens_map.get(k)}
        tokens: list[Added] = []
        for content in named.values():
            if content not in vocab:
                vocab[content] = size
                size += 1
            tokens.append(Added(content, vocab[content]))
        return self.with_added(tokens, named)

    def encode(self, text: str, *, add_special_tokens: bool) -> list[int]:
        ids = self._pieces(text)
        return self._wrap(ids) if add_special_tokens else ids

    def encode_truncated(self, text: str, *, add_special_tokens: bool, max_length: int,
                         side: str) -> list[int]:
        return prepare_for_model(self._pieces(text), self._wrap, side=side,
                                 add_special_tokens=add_special_tokens, max_length=max_length)


#: The named tokens' order (``PreTrainedTokenizerBase.SPECIAL_TOKENS_ATTRIBUTES``).
_SPECIAL_TOKENS_ATTRIBUTES: Final = ("bos_token", "eos_token", "unk_token", "sep_token",
                                     "pad_token", "cls_token", "mask_token")
#: ``WordpieceTokenizer``'s ``max_input_chars_per_word``.
_MAX_WORDPIECE_CHARS: Final = 100


def _is_whitespace(char: str) -> bool:
    return char in " \t\n\r" or unicodedata.category(char) == "Zs"


def _is_control(char: str) -> bool:
    return char not in "\t\n\r" and unicodedata.category(char).startswith("C")


def _is_punctuation(char: str) -> bool:
    # Every ASCII non-letter, non-digit is punctuation too.
    cp = ord(char)
    return (33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126
            or unicodedata.category(char).startswith("P"))


#: ``_is_chinese_char``'s CJK blocks.
_CJK: Final = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def _is_chinese(cp: int) -> bool:
    return any(low <= cp <= high for low, high in _CJK)


def _split_on_punctuation(word: str) -> list[str]:
    """``_run_split_on_punc``: each punctuation character a word of its own."""
    out: list[str] = []
    fresh = True
    for char in word:
        if _is_punctuation(char):
            out.append(char)
            fresh = True
        else:
            if fresh:
                out.append("")
            fresh = False
            out[-1] += char
    return out


def _rewrite_bytes(trie: Mapping[str | None, object], hexes: list[str]) -> list[str]:
    """``ByteRewriter.rewrite_bytes``: at each position the longest rule matching there
    (a byte no rule starts with stays as it is)."""
    out: list[str] = []
    start = 0
    while start < len(hexes):
        node: Mapping[str | None, object] = trie
        leaf: object = [hexes[start]]
        end = start
        for j in range(start, len(hexes)):
            child = node.get(hexes[j])
            if not isinstance(child, Mapping):
                break
            node = child
            if None in node:
                leaf, end = node[None], j
        assert isinstance(leaf, list)
        out.extend(leaf)
        start = end + 1
    return out
