"""Write docs/render-tokenizers.md: every model type's tokenizer path, from the decision data.

Usage::

    python tools/hf_tokenizer_table.py [--check]    # --check: exit 1 if the doc is stale

The table applies ``prefixkey/render/_hf_decision.py`` to each model type transformers
knows (``_hf_facts.py``), for a folder with ``tokenizer.json`` whose
``tokenizer_config.json`` names no ``tokenizer_class`` (the class the model type
registers), and lists, per class a folder may name, the path that class takes.
tests/units/test_hf_decision.py runs ``--check``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prefixkey.render import _hf_facts as facts  # noqa: E402
from prefixkey.render._encoders import ENCODER_MODES  # noqa: E402
from prefixkey.render._eras import RENDER_ERAS, render_release, verified_releases  # noqa: E402
from prefixkey.render._hf_converted import CONVERSIONS, CONVERTED_RELEASES  # noqa: E402
from prefixkey.render._hf_decision import (  # noqa: E402
    BASE_FACTS,
    HARMONY_MODEL_TYPES,
    NON_HF_ARCHITECTURES,
    class_path,
    decide_tokenizer,
    release_facts,
    tokenizer_config_class,
)
from prefixkey.render._hf_python import PYTHON_CODECS  # noqa: E402
from prefixkey.render._hf_rebuilds import REBUILDS, VERIFIED_WITH  # noqa: E402
from prefixkey.render._hf_startup_facts import ARCHITECTURES  # noqa: E402
from prefixkey.render._hf_startup_facts import VLLM_VERSION as PROBED  # noqa: E402

OUT = ROOT / "docs" / "render-tokenizers.md"
#: The rebuilt classes whose model is not a BPE, verified on the real_wu_ corpora (below).
_NON_BPE = sorted(n for n, r in REBUILDS.items()
                  if r.model_spec[0] != "BPE" and n not in VERIFIED_WITH)


#: The model types whose architectures vLLM switches to an encoder mode: (architecture, mode).
_ENCODER_TYPES = {t: (a, row.mode) for t, archs in ARCHITECTURES.items() for a in archs
                  for row in ENCODER_MODES.values() if a in row.architectures}


def _encoder_text() -> str:
    """The encoder modes' architectures, and the switched modes still refused."""
    rendered = "; ".join(
        f"`{row.mode}` for {', '.join(f'`{a}`' for a in sorted(row.architectures))} "
        f"(vLLM {', '.join(sorted(row.releases))}; [{row.doc.removeprefix('docs/')}]"
        f"({row.doc.removeprefix('docs/')}))" for row in ENCODER_MODES.values())
    refused = ", ".join(f"`{a}` ({m})" for a, m in sorted(NON_HF_ARCHITECTURES.items())
                        if m not in ENCODER_MODES)
    return (f"Before these rules, vLLM switches some architectures to a tokenizer mode of its "
            f"own. Rendered by the mode's Python encoder (path **encoder**): {rendered}. "
            f"Refused until verified: {refused}.")


def _wu_releases() -> str:
    """The releases whose render server answered the real_wu_ and real_wu2_ corpora
    (0.31.0: their own vectors)."""
    found = ["0.31.0"]
    for meta in sorted((ROOT / "tests" / "render" / "releases").glob("*/meta.json")):
        corpora = json.loads(meta.read_text("utf-8")).get("corpora", {})
        if {"real_wu_", "real_wu2_"} <= set(corpora):
            found.append(meta.parent.name)
    return ", ".join(sorted(set(found), key=lambda v: tuple(map(int, v.split(".")))))

def _encdec_releases() -> str:
    """The releases whose era answers an encoder-decoder completion (render/_eras.py
    ``encoder_decoder_completions``), and those refused."""
    answering = {r: era.encoder_decoder_completions is not None
                 for era in RENDER_ERAS for r in era.verified}
    answered = [r for r in verified_releases() if answering[r]]
    refused = [r for r in verified_releases() if not answering[r]]
    releases = list(verified_releases())
    run = releases[releases.index(answered[0]):releases.index(answered[-1]) + 1] == answered
    text = (f"vLLM {answered[0]} to {answered[-1]}" if len(answered) > 2 and run
            else f"vLLM {', '.join(answered)}")
    if refused:
        text += f"; refused at the releases not harvested for it, {', '.join(refused)}"
    return text


