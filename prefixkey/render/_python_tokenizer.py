"""A reproduced Python tokenizer (render/_hf_python.py's codecs), with PythonBackend's rules.

``PythonBackend.tokenize`` splits the text on the added tokens (the longest match at the
leftmost position), lets an added token with ``lstrip``/``rstrip`` strip the whitespace
of its neighbours (Python's ``str.rstrip``/``str.lstrip``, whose whitespace is not Rust's:
``\\x1c`` is stripped), encodes every other piece with the class's ``_tokenize``, and
``prepare_for_model`` truncates before the special tokens are added, keeping room for them.
"""

from __future__ import annotations

import heapq
import json
import re
import threading
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from itertools import pairwise
from types import MappingProxyType
from typing import Final

from tokenizers import Tokenizer, models

from ._eras import GenericSpm, SpecialsMerge
from ._errors import ModelFolderError, RenderUnsupportedError
from ._folder import ModelFolder
from ._hf_python import (
    PYTHON_CODECS,
    Added,
    BpeWords,
    PythonCodec,
)
from ._hf_specials import legacy_added_tokens
from ._hf_tiktoken import BYTE_CHARS
from ._python_backend import prepare_for_model, read_vocab, split_added
from ._python_clvp import ClvpWords
from ._python_settings import _content, check_folder
from ._python_subword_japanese import SubWordJapanese, read_subword_japanese
from ._sentence_transformers import refuse_python_lowercase
from ._tokenizer import HfTokenizer, build_tokenizer

__all__ = ["PythonTokenizer", "build_folder_tokenizer", "build_python_tokenizer"]


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
        # render/_python_tokenizer.py build_folder_tokenizer refuses the other classes.
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


