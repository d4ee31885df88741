"""A SentencePiece Python tokenizer (render/_hf_python.py's ``sentencepiece`` codecs).

transformers' GPTSw3Tokenizer, BertGenerationTokenizer, SiglipTokenizer, MarianTokenizer,
M2M100Tokenizer, PLBartTokenizer, Speech2TextTokenizer, SpeechT5Tokenizer and
BartphoTokenizer encode each piece of a text
with the ``sentencepiece`` library over the folder's model file, around
``PythonBackend.tokenize``'s added-token split (render/_python_backend.py's
:func:`split_added`). What differs between them is data (:class:`SentencePieceRecipe`):
the clean-up before the model, where an id comes from, the prefix and suffix tokens.
The same library, fed the same text, gives the same pieces; the ids are checked against
vLLM 0.31's answers (tests/render/real_py_spm_vectors.jsonl, real_py_named_vectors.jsonl).
"""

from __future__ import annotations

import re
import string
import threading
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from tokenizers import Tokenizer, models

from .._extras import needs_extra
from ._errors import ModelFolderError, RenderUnsupportedError
from ._folder import ModelFolder
from ._hf_python import PYTHON_CODECS, Added, SentencePieceRecipe
from ._python_backend import prepare_for_model, read_vocab, split_added
from ._python_settings import _content
from ._tokenizer import HfTokenizer

__all__ = ["SentencePieceTokenizer", "build_spm_tokenizer"]

#: ``SPECIAL_TOKENS_ATTRIBUTES``: the order ``PythonBackend.__init__`` adds them in.
_ATTRIBUTES: Final = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                      "cls_token", "mask_token")
#: GPTSw3Tokenizer.preprocess_text: the non-printing characters it removes.
_NON_PRINTING: Final = dict.fromkeys(
    [*range(0, 9), *range(11, 32), *range(127, 160), 160, 173, 8203])
#: Its ``whitespaces`` made spaces, by the transformers release vLLM runs: 5.17's file
#: (vLLM 0.31) holds a space, U+3000 and U+FFFC (its other spaces were lost to plain
#: ones); 5.19's (vLLM 0.32) and 5.24's (0.29, 0.30) list en, em, four-per-em,
#: punctuation, thin, hair and narrow no-break spaces too (and U+0084, removed before).
_GPT_SW3_SPACES_5_19: Final = "\u2002\u2003\u2005\u2008\u2009\u200a\u202f\u3000\ufffc\u0084"
_GPT_SW3_WHITESPACES: Final = MappingProxyType({
    "5.17.0": "\u3000\ufffc", "5.19.0": _GPT_SW3_SPACES_5_19, "5.24.0": _GPT_SW3_SPACES_5_19,
})
_PUNCTUATION: Final = str.maketrans("", "", string.punctuation)
_WHITESPACE: Final = re.compile(r"\s+")
Step = Callable[[str], str]


def _gpt_sw3_whitespace(settings: Mapping[str, Any], transformers: str) -> Step:
    spaces = _GPT_SW3_WHITESPACES.get(transformers)
    if spaces is None:
        raise RenderUnsupportedError("tokenizer_config.json", (
            f"GPTSw3Tokenizer's whitespace set in transformers {transformers} was not read; "
            "not verified"))
    table = str.maketrans(dict.fromkeys(spaces, " "))
    return lambda text: text.translate(table)


#: The clean-up steps a recipe names: each made, from the folder's settings and the
#: transformers release, into a text → text step.
CLEAN: Final[Mapping[str, Callable[[Mapping[str, Any], str], Step]]] = MappingProxyType({
    "drop_non_printing": lambda s, v: lambda text: text.translate(_NON_PRINTING),
    "gpt_sw3_whitespace": _gpt_sw3_whitespace,
    "nfc": lambda s, v: lambda text: unicodedata.normalize("NFC", text),
    "lower_if_do_lower_case": lambda s, v: str.lower if s["do_lower_case"] else str,
    "drop_punctuation": lambda s, v: lambda text: text.translate(_PUNCTUATION),
    "squeeze_whitespace": lambda s, v: lambda text: _WHITESPACE.sub(" ", text),
    "strip": lambda s, v: str.strip,
})
_METASPACE: Final = "\u2581"