def _corpus_releases(corpus: str) -> str:
    """The releases whose render server answered one corpus (0.31.0: its own vectors;
    another's: listed in its meta.json, or kept by the corpus's builder)."""
    found = ["0.31.0"]
    for meta in sorted((ROOT / "tests" / "render" / "releases").glob("*/meta.json")):
        if (corpus in json.loads(meta.read_text("utf-8")).get("corpora", {})
                or (meta.parent / f"{corpus}vectors.jsonl").is_file()):
            found.append(meta.parent.name)
    return ", ".join(sorted(set(found), key=lambda v: tuple(map(int, v.split(".")))))


#: The releases the real_py_named_ corpus's classes were replayed against.
_NAMED_RELEASES: frozenset[str] = PYTHON_CODECS["SpeechT5Tokenizer"].releases or frozenset()


def _python_releases() -> str:
    """The releases each reproduced Python class was verified against, grouped."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for name, codec in sorted(PYTHON_CODECS.items()):
        releases = codec.releases or frozenset(verified_releases())
        key = tuple(sorted(releases, key=lambda v: tuple(map(int, v.split(".")))))
        groups.setdefault(key, []).append(name)
    return "; ".join(f"vLLM {', '.join(k)}: {', '.join(v)}" for k, v in sorted(groups.items()))


def _byte_level_text() -> str:
    """The releases whose transformers loads some hub classes as is over ByteLevel files."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for v in verified_releases():
        if names := tuple(sorted(release_facts(v).BYTE_LEVEL_BACKEND_HUB)):
            groups.setdefault(names, []).append(v)
    return "; ".join(
        f"with `--vllm-version` {' or '.join(vs)} (transformers "
        f"{render_release(vs[0]).transformers}) a folder whose hub class is "
        f"{' or '.join(names)} and whose `tokenizer.json` is ByteLevel loads as is"
        for names, vs in groups.items())


def _verified_text() -> str:
    """What files each reproduced rebuild was replayed on against vLLM's servers."""
    kinds = {"real": "on the model family's own tokenizer files",
             "built": "on a tokenizer.json built from a model's real BPE files as Hugging "
                      "Face's were (no registry ships the file itself)",
             "borrowed": "on another model's real vocabulary under the class's name (the "
                         "class's pipeline, not its own vocabulary)"}
    lines = ["  Verified against vLLM's render servers:"]
    for kind, text in kinds.items():
        names = [f"{n} ({VERIFIED_WITH[n][1]})" for n in sorted(REBUILDS)
                 if VERIFIED_WITH.get(n, ("", ""))[0] == kind]
        if names:
            lines.append(f"  - {text}: {'; '.join(names)}.")
    return "\n".join(lines)


