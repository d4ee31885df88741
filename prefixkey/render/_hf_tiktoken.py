"""The tokenizers transformers 5 converts from a tiktoken or tekken vocabulary file.

A folder without ``tokenizer.json`` gets its tokenizer from
``TokenizersBackend.convert_to_native_format`` (tokenization_utils_tokenizers.py):
``from_pretrained`` first searches the folder's listing for
``tekken\\.json|tokenizer\\.model\\.*|tiktoken\\.model`` and reads the file found as the
vocabulary file (else the class's own ``tokenizer.model``), then

- a ``tekken.json`` (``is_tekken_vocab_filename``) becomes ``MistralConverter``'s
  tokenizer (integrations/mistral/tokenizer.py): the special tokens first (the file's,
  else mistral_common's deprecated list, padded with ``<SPECIAL_i>`` fillers to
  ``default_num_special_tokens``), then the vocabulary's first ``default_vocab_size``
  less those entries, shifted after them;
- a ``*.model`` file that is not a SentencePiece model (its protobuf parse fails), or
  one named ``tiktoken.model``, becomes ``TikTokenConverter``'s (convert_slow_tokenizer.py)
  through ``_convert_from_tiktoken``: the ``base64 rank`` lines' vocabulary, then the
  added tokens beyond it (``<|reserved_token_i|>`` placeholders filling the gaps of
  ``added_tokens_decoder``) and ``extra_special_tokens`` as special tokens.

Both are byte-level BPE over the file's bytes with ``ignore_merges``, the merges
derived from the ranks (every split of a token into two known tokens, by rank), a
``Split`` pre-tokenizer over the file's pattern (tiktoken: transformers' default one)
and a ``ByteLevel`` post-processor. That ``tokenizer_object`` replaces the backend
``TokenizersBackend.__init__`` would build; render/_tokenizer.py then adds the
folder's tokens to it as for any folder. Only ``TokenizersBackend`` itself is
reproduced: a class of its own runs its ``__init__`` around it (decided in
render/_hf_decision.py).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any, Final, Literal

from tokenizers import AddedToken, Regex, Tokenizer, decoders, pre_tokenizers, processors
from tokenizers.models import BPE

from ._errors import ModelFolderError, RenderUnsupportedError
from ._protobuf import is_message

__all__ = ["BYTE_CHARS", "CONVERTERS", "ConvertedSource", "converted_source",
           "converted_tokenizer", "tiktoken_converter", "tiktoken_ranks"]

Converter = Literal["tekken", "tiktoken"]
#: What each converter is, as the decision's reason names it.
CONVERTERS: Final[Mapping[Converter, str]] = {
    "tekken": "transformers' MistralConverter",
    "tiktoken": "transformers' TikTokenConverter",
}
# tokenization_utils_base.py from_pretrained: the names searched for in the listing
# (the class's ``VOCAB_FILES_NAMES`` joined after them is empty for every class).
_OTHER_PATTERN: Final = re.compile(r"tekken\.json|tokenizer\.model\.*|tiktoken\.model")
_TIKTOKEN_LEGACY_NAME: Final = "tiktoken.model"
# TikTokenConverter's default pattern (convert_slow_tokenizer.py).
_TIKTOKEN_PATTERN: Final = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|"""
                            r"""\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
#: mistral_common 1.13.1's ``Tekkenizer.DEPRECATED_SPECIAL_TOKENS`` (by rank) and filler,
#: which MistralConverter takes for a tekken.json without ``special_tokens``
#: (tests/render/test_real_tiktoken_vectors.py compares them with the installed mistral_common).
TEKKEN_DEPRECATED_SPECIALS: Final = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
    "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]")
TEKKEN_FILLER: Final = "<SPECIAL_{id}>"


@dataclass(frozen=True, slots=True)
class ConvertedSource:
    """The vocabulary file transformers converts, and with which converter."""

    converter: Converter
    file: str


def converted_source(folder: Path) -> ConvertedSource | None:
    """The tekken or tiktoken file ``from_pretrained`` converts for a folder without
    ``tokenizer.json``; None when it reads another file (SentencePiece, vocab/merges,
    or none: not this module's).

    transformers searches only a listing without the text "tokenizer.json" in it, and
    takes the first match of its pattern in ``os.listdir``'s order, which differs
    between file systems: a folder whose names match differently is refused.
    """
    names = os.listdir(folder)
    found = set() if any("tokenizer.json" in n for n in names) else {
        m.group() for name in names if (m := _OTHER_PATTERN.search(name))}
    if len(found) > 1:
        raise RenderUnsupportedError(sorted(found)[0], (
            f"the folder's names match transformers' tokenizer file pattern as "
            f"{' and '.join(map(repr, sorted(found)))}: it reads the first its file system "
            "lists, which the folder does not say"))
    name = found.pop() if found else "tokenizer.model"  # TokenizersBackend's vocab_file
    path = folder / name
    if not path.is_file():
        return None
    if "tekken" in name and name.endswith(".json"):
        return ConvertedSource("tekken", name)
    if not name.endswith(".model"):
        return None
    # SentencePiece's parse is tried first: a file it fails on is read as tiktoken's.
    # Only the top level is walked (the pieces are tens of thousands of messages): a fault
    # inside one is found where the model is read, which refuses the file.
    if name == _TIKTOKEN_LEGACY_NAME or not is_message(path.read_bytes(), {}):
        return ConvertedSource("tiktoken", name)
    return None


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's ``bytes_to_unicode`` (transformers' convert_slow_tokenizer): printable
    bytes as themselves, the others from U+0100 on."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    return {**{b: chr(b) for b in printable},
            **{b: chr(256 + n) for n, b in enumerate(others)}}


#: Byte-level BPE's byte → character table (also a str.translate map over a token's
#: bytes decoded as latin-1).
BYTE_CHARS: Final = _bytes_to_unicode()


def _byte_level_bpe(ranks: Mapping[bytes, int], pattern: str, *, shift: int = 0,
                    specials: tuple[str, ...] = ()) -> Tokenizer:
    """The converters' ``tokenizer()`` and pre-tokenizer/decoder: byte-level BPE over the
    ranks (ids shifted by ``shift``, ``specials`` at ids 0…, over any token of the same
    text), each token's merges its splits into two known tokens by their ranks, all in
    the order of the tokens' ranks (a stable sort, as the converters')."""
    texts = {t: t.decode("latin-1").translate(BYTE_CHARS) for t in ranks}
    get = ranks.get
    merges: list[tuple[int, str, str]] = []
    for token, rank in ranks.items():
        # The cut ``i`` last: sorting the triples is the converters' stable sort by
        # (left rank, right rank), equal keys in cut order.
        local = [(left, right, i) for i in range(1, len(token))
                 if (left := get(token[:i])) is not None
                 and (right := get(token[i:])) is not None]
        if local:
            if len(local) > 1:
                local.sort()
            merges += [(rank, texts[token[:i]], texts[token[i:]]) for _, _, i in local]
    merges.sort(key=itemgetter(0))
    vocab = {texts[t]: r + shift for t, r in ranks.items()}
    vocab.update({s: i for i, s in enumerate(specials)})
    model = BPE(vocab, [(a, b) for _, a, b in merges], fuse_unk=False)
    model.ignore_merges = True
    tokenizer = Tokenizer(model)
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def tiktoken_ranks(data: bytes, name: str) -> dict[bytes, int]:
    """tiktoken's ``load_tiktoken_bpe``: each non-empty line's base64 token and rank
    (``name``: the file's, for the error)."""
    decode = binascii.a2b_base64  # base64.b64decode of bytes, without its checks' calls
    try:
        return {decode(token): int(rank) for token, rank in
                (line.split() for line in data.splitlines() if line)}
    except (ValueError, binascii.Error):
        pass  # read again line by line, to name the line that fails
    ranks: dict[bytes, int] = {}
    for number, line in enumerate(data.splitlines(), 1):
        if not line:
            continue
        try:
            token, rank = line.split()
            ranks[decode(token)] = int(rank)
        except (ValueError, binascii.Error):
            raise ModelFolderError(name, (
                f"line {number} is not a base64 token and a rank: tiktoken's reader fails "
                "and vLLM does not start")) from None
    return ranks


def tiktoken_converter(ranks: Mapping[bytes, int], pattern: str,
                       specials: list[str]) -> Tokenizer:
    """``TikTokenConverter(pattern=…, extra_special_tokens=…).converted()`` over the ranks:
    byte-level BPE, then the special tokens from the first id after the ranks."""
    tokenizer = _byte_level_bpe(ranks, pattern)
    if specials:
        tokenizer.add_special_tokens([AddedToken(t, normalized=False, special=True)
                                      for t in specials])
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    return tokenizer


def _tiktoken(path: Path, added_tokens_decoder: Mapping[int, Any],
              extra_special_tokens: list[Any]) -> Tokenizer:
    """``_convert_from_tiktoken``: the added tokens past the file's vocabulary (their
    gaps filled with placeholders), then the extra special tokens not among them."""
    for token in extra_special_tokens:
        if not isinstance(token, str):
            raise RenderUnsupportedError("extra_special_tokens", (
                f"{token!r} is not a string: TikTokenConverter wraps each in an AddedToken "
                "and transformers fails to load the folder"))
    ranks = tiktoken_ranks(path.read_bytes(), path.name)
    added = {int(i): str(t) for i, t in added_tokens_decoder.items()}
    extras = list(extra_special_tokens)
    top = max(added) if added else 0
    if top >= len(ranks):
        extras = [added.get(i, f"<|reserved_token_{i}|>") for i in range(len(ranks), top + 1)]
        listed = set(extras)
        extras += [t for t in extra_special_tokens if t not in listed]
    return tiktoken_converter(ranks, _TIKTOKEN_PATTERN, extras)


def _tekken(path: Path) -> Tokenizer:
    """``MistralConverter(vocab_file).converted()``."""
    try:
        with path.open(encoding="utf-8") as handle:
            raw = json.load(handle)
        config = raw["config"]
        pattern = config["pattern"]
        listed = raw.get("special_tokens")
        filler = TEKKEN_FILLER
        if listed is None:
            specials = list(TEKKEN_DEPRECATED_SPECIALS)
        else:
            ranks = sorted(entry["rank"] for entry in listed)
            if ranks != list(range(len(ranks))):
                raise ModelFolderError(path.name, (
                    f"special_tokens ranks must be contiguous starting at 0, got {ranks}: "
                    "MistralConverter fails and vLLM does not start"))
            specials = [str(s) for _, s in sorted((e["rank"], e["token_str"])
                                                  for e in listed)]
        count = config.get("default_num_special_tokens")
        count = len(specials) if count is None else count
        specials += [filler.format(id=i) for i in range(len(specials), count)]
        entries = raw["vocab"]
        size = config.get("default_vocab_size")
        if size is not None:
            entries = entries[:size - count]
        ranks_of = {base64.b64decode(e["token_bytes"]): r for r, e in enumerate(entries)}
    except (OSError, ValueError, KeyError, TypeError, binascii.Error) as exc:
        if isinstance(exc, ModelFolderError):
            raise
        raise ModelFolderError(path.name, (
            f"cannot be read as a tekken vocabulary ({type(exc).__name__}: {exc}): "
            "MistralConverter fails and vLLM does not start")) from None
    tokenizer = _byte_level_bpe(ranks_of, pattern, shift=count, specials=tuple(specials))
    tokenizer.add_special_tokens([AddedToken(s, special=True) for s in specials])
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    return tokenizer


def converted_tokenizer(folder: Path, source: ConvertedSource,
                        added_tokens_decoder: Mapping[int, Any],
                        extra_special_tokens: list[Any]) -> Tokenizer:
    """The ``tokenizer_object`` ``convert_to_native_format`` builds from ``source``, given
    the ``added_tokens_decoder`` and ``extra_special_tokens`` from_pretrained passes."""
    path = folder / source.file
    if source.converter == "tekken":
        return _tekken(path)
    return _tiktoken(path, added_tokens_decoder, extra_special_tokens)