def _read_byte_maps(folder: ModelFolder, name: str
                    ) -> tuple[Mapping[str | None, object], ...]:
    """MyT5's ``byte_maps.json``: its ``decompose_map`` and ``merge_map``, each a trie."""
    try:
        maps = json.loads((folder.tokenizer_path / name).read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelFolderError(name, f"cannot be read: {exc}") from None
    tries: list[Mapping[str | None, object]] = []
    for key in ("decompose_map", "merge_map"):
        rules = maps.get(key) if isinstance(maps, dict) else None
        if not isinstance(rules, dict):
            raise ModelFolderError(name, f"has no {key} object: MyT5Tokenizer does not load")
        trie: dict[str | None, object] = {}
        for source, target in rules.items():
            outs = target.split(" ") if isinstance(target, str) else []
            if not outs or not all(_HEX_BYTE.fullmatch(h) for h in outs) or not all(
                    _HEX_BYTE.fullmatch(h) for h in source.split(" ")):
                # A token of other than two hex digits has no id: transformers fails.
                raise RenderUnsupportedError(name, (
                    f"{key}[{source!r}]: only rules of two-digit hex bytes are reproduced"))
            node = trie
            for byte in source.split(" "):
                child = node.setdefault(byte, {})
                assert isinstance(child, dict)
                node = child
            node[None] = outs
        tries.append(MappingProxyType(trie))
    return tuple(tries)


_HEX_BYTE: Final = re.compile("[0-9a-f]{2}")


def build_python_tokenizer(codec_class: str, folder: ModelFolder | None = None
                           ) -> PythonTokenizer:
    """The tokenizer a reproduced Python class builds (its defaults, checked beforehand;
    ``folder``: the one holding its byte rewrites, for MyT5)."""
    codec = PYTHON_CODECS[codec_class]
    by_content: dict[str, Added] = {}
    for added in codec.added:
        by_content.setdefault(added.content, added)
    names = sorted(by_content, key=len, reverse=True)
    splitter = re.compile("(" + "|".join(map(re.escape, names)) + ")") if names else None
    vocab = {a.content: a.id for a in codec.added}
    if codec.unit == "bytes":
        vocab.update({chr(b): b + codec.offset for b in range(256)})
    return PythonTokenizer(
        tokenizer=Tokenizer(models.WordLevel(vocab, unk_token=None)),
        special_tokens_map={a.attribute: a.content for a in codec.added if a.attribute},
        _max_chars=[], _truncating=[], _lock=threading.Lock(),
        codec=codec, by_content=MappingProxyType(by_content), splitter=splitter,
        special_ids=MappingProxyType({a.attribute: a.id for a in codec.added if a.attribute}),
        byte_rewrites=(() if codec.byte_maps is None or folder is None
                       else _read_byte_maps(folder, codec.byte_maps)))


def build_folder_tokenizer(folder: ModelFolder, transformers: str, generic_spm: GenericSpm,
                           specials_merge: SpecialsMerge = "kept") -> HfTokenizer:
    """The folder's tokenizer: a reproduced Python class's, else render/_tokenizer.py's
    (``transformers``: the release vLLM runs, for a class whose code changed;
    ``generic_spm``, ``specials_merge``: its era's build of the generic backend over a
    SentencePiece model, and of the special tokens' lists)."""
    decision = folder.tokenizer_decision
    lower = folder.sentence_transformers.lower_specials
    if decision.path != "python" or decision.tokenizer_class is None:
        tokenizer = build_tokenizer(folder, transformers, generic_spm, specials_merge)
        return tokenizer.with_lowercased_specials() if lower else tokenizer
    codec_class = decision.tokenizer_class
    codec = PYTHON_CODECS[codec_class]
    if lower and codec.wordpiece is None:
        refuse_python_lowercase(codec_class)
    check_folder(codec_class, folder.tokenizer_config, folder.special_tokens_map)
    legacy = legacy_added_tokens(folder.tokenizer_path, folder.tokenizer_config)
    if legacy and not _reads_legacy(codec):
        # from_pretrained hands them over as added_tokens_decoder, which a Python class
        # keeps at the file's ids: reproduced (with_added) for the classes verified
        # against vLLM (tests/units/test_python_added_tokens.py).
        raise RenderUnsupportedError("added_tokens.json", (
            "tokenizer_config.json has no added_tokens_decoder, so transformers adds this "
            f"file's tokens to the Python class {codec_class} at their ids: reproduced "
            "for the word-piece classes (RoCBert, BertJapanese, ProphetNet), "
            "PerceiverTokenizer and CanineTokenizer only"))
    if codec.spm is not None:
        # Imported here: it needs the sentencepiece extra, the other codecs do not.
        from ._python_spm import build_spm_tokenizer

        return build_spm_tokenizer(folder, codec_class, transformers)
    if codec.vocab_file is None:
        tokenizer = build_python_tokenizer(codec_class, folder)
        return _with_legacy(tokenizer, codec_class, legacy) if legacy else tokenizer
    python = build_vocab_tokenizer(folder, codec_class, legacy)
    return python.with_lowercased_specials() if lower else python


def _reads_legacy(codec: PythonCodec) -> bool:
    """Whether added_tokens.json is reproduced for the class: the word-piece classes, and
    the byte and code point classes whose own tokens are all named (ByT5's sentinels
    take ids after get_vocab(), which the file's tokens lengthen; MyT5's pieces are hex
    texts; Dia's speaker tokens were not verified)."""
    return codec.wordpiece is not None or (
        codec.unit in ("bytes", "code_points") and codec.byte_maps is None
        and all(a.attribute for a in codec.added))


def _with_legacy(tokenizer: PythonTokenizer, codec_class: str, legacy: Mapping[str, int]
                 ) -> PythonTokenizer:
    """A byte or code point class with added_tokens.json's tokens at their ids."""
    own = {a.id: a.content for a in tokenizer.codec.added}
    for text, index in legacy.items():
        if own.get(index, text) != text:
            raise RenderUnsupportedError("added_tokens.json", (
                f"{text!r} at id {index}, which is {codec_class}'s own {own[index]!r}: "
                "not reproduced"))
        if tokenizer.codec.unit == "bytes" and len(text) == 1 and ord(text) < 256:
            # _tokenize's pieces are chr(byte): a byte of another character would
            # take the token's id too.
            raise RenderUnsupportedError("added_tokens.json", (
                f"{text!r} is a one-character token {codec_class}'s byte pieces can "
                "equal: not reproduced"))
    return tokenizer.with_added([Added(t, i) for t, i in legacy.items()])


def build_vocab_tokenizer(folder: ModelFolder, codec_class: str,
                          legacy: Mapping[str, int] | None = None) -> PythonTokenizer:
    """A vocabulary-file class (render/_hf_python.py) over the folder's file, with
    ``legacy``: added_tokens.json's tokens (render/_hf_specials.py
    ``legacy_added_tokens``), which from_pretrained passes as ``added_tokens_decoder``."""
    codec = PYTHON_CODECS[codec_class]
    assert codec.vocab_file is not None
    settings = {**codec.settings, **{
        k: _content(v) for k, v in folder.tokenizer_config.items()
        if k in codec.settings and v is not None}}
    named = {k: v for k, v in settings.items() if k.endswith("_token")}
    japanese = None
    if codec.bpe is not None and codec.bpe.dict_first:
        vocab = _read_fairseq_dict(folder, codec.vocab_file,
                                   [str(named[a]) for a in codec.bpe.dict_first])
    elif codec.emoji_file is not None:
        # Its get_vocab() is each line as written; a spelling's id is its line's.
        japanese = read_subword_japanese(folder.tokenizer_path, codec.vocab_file,
                                         codec.emoji_file)
        vocab = dict(japanese.raw_vocab)
    else:
        vocab = read_vocab(folder.tokenizer_path, codec_class, codec.vocab_file,
                           lines=codec.wordpiece is not None)
    vits = codec.unit == "vits_chars"
    clvp = (None if codec.unit != "clvp_bpe" or codec.merges_file is None
            else _read_clvp(folder, codec_class, vocab, codec.merges_file))
    appends = (codec.bpe is not None or codec.wordpiece is not None or vits
               or japanese is not None or clvp is not None)
    for key, value in named.items():
        if not isinstance(value, str) or (value not in vocab and (
                not appends or key == "unk_token")):
            raise RenderUnsupportedError("tokenizer_config.json", (
                f"{key} {value!r} is not in {codec.vocab_file}: {codec_class} would add it "
                "with an id of its own, which is not reproduced"))
    if appends:
        # PythonBackend.__init__ adds the named tokens the vocabulary lacks after it, in
        # SPECIAL_TOKENS_ATTRIBUTES order (its get_vocab()'s length, then one by one),
        # then the class's other named tokens (ProphetNet's x_sep_token).
        # With added_tokens.json, get_vocab() counts the file's tokens (already added
        # tokens: one the file holds keeps the file's id).
        vocab = dict(vocab)
        size = len(vocab.keys() | (legacy or {}).keys())
        for key in [*_SPECIAL_TOKENS_ATTRIBUTES,
                    *(k for k in named if k not in _SPECIAL_TOKENS_ATTRIBUTES)]:
            value = named.get(key)
            if legacy and isinstance(value, str) and value not in vocab and value in legacy:
                vocab[value] = legacy[value]
            elif isinstance(value, str) and value not in vocab:
                if legacy and size in legacy.values():
                    # It replaces the file's token in added_tokens_decoder before the
                    # text is ever split on that one: not reproduced.
                    raise RenderUnsupportedError("added_tokens.json", (
                        f"{key} {value!r} is not in {codec.vocab_file}, so {codec_class} "
                        f"adds it at id {size}, which this file gives another token: "
                        "not reproduced"))
                vocab[value] = size
                size += 1
    if vits and 0 not in vocab.values():
        raise RenderUnsupportedError(codec.vocab_file, (
            f"no token has id 0: {codec_class}'s blanks (add_blank) are that token"))
    if appends:
        _check_added_tokens(folder.tokenizer_config, codec, codec_class, vocab,
                            {str(v) for v in named.values()})
    added = [Added(str(v), vocab[str(v)], k) for k, v in named.items()
             if k != "word_delimiter_token"]
    if codec.split_on == "multichar":
        # Wav2Vec2CTCTokenizer: the multi-character entries (the named tokens among them)
        # end up stripping whitespace on both sides; a one-character delimiter is added
        # without stripping.
        strip = {t: Added(t, i, None, True, True) for t, i in vocab.items() if len(t) > 1}
        added = [strip.pop(a.content, a) for a in added] + list(strip.values())
        delimiter = str(named["word_delimiter_token"])
        if len(delimiter) == 1:
            added.append(Added(delimiter, vocab[delimiter]))
    elif codec.split_on == "vocab":
        added += [Added(t, i) for t, i in vocab.items()]
    by_content: dict[str, Added] = {}
    for token in added:
        by_content.setdefault(token.content, token)
    names = sorted(by_content, key=len, reverse=True)
    ranks = (None if codec.merges_file is None or codec.bpe is None
             else _read_merges(folder, codec.merges_file, codec.bpe))
    python = PythonTokenizer(
        tokenizer=Tokenizer(models.WordLevel(dict(vocab), unk_token=None)),
        special_tokens_map={k: str(v) for k, v in named.items()
                            if k != "word_delimiter_token"},
        _max_chars=[], _truncating=[], _lock=threading.Lock(),
        codec=codec, by_content=MappingProxyType(by_content),
        splitter=re.compile("(" + "|".join(map(re.escape, names)) + ")") if names else None,
        vocab=MappingProxyType(vocab), unk_id=vocab[str(named["unk_token"])],
        upper=bool(settings.get("do_lower_case")),
        delimiter=str(named.get("word_delimiter_token", " ")),
        special_ids=MappingProxyType({k: vocab[str(v)] for k, v in named.items()}),
        bpe_ranks=ranks, word_pattern=re.compile(codec.bpe.words) if codec.bpe else None,
        rewrites=tuple((re.compile(p), r) for p, r in (
            codec.bpe.rewrites if codec.bpe else ())),
        basic=None if codec.wordpiece is None else (
            bool(settings["do_lower_case"]), settings.get("strip_accents"),
            bool(settings["tokenize_chinese_chars"] if codec.wordpiece.chinese is None
                 else codec.wordpiece.chinese),
            settings.get(codec.wordpiece.subword_setting or "") == "character"),
        unk_piece=str(named["unk_token"]), subword_japanese=japanese, clvp=clvp,
        vits=None if not vits else (
            bool(settings["normalize"]), bool(settings["add_blank"]), settings["language"]))
    # added_tokens_decoder at the file's ids, each special when its text is a named
    # token's (never stripping: added_tokens_decoder's rule, render/_hf_specials.py).
    return python.with_added([Added(t, i) for t, i in legacy.items()]) if legacy else python


_FLAGS: Final = ("lstrip", "rstrip", "single_word")


def _check_added_tokens(config: Mapping[str, object], codec: PythonCodec, codec_class: str,
                        vocab: Mapping[str, int], named: set[str]) -> None:
    """A saved folder's ``added_tokens_decoder`` is what ``__init__`` would add anyway
    (its named tokens at their vocabulary ids, no stripping or single-word matching),
    or it is refused: other added tokens are not reproduced for these classes."""
    for key, value in config.items():
        if key.endswith("_token") and isinstance(value, Mapping) and any(
                value.get(flag) for flag in _FLAGS):
            raise RenderUnsupportedError("tokenizer_config.json", (
                f"{key}: a special token stripping whitespace or matching single words is "
                f"not reproduced for {codec_class}"))
    decoder = config.get("added_tokens_decoder") or {}
    if not isinstance(decoder, Mapping):
        raise RenderUnsupportedError("tokenizer_config.json",
                                     "added_tokens_decoder is not an object")
    for index, token in decoder.items():
        content = _content(token)
        flags = token if isinstance(token, Mapping) else {}
        if (content not in named or str(vocab.get(str(content))) != str(index)
                or any(flags.get(flag) for flag in _FLAGS)):
            raise RenderUnsupportedError("tokenizer_config.json", (
                f"added_tokens_decoder[{index!r}] ({content!r}): only {codec_class}'s named "
                f"tokens at their {codec.vocab_file} ids, without stripping or single-word "
                "matching, are reproduced"))


def _read_clvp(folder: ModelFolder, codec_class: str, vocab: Mapping[str, int], name: str
               ) -> ClvpWords:
    """ClvpTokenizer's ``bpe_ranks``: merges.txt's lines but its first, to the last line
    break, each two symbols; vocab.json must hold every byte's character."""
    try:
        lines = (folder.tokenizer_path / name).read_text("utf-8").split("\n")[1:-1]
    except (OSError, ValueError) as exc:
        raise ModelFolderError(name, f"cannot be read: {exc}") from None
    merges: list[tuple[str, str]] = []
    for number, line in enumerate(lines, 2):
        merge = line.split()
        # Its bpe would give a symbol vocab.json lacks (the unknown token): not reproduced.
        if len(merge) != 2 or any(m not in vocab for m in (*merge, "".join(merge))):
            raise RenderUnsupportedError(name, (
                f"line {number} is not two symbols whose join vocab.json holds too: not "
                f"reproduced for {codec_class}"))
        merges.append((merge[0], merge[1]))
    if any(c not in vocab for c in BYTE_CHARS.values()):
        raise RenderUnsupportedError("vocab.json", (
            f"it lacks a byte's character: {codec_class}'s unknown pieces are not reproduced"))
    return ClvpWords.build(vocab, merges)


def _read_merges(folder: ModelFolder, name: str, bpe: BpeWords
                 ) -> Mapping[tuple[str, ...], int]:
    """``__init__``'s ranks: the lines from ``merges_from`` to the last line break."""
    try:
        lines = (folder.tokenizer_path / name).read_text("utf-8").split("\n")[
            bpe.merges_from:-1]
    except (OSError, ValueError) as exc:
        raise ModelFolderError(name, f"cannot be read: {exc}") from None
    merges = (tuple(line.split()[:-1] if bpe.counts else line.split()) for line in lines)
    return MappingProxyType(dict(zip(merges, range(len(lines)), strict=True)))


def _read_fairseq_dict(folder: ModelFolder, name: str, first: list[str]) -> dict[str, int]:
    """``add_from_file`` after the named tokens' ids 0, 1, …: each stripped line's text
    before its last space, at the dictionary's length (a repeated token moves)."""
    encoder: dict[str, int] = {}
    for token in first:
        encoder[token] = len(encoder)
    try:
        text = (folder.tokenizer_path / name).read_text("utf-8")
    except (OSError, ValueError) as exc:
        raise ModelFolderError(name, f"cannot be read: {exc}") from None
    lines = text.split("\n")
    for line in (lines[:-1] if lines[-1] == "" else lines):
        line = line.strip()
        if " " not in line:
            raise ModelFolderError(name, "Incorrect dictionary format, expected "
                                   "'<token> <cnt>' (transformers' error)")
        encoder[line[:line.rfind(" ")]] = len(encoder)
    return encoder