HEADER = f"""# Which tokenizer vLLM gets, per model type

Generated by `tools/hf_tokenizer_table.py` from `prefixkey/render/_hf_facts.py` (facts read
from vLLM {facts.VLLM_VERSION} and transformers {facts.TRANSFORMERS_VERSION}) and the rules of
`prefixkey/render/_hf_decision.py`; do not edit. The paths:

- **as is**: `tokenizer.json` is loaded as it is (reproduced);
- **rebuilt**: the class rebuilds model, normalizer and pre-tokenizer from the file's
  vocabulary (reproduced, as `prefixkey/render/_hf_rebuilds.py` records each class, for
  {", ".join(sorted(REBUILDS))}; refused for the others: for a model type registering
  one of those, the row says which of the type's architectures vLLM {PROBED} starts for,
  as for the Python tokenizers below, and a folder naming only architectures it refuses
  is refused as such);
{_verified_text()}
- **converted** (the last column, a folder without `tokenizer.json`): transformers
  converts the folder's other files (`TokenizersBackend.convert_to_native_format`): a
  tiktoken file (Meta's Llama 3 `tokenizer.model`) or a `tekken.json` in
  `--tokenizer-mode hf`, for TokenizersBackend, into a whole tokenizer
  (`prefixkey/render/_hf_tiktoken.py`, verified against vLLM 0.29.0 to 0.33.0's render
  servers, but for a Mistral model type's `tekken.json` at 0.29.0, whose hf mode loads
  MistralCommonBackend: rendered there with mistral_common, its chat without a template
  vLLM's 400, with one refused); a SentencePiece model's pieces and scores (read
  from the file, no protobuf needed), or the vocab.json and merges.txt / vocab.txt files
  as `tokenizers` reads them, handed to the class's own rebuild (the recipe named) or, for
  the generic backend, built into a tokenizer from the model file (`spm`):
  `prefixkey/render/_hf_converted.py`, for {", ".join(sorted(CONVERSIONS))} and
  TokenizersBackend, verified against vLLM's answers on real SentencePiece models (vLLM
  {", ".join(sorted(CONVERTED_RELEASES["sentencepiece"]))}, for the generic backend
  {", ".join(sorted(CONVERTED_RELEASES["generic"]))}, built as each release's transformers
  builds it: `RenderEra.generic_spm`; `real_conv_` and `real_conv_spm_`
  corpora; GemmaTokenizer's and Siglip2Tokenizer's model is Gemma 3's vocabulary written
  as the SentencePiece model its tokenizer.json came from, a derived file, as no registry
  ships Gemma's; FNetTokenizer, without an `__init__` of its own, gets the generic
  backend's tokenizer and AlbertTokenizer's named tokens; PythonBackend named by
  `tokenizer_class` is TokenizersBackend: `real_convgap_` corpus, with PegasusTokenizer's
  own special-token list, vLLM 0.29.0 to 0.33.0) and
  vocabulary files (vLLM {", ".join(sorted(CONVERTED_RELEASES["files"]))}:
  `real_conv_files_` corpus), refused at other releases; refused for the other classes;
- **python**: a Python tokenizer (no `tokenizers` backend) whose ids are the text's bytes or
  code points, or its characters or words looked up in a vocabulary file, or its pieces
  from the folder's SentencePiece model (the `sentencepiece` extra,
  `prefixkey/render/_python_spm.py`), or the pieces of fastBPE-style vocabulary and merges
  files, or BERT's Python WordPiece over a vocab.txt, or VitsTokenizer's characters (its
  phonemize off), or
  GPTNeoXJapaneseTokenizer's spellings of its vocab.txt and emoji.json, or
  ClvpTokenizer's normalized words as byte-level BPE pieces (MyT5Tokenizer's bytes are
  rewritten by its byte_maps.json), reproduced as
  `prefixkey/render/_hf_python.py` records each class, for
  {", ".join(sorted(PYTHON_CODECS))}, each verified against the releases whose render
  servers answered its corpus and refused at the others ({_python_releases()}); the other
  Python tokenizers are refused, each with its reason. The classes a folder of an
  architecture vLLM starts for names by
  `tokenizer_class` while their own model types start none (BartphoTokenizer,
  ClvpTokenizer, GPTNeoXJapaneseTokenizer, MyT5Tokenizer, ProphetNetTokenizer, SpeechT5Tokenizer,
  VitsTokenizer: `real_py_named_` corpus) are
  verified against vLLM {", ".join(sorted(_NAMED_RELEASES))} and refused at other
  releases; at vLLM 0.29.0, which starts none of their own model types' architectures,
  BlenderbotSmallTokenizer, M2M100Tokenizer, MarianTokenizer, PLBartTokenizer,
  Speech2TextTokenizer and Wav2Vec2CTCTokenizer are verified so, each named by a GPT-2
  folder (`real_py_gpt2_` corpus); SentencePieceBackend itself, named so
  (`real_convgap_` corpus), against vLLM
  {", ".join(sorted(PYTHON_CODECS["SentencePieceBackend"].releases or ()))}. Verified
  against vLLM's render servers on another model's real vocabulary under the class's
  format: {"; ".join(f"{n} ({c.borrowed})" for n, c in
                                       sorted(PYTHON_CODECS.items()) if c.borrowed)}. For a model
  type registering one, the row says which of the type's architectures vLLM {PROBED}'s
  model registry accepts when its render server starts
  (`prefixkey/render/_hf_startup_facts.py`, written by running that step:
  `tools/probe_vllm_startup.py`); a folder naming only architectures it refuses is refused
  as such. Other releases' registries differ (vLLM 0.29.0's accepts far fewer of these
  architectures: `_hf_startup_facts_0_29_0.py` and the other releases' modules): with
  `--vllm-version`, a reproduced Python tokenizer's folder is refused when that release
  does not start for its architectures, or was not probed;
- **mistral**: `--tokenizer-mode mistral`, rendered with mistral_common
  ([render-mistral.md](render-mistral.md));
- **harmony**: the chat of these model types renders with Harmony
  ([render-harmony.md](render-harmony.md)); their tokenizer (completions) takes the
  path shown beside it;
- **encoder**: vLLM's tokenizer mode for the architecture (switched from `auto`, or
  `--tokenizer-mode`) renders chat with a Python encoder (`prefixkey/render/_encoders.py`,
  [render-deepseek.md](render-deepseek.md)); its tokenizer is
  `TokenizersBackend.from_pretrained`: tokenizer.json as is, whatever the hub class
  (the path shown beside it; the rows mark these model types with the mode);
- **refused**: why is given.

A folder whose config is an encoder-decoder's renders its chat as any other (verified on
mBART's, and at vLLM 0.29.0, which starts no mBART architecture, DETR's: `real_encdec_`
corpus; and on the SentencePiece Python classes': `real_py_spm_`),
and every completion (text or token ids) is vLLM's 400 "No token_ids rendered"
({_encdec_releases()}): vLLM
answers a completion with the encoder prompt's token ids, which its renderer leaves
empty. That is
`is_encoder_decoder` in `config.json`, else the default of the model type's config class,
true for {", ".join(f"`{t}`" for t in sorted(facts.ENCODER_DECODER_TYPES))}.

The WordPiece and Unigram rebuilds ({", ".join(_NON_BPE)}) are verified against vLLM's
answers on `tokenizer.json` files written from real vocabularies (llama.cpp's GGUF
vocabularies of bge-small-en-v1.5, which is bert-base-uncased's WordPiece vocabulary, and
of an XLM-RoBERTa SentencePiece model with its scores and charsmap, as the llama-cpp-python
0.3.36 sdist ships them), not on the models' own `tokenizer.json` files (none was found
in the package registries); the folders are tests/render/real/ (`real_wu_` and
`real_wu2_` corpora), replayed as vLLM {_wu_releases()} answered them. MBartTokenizer's
and MBart50Tokenizer's folders are that XLM-RoBERTa vocabulary (mBART's SentencePiece
model) with their language codes and `<mask>` appended as transformers' MBart converters
append them (`real_lang_` corpus).
PegasusTokenizer, XGLMTokenizer, RemBertTokenizer, ReformerTokenizer and SplinterTokenizer
(`real_spm_` corpus) are replayed as vLLM {_corpus_releases("real_spm_")} answered them.

{_encoder_text()}
Two legacy files change no row. transformers' `added_tokens.json` is read as
`from_pretrained` reads it at every release (transformers 5.17, 5.19 and 5.24 share the
code: `prefixkey/render/_hf_specials.py` `legacy_added_tokens`): only when
`tokenizer_config.json` has no `added_tokens_decoder` (beside one the file is never
opened); its tokens, special when their text is a named or an
extra special token (then not normalized), join tokenizer.json's own added tokens (which
win an id both give) and are added by their text, at their vocabulary id or the next free
one, whatever id the file gives. A Python tokenizer keeps the file's ids (a piece of its
own equal to one takes it; a named token's text in the file moves the id the class adds
around a prompt): reproduced for the word-piece classes (RoCBert, BertJapanese,
ProphetNet; `real_pyadded_` corpus, vLLM {_corpus_releases("real_pyadded_")}), and for
PerceiverTokenizer and CanineTokenizer (compared with every release's own
`get_tokenizer`: `tests/units/test_python_added_tokens.py`; a one-character token a byte
piece can equal, or an id of the class's own tokens, refused), refused for the other
Python classes (ByT5's sentinel ids move with the file's tokens). A processor's
`chat_template.json` is read only by a processor: for a model type transformers has no
processor class for (no `processor_class` named, no
processor file), vLLM's AutoProcessor lookup falls back to the tokenizer and renders with
the tokenizer's template, so the file is unused; with a processor it is refused, but for
the vision families prefixkey expands. Both verified against vLLM
{_corpus_releases("real_files_")} (`real_files_` corpus: every folder at each).

A `tokenizer_class` in `tokenizer_config.json` can change a row (see the second table);
`auto_map` (the model's own tokenizer code) is refused, except for the model types whose
hub class transformers ignores; {_byte_level_text()}; a `--model`/`--tokenizer` name matching
{", ".join(f"`{p}`" for p in facts.BACKEND_NAME_PATTERNS)} loads as is.
"""