@dataclass(frozen=True, slots=True, eq=False, kw_only=True)
class SentencePieceTokenizer(HfTokenizer):
    """A reproduced SentencePiece Python tokenizer; ``tokenizer`` holds ``get_vocab()``."""

    recipe: SentencePieceRecipe
    #: The ``sentencepiece.SentencePieceProcessor`` of the folder's model file.
    model: Any
    #: ``_tokenize``'s clean-up (the recipe's ``clean`` steps, made for the folder).
    clean: tuple[Step, ...]
    #: The added tokens (strip flags) and the pattern splitting the text on them (and
    #: on every special token, for ``SentencePieceBackend`` classes).
    by_content: Mapping[str, Added]
    splitter: re.Pattern[str] | None
    specials: frozenset[str]
    #: The ids ``_convert_token_to_id`` finds before the model or vocab.json (the added
    #: tokens', the language codes', PLBart's fairseq specials').
    fixed_ids: Mapping[str, int]
    vocab: Mapping[str, int] | None
    unk_id: int
    prefix_ids: tuple[int, ...]
    suffix_ids: tuple[int, ...]
    #: SiglipTokenizer: how many pieces ``unk_token`` encodes to.
    unk_pieces: int
    longest: int

    @property
    def max_chars_per_token(self) -> int:
        return self.longest

    def _tokenize(self, text: str) -> list[str]:
        recipe = self.recipe
        for step in self.clean:
            text = step(text)
        codes: list[str] = []
        if recipe.language_code_tokens and text.startswith(">>"):
            end = text.find("<<")
            if end != -1:
                codes, text = [text[:end + 2]], text[end + 2:]
        if recipe.metaspace_prefix:
            pieces: list[str] = self.model.encode(str(self.special_tokens_map["unk_token"])
                                                  + text, out_type=str)
            return pieces[self.unk_pieces:] if len(pieces) >= self.unk_pieces else pieces
        return codes + list(self.model.encode(text, out_type=str))

    def _id(self, token: str) -> int:
        found = self.fixed_ids.get(token)
        if found is not None:
            return found
        if self.vocab is not None:
            return self.vocab.get(token, self.unk_id)
        piece = int(self.model.piece_to_id(token))
        if self.recipe.ids == "fairseq":
            return piece + 1 if piece else self.unk_id
        return piece

    def _ids(self, text: str) -> list[int]:
        """``PythonBackend.tokenize`` (Siglip's override around it), then the ids."""
        if self.recipe.metaspace_prefix:
            text = _METASPACE + text.replace(_METASPACE, " ")
        tokens: list[str] = []
        for i, piece in enumerate(split_added(self.splitter, self.by_content, text)):
            if piece:
                tokens.extend([piece] if i % 2 else self._tokenize(piece))
        if (self.recipe.metaspace_prefix and len(tokens) > 1 and tokens[0] == _METASPACE
                and tokens[1] in self.specials):
            tokens = tokens[1:]
        return [self._id(t) for t in tokens]

    def _wrap(self, ids: list[int]) -> list[int]:
        suffix = self.suffix_ids
        if self.recipe.suffix_if_absent and ids and ids[-1] == suffix[-1]:
            suffix = ()
        return [*self.prefix_ids, *ids, *suffix]

    def encode(self, text: str, *, add_special_tokens: bool) -> list[int]:
        ids = self._ids(text)
        return self._wrap(ids) if add_special_tokens else ids

    def encode_truncated(self, text: str, *, add_special_tokens: bool, max_length: int,
                         side: str) -> list[int]:
        return prepare_for_model(self._ids(text), self._wrap, side=side,
                                 add_special_tokens=add_special_tokens, max_length=max_length)


