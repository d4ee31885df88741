"""A Python tokenizer built from a model folder's files (render/_hf_python.py's codecs).

``build_folder_tokenizer`` is the render path's entry: a folder whose tokenizer class is a
Python one gets :class:`~._python_tokenizer.PythonTokenizer` over the files that class
reads (vocabularies, merges, fairseq dictionaries, byte maps, CLVP's), with the folder's
added tokens, transformers' legacy ``added_tokens.json`` where reproduced, and its
checks; the other classes refused with the reason.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from tokenizers import Tokenizer, models

from ._eras import GenericSpm, SpecialsMerge
from ._errors import ModelFolderError, RenderUnsupportedError
from ._folder import ModelFolder
from ._hf_python import PYTHON_CODECS, Added, BpeWords, PythonCodec
from ._hf_specials import legacy_added_tokens
from ._hf_tiktoken import BYTE_CHARS
from ._python_backend import read_vocab
from ._python_clvp import ClvpWords
from ._python_settings import _content, check_folder
from ._python_subword_japanese import read_subword_japanese
from ._python_tokenizer import _SPECIAL_TOKENS_ATTRIBUTES, PythonTokenizer
from ._sentence_transformers import refuse_python_lowercase
from ._tokenizer import HfTokenizer, build_tokenizer

__all__ = ["build_folder_tokenizer", "build_python_tokenizer", "build_vocab_tokenizer"]


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