def _path_text(path: str, recipe: str | None) -> str:
    if path == "as_is":
        return "as is"
    if path == "rebuilt":
        return f"rebuilt ({recipe})" if recipe else "rebuilt, refused"
    if path == "python":
        return f"python ({recipe})"
    if path == "converted":
        return f"converted ({recipe})" if recipe else "converted, refused"
    return path


def model_type_rows() -> list[str]:
    rows = ["| model type | class (no tokenizer_class) | path | why | without tokenizer.json |",
            "|---|---|---|---|---|"]
    for model_type in sorted(facts.CONFIG_MODEL_TYPES | set(facts.REGISTERED_CLASS)):
        architecture, mode = _ENCODER_TYPES.get(model_type, (None, None))
        decision, converted = (decide_tokenizer(
            model_type=model_type, architectures=[architecture] if architecture else [],
            tokenizer_mode="auto", tokenizer_config={}, config={"model_type": model_type},
            name="/model", has_tokenizer_json=has) for has in (True, False))
        harmony = ("harmony; tokenizer " if model_type in HARMONY_MODEL_TYPES
                   else f"encoder `{mode}`; tokenizer " if mode else "")
        rows.append(f"| `{model_type}` | {decision.tokenizer_class or '—'} | "
                    f"{harmony}{_path_text(decision.path, decision.recipe)} | "
                    f"{decision.why.replace('|', '/')} | "
                    f"{_path_text(converted.path, converted.recipe)} |")
    return rows


def class_rows() -> list[str]:
    rows = ["| tokenizer_class | class transformers builds | path | why "
            "| without tokenizer.json |", "|---|---|---|---|---|"]
    for name in sorted(n for n in facts.CLASSES if not n.endswith("Fast")
                       or n == "PreTrainedTokenizerFast"):
        built = tokenizer_config_class(name, BASE_FACTS)
        decision, converted = (class_path(built, has_tokenizer_json=has, why=name)
                               for has in (True, False))
        rows.append(f"| `{name}` | {built[0]} | "
                    f"{_path_text(decision.path, decision.recipe)} | "
                    f"{decision.why.removeprefix(name + ': ')} | "
                    f"{_path_text(converted.path, converted.recipe)} |")
    return rows


def render() -> str:
    return "\n".join([HEADER, "## Per model type", "", *model_type_rows(), "",
                      "## Per tokenizer class (a `Fast` suffix names the same class)", "",
                      *class_rows(), ""])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if OUT.read_text("utf-8") != text:
            print(f"{OUT} is stale: run python tools/hf_tokenizer_table.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