def _load_model(folder: ModelFolder, name: str) -> Any:
    with needs_extra("sentencepiece", f"a {name} folder"):
        import sentencepiece
    path = folder.tokenizer_path / name
    model = sentencepiece.SentencePieceProcessor()
    try:
        model.Load(str(path))
    except (OSError, RuntimeError) as exc:
        raise ModelFolderError(name, f"cannot be read as a SentencePiece model: {exc}"
                               ) from None
    return model


def build_spm_tokenizer(folder: ModelFolder, codec_class: str, transformers: str
                        ) -> SentencePieceTokenizer:
    """The class's tokenizer over the folder's files (its settings checked beforehand), as
    the ``transformers`` release vLLM runs encodes."""
    codec = PYTHON_CODECS[codec_class]
    recipe = codec.spm
    assert recipe is not None
    for name in recipe.other_defaults_for:
        if name in str(folder.tokenizer_path):
            raise RenderUnsupportedError("--tokenizer", (
                f"{codec_class} takes other default tokens for a name holding {name!r} "
                "(its name_or_path); not reproduced"))
    model = _load_model(folder, recipe.model_file)
    size = int(model.get_piece_size())
    settings = {**codec.settings, **{k: _content(v) for k, v in folder.tokenizer_config.items()
                                     if k in codec.settings and v is not None}}
    named = {k: str(settings[k]) for k in _ATTRIBUTES if settings.get(k) is not None}
    if recipe.ids == "fairseq_dict":
        assert codec.vocab_file is not None
        vocab: dict[str, int] | None = _read_monolingual(folder, codec.vocab_file, named)
    else:
        vocab = (read_vocab(folder.tokenizer_path, codec_class, codec.vocab_file)
                 if codec.vocab_file is not None else None)
    if vocab is not None and named["unk_token"] not in vocab:
        raise RenderUnsupportedError(codec.vocab_file or "", (
            f"{named['unk_token']!r} (unk_token) is not in it: {codec_class} does not load"))
    fixed: dict[str, int] = {}
    languages = recipe.languages.get(str(settings.get("language_codes")), {})
    codes = list(dict.fromkeys(languages.values()))
    if recipe.ids == "fairseq":
        # PLBart: fairseq's four specials, the model's pieces one up, the codes, <mask>;
        # its __init__ removes every one of them from the added tokens.
        fixed.update({"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3})
        fixed.update({code: size + 1 + i for i, code in enumerate(codes)})
        if recipe.mask_after_languages:
            fixed[named["mask_token"]] = size + 1 + len(codes)
        added: list[Added] = []
    elif recipe.ids == "fairseq_dict":
        # Bartpho: every named token has its dictionary id (its __init__ moves the added
        # tokens there); a SentencePieceBackend class splits the text on each of them.
        assert vocab is not None
        fixed.update({content: vocab[content] for content in named.values()})
        added = []
    else:
        base = len(vocab) if vocab is not None else size
        fixed.update({code: base + i for i, code in enumerate(codes)})
        # PythonBackend.__init__ adds the special tokens in attribute order: one the
        # vocabulary (or model) holds keeps its id, any other takes the next one.
        added = []
        next_id = base
        for attribute, content in named.items():
            if content in {a.content for a in added}:
                continue
            if vocab is not None and content in vocab:
                token_id = vocab[content]
            elif vocab is None and model.id_to_piece(model.piece_to_id(content)) == content:
                token_id = int(model.piece_to_id(content))
            else:
                token_id, next_id = next_id, next_id + 1
            added.append(Added(content, token_id, attribute, recipe.strip_specials,
                               recipe.strip_specials))
        if _lists_languages(folder):
            # Listed as additional special tokens (M2M100 folders list them): added
            # tokens then, split out of a text, with the ids they have anyway.
            added += [Added(code, fixed[code]) for code in codes]
        fixed.update({a.content: a.id for a in added})
    _check_added_tokens(codec_class, folder.tokenizer_config, added)
    by_content = {a.content: a for a in added}
    specials = frozenset(named.values()) | frozenset(
        codes if recipe.backend == "sentencepiece" or _lists_languages(folder) else ())
    split = set(by_content) | (specials if recipe.backend == "sentencepiece" else set())
    names = sorted(split, key=len, reverse=True)
    # SentencePieceBackend itself names no unk_token: the model's own unknown id.
    unk = named.get("unk_token")
    unk_id = (int(model.unk_id()) if unk is None else fixed.get(
        unk, vocab[unk] if vocab is not None else int(model.piece_to_id(unk))))
    source = settings.get("src_lang")
    lang = languages.get(str(source)) if source is not None else None

    def ids_of(attributes: tuple[str, ...]) -> tuple[int, ...]:
        # "src_lang" with no source language adds nothing (PLBart without src_lang).
        tokens = [lang if a == "src_lang" else named[a] for a in attributes]
        return tuple(fixed[t] for t in tokens if t is not None)

    pieces = ([model.id_to_piece(i) for i in range(size)] if vocab is None else list(vocab))
    full = {**{p: i for i, p in enumerate(pieces)}, **fixed}
    return SentencePieceTokenizer(
        tokenizer=Tokenizer(models.WordLevel(full, unk_token=None)),
        special_tokens_map=MappingProxyType(named),
        _max_chars=[], _truncating=[], _lock=threading.Lock(),
        recipe=recipe, model=model,
        clean=tuple(CLEAN[step](settings, transformers) for step in recipe.clean),
        by_content=MappingProxyType(by_content),
        splitter=re.compile("(" + "|".join(map(re.escape, names)) + ")") if names else None,
        specials=specials,
        fixed_ids=MappingProxyType(fixed),
        vocab=None if vocab is None else MappingProxyType(vocab),
        unk_id=unk_id, prefix_ids=ids_of(recipe.prefix), suffix_ids=ids_of(recipe.suffix),
        unk_pieces=0 if unk is None else len(model.encode(unk)),
        longest=max(map(len, full), default=0))


def _read_monolingual(folder: ModelFolder, name: str, named: Mapping[str, str]
                      ) -> dict[str, int]:
    """Bartpho's ``fairseq_tokens_to_ids``: bos, pad, eos, unk, sep, cls (each once),
    each line's first field at the dictionary's length, then ``mask_token`` if absent."""
    vocab: dict[str, int] = {}
    for attribute in ("bos_token", "pad_token", "eos_token", "unk_token", "sep_token",
                      "cls_token"):
        vocab.setdefault(named[attribute], len(vocab))
    try:
        with (folder.tokenizer_path / name).open(encoding="utf-8") as file:
            lines = [line.strip().split() for line in file]
    except (OSError, ValueError) as exc:
        raise ModelFolderError(name, f"cannot be read: {exc}") from None
    for number, fields in enumerate(lines, 1):
        if not fields:
            raise ModelFolderError(name, f"line {number} is blank: transformers' "
                                   "BartphoTokenizer raises IndexError")
        vocab[fields[0]] = len(vocab)
    vocab.setdefault(named["mask_token"], len(vocab))
    return vocab


def _lists_languages(folder: ModelFolder) -> bool:
    """Whether the folder lists additional special tokens (render/_hf_python.py admits
    only the language codes' tokens there)."""
    return any(bool(settings.get(key)) for settings in (folder.tokenizer_config,
                                                         folder.special_tokens_map or {})
               for key in ("additional_special_tokens", "extra_special_tokens"))


def _check_added_tokens(codec_class: str, tokenizer_config: Mapping[str, Any],
                        added: list[Added]) -> None:
    """A saved ``added_tokens_decoder`` must hold what the class adds itself."""
    ours = {str(a.id): a for a in added}
    for index, token in (tokenizer_config.get("added_tokens_decoder") or {}).items():
        mine = ours.get(str(index))
        flags = token if isinstance(token, Mapping) else {}
        if mine is None or mine.content != _content(token) or flags.get(
                "single_word") or any(
                bool(flags.get(flag, getattr(mine, flag))) != getattr(mine, flag)
                for flag in ("lstrip", "rstrip")):
            raise RenderUnsupportedError("tokenizer_config.json", (
                f"added_tokens_decoder[{index!r}] is not one of the tokens {codec_class} "
                "adds itself; not reproduced"))
