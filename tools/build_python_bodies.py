"""Build ``tests/render/real_py_bodies.jsonl``: bodies over folders whose tokenizer is a
Python tokenizer transformers encodes byte by byte or code point by code point.

Maintainer tool. Each folder of :data:`FOLDERS` (tests/render/python_models/<name>/,
committed: no tokenizer file is needed) is a GPT-2 architecture vLLM serves, with a
``tokenizer_config.json`` naming the class (ByT5Tokenizer with google/byt5-small's
settings, PerceiverTokenizer, CanineTokenizer) and a small chat template over the
class's named tokens. The bodies exercise what these classes do: multi-byte UTF-8,
the added tokens written in the text (with the whitespace ByT5's strip around them),
whitespace ``str.strip`` takes and Rust's would not (``\\x1c``), ByT5's end-of-sequence
token added only when absent, truncation (room kept for the special tokens), and chat.
``python tools/harvest_render.py --bodies tests/render/real_py_bodies.jsonl --out
tests/render/real_py_vectors.jsonl --port 18750`` records vLLM 0.31's answers.

With ``--code-llama`` it writes ``tests/render/real_py_codellama_bodies.jsonl`` instead:
bodies over tests/render/real/code_llama (the @lenml llama2 package's real tokenizer.json,
Mistral 7B's vocabulary, under a
CodeLlamaTokenizer ``tokenizer_config.json``), in an order that matters: bodies without
``<FILL_ME>`` first, then bodies whose text holds it (CodeLlamaTokenizer's infilling
call), then the first ones again (``after-fill/``), to record what that call leaves
behind in vLLM's tokenizer. Harvested with ``--bodies
tests/render/real_py_codellama_bodies.jsonl --out
tests/render/real_py_codellama_vectors.jsonl --port 18750``.

With ``--ctc``: ``tests/render/real_py_ctc_bodies.jsonl``, over two Wav2Vec2CTCTokenizer
folders (model type ``wav2vec2``, a ``vocab.json``); with ``--vocab``:
``real_py_vocab_bodies.jsonl`` over EsmTokenizer, MgpstrTokenizer and DiaTokenizer
folders; with ``--bpe``: ``real_py_bpe_bodies.jsonl`` over CTRLTokenizer and
BlenderbotSmallTokenizer real folders (tests/render/real/ctrl_rule,
blenderbot_small_rule); with ``--wordpiece``: ``real_py_wp_bodies.jsonl`` over
RoCBertTokenizer and BertJapaneseTokenizer real folders (roc_bert_rule,
bert_japanese_rule); with ``--fairseq``: ``real_py_fairseq_bodies.jsonl`` over
PhobertTokenizer and BertweetTokenizer real folders (phobert_rule, bertweet_rule);
with ``--named``: ``real_py_named_bodies.jsonl`` over GPT-2 folders naming
SpeechT5Tokenizer, BartphoTokenizer, ProphetNetTokenizer and VitsTokenizer by
``tokenizer_class`` (:data:`NAMED_FOLDERS`); with ``--gpt2``: ``real_py_gpt2_bodies.jsonl``
over GPT-2 twins of the classes whose own model types vLLM 0.29.0 does not start for
(MarianTokenizer, M2M100Tokenizer, PLBartTokenizer, Speech2TextTokenizer,
BlenderbotSmallTokenizer, Wav2Vec2CTCTokenizer: :data:`GPT2_FOLDERS`), each the class's
folder with only ``config.json`` a GPT-2 one (and the class named by ``tokenizer_class``
where the model type named it); harvested the same way.

Usage::

    python tools/build_python_bodies.py [--out tests/render/real_py_bodies.jsonl]
    python tools/build_python_bodies.py --code-llama
    python tools/build_python_bodies.py --ctc
    python tools/build_python_bodies.py --vocab
    python tools/build_python_bodies.py --bpe
    python tools/build_python_bodies.py --wordpiece
    python tools/build_python_bodies.py --fairseq
    python tools/build_python_bodies.py --named
    python tools/build_python_bodies.py --gpt2
    python tools/build_python_bodies.py --keep-release 0.32.0 /tmp/r/032

``--keep-release RELEASE DIR`` keeps, compactly (tools/release_vectors.py's ``compact``),
the answers another release's server gave for these corpora (``DIR/<corpus>vectors.jsonl``,
harvested with ``--vllm-python /work/venvs/vllmXYZ/bin/python``) as
``tests/render/releases/<RELEASE>/<corpus>vectors.jsonl``; they are replayed by
tests/render/test_real_py_releases.py.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus_io import RENDER_DIR, folder_lines, text_prompts, write_bodies

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
FOLDERS = ("byt5", "perceiver", "canine")
TEXTS = {
    "ascii": "Hello world",
    "leading-space": " Hello world ",
    "utf8": "Grüße aus Köln — 日本語 😀👩‍💻 ∑x²",
    "whitespace": "  runs \t\t tabs\n\nnewlines\r\n",
    "empty": "",
    "one-space": " ",
    "byt5-specials": "a </s> b <pad>c<unk> <extra_id_0>x<extra_id_124> <extra_id_125>",
    "byt5-strip": "x \t</s>\n y\x1c</s>\x1cz \u00a0<pad>\u2003w",
    "byt5-ends-eos": "ends with </s>",
    "byt5-ends-eos-space": "ends with </s>  ",
    "perceiver-specials": "[CLS]a [SEP] b[MASK] [PAD][BOS][EOS] [UNK]",
    "canine-specials": "a\ue000b \ue001 c \ue003d \t\ue003e\x00f\ue002",
    "canine-strip": "x\x1c\ue003 y\u3000\ue003",
    "nul-and-controls": "nul\x00 bell\x07 del\x7f",
}


def _completions(name: str) -> list[tuple[str, dict[str, Any]]]:
    bodies = text_prompts(TEXTS)
    bodies.append(("prompt-list", {"prompt": [TEXTS["utf8"], TEXTS["byt5-specials"]]}))
    bodies.append(("truncate", {"prompt": TEXTS["utf8"] * 3, "truncate_prompt_tokens": 9}))
    bodies.append(("truncate-no-specials", {"prompt": TEXTS["utf8"] * 3,
                                            "truncate_prompt_tokens": 9,
                                            "add_special_tokens": False}))
    bodies.append(("truncate-ends-eos", {"prompt": "abcdefghij</s>",
                                         "truncate_prompt_tokens": 5}))
    bodies.append(("truncate-right", {"prompt": TEXTS["utf8"], "truncate_prompt_tokens": 6,
                                      "truncation_side": "right"}))
    bodies.append(("too-long", {"prompt": "x" * 2100}))
    bodies.append(("token-ids", {"prompt": [5, 6, 7]}))
    return [(f"completion-{i}", {"model": name, **b}) for i, b in bodies]


def _chat(name: str) -> list[tuple[str, dict[str, Any]]]:
    user = {"role": "user", "content": TEXTS["utf8"]}
    bodies: list[tuple[str, dict[str, Any]]] = [
        ("user", {"messages": [user]}),
        ("system-user", {"messages": [{"role": "system", "content": TEXTS["whitespace"]},
                                      {"role": "user", "content": TEXTS["byt5-strip"]}]}),
        ("multi-turn", {"messages": [user, {"role": "assistant", "content": "ok </s>"},
                                     {"role": "user", "content": TEXTS["canine-specials"]}]}),
        ("add-special-tokens", {"messages": [user], "add_special_tokens": True}),
        ("continue-final", {"messages": [user, {"role": "assistant", "content": " Grüße"}],
                            "continue_final_message": True, "add_generation_prompt": False}),
        ("input-text", {"messages": [{"role": "user", "content": [
            {"type": "input_text", "text": "Responses API part"}]}]}),
    ]
    return [(f"chat-{i}", {"model": name, **b}) for i, b in bodies]


def build() -> list[dict[str, Any]]:
    lines = []
    for folder in FOLDERS:
        name = f"py-{folder}"
        server = {"--served-model-name": name}
        lines += folder_lines(folder, server,
                              ((CHAT, _chat(name)), (COMPLETIONS, _completions(name))),
                              f"python_models/{folder}")
    return lines


CODE_LLAMA_TEXTS = {
    "code": "def f(x):\n    return {'a': [1, 2]}  # done\n",
    "after-special": "a</s>b c<s>d",
    "lead-metaspace": "▁lead and  two  spaces",
    "leading-space": " leading space",
    "infill-tokens": "▁<PRE> x ▁<SUF>y ▁<MID> z▁<EOT>",
    "accents": "Grüße — 日本語 😀",
}
FILL_TEXTS = {
    "fill": "def f(x):\n    <FILL_ME>\n    return y",
    "fill-start": "<FILL_ME> tail",
    "fill-end": "head <FILL_ME>",
    "fill-twice": "a<FILL_ME>b<FILL_ME>c",
}


def build_code_llama() -> list[dict[str, Any]]:
    name = "real-code_llama"
    server = {"--served-model-name": name}
    plain: list[tuple[str, str, dict[str, Any]]] = []
    for key, text in CODE_LLAMA_TEXTS.items():
        plain.append((COMPLETIONS, f"completion-{key}", {"prompt": text}))
        plain.append((COMPLETIONS, f"completion-{key}-no-specials",
                      {"prompt": text, "add_special_tokens": False}))
    plain.append((COMPLETIONS, "completion-truncate", {"prompt": CODE_LLAMA_TEXTS["code"] * 3,
                                                       "truncate_prompt_tokens": 7}))
    plain.append((CHAT, "chat-user", {"messages": [
        {"role": "user", "content": CODE_LLAMA_TEXTS["code"]}]}))
    plain.append((CHAT, "chat-multi-turn", {"messages": [
        {"role": "user", "content": CODE_LLAMA_TEXTS["accents"]},
        {"role": "assistant", "content": CODE_LLAMA_TEXTS["after-special"]},
        {"role": "user", "content": CODE_LLAMA_TEXTS["lead-metaspace"]}]}))
    fill: list[tuple[str, str, dict[str, Any]]] = []
    for key, text in FILL_TEXTS.items():
        fill.append((COMPLETIONS, f"completion-{key}", {"prompt": text}))
        fill.append((COMPLETIONS, f"completion-{key}-no-specials",
                     {"prompt": text, "add_special_tokens": False}))
    fill.append((CHAT, "chat-fill", {"messages": [
        {"role": "user", "content": FILL_TEXTS["fill"]}]}))
    lines = []
    for phase, bodies in (("", plain), ("", fill), ("after-fill/", plain)):
        for endpoint, ident, body in bodies:
            lines.append({"body": {"model": name, **body}, "endpoint": endpoint,
                          "id": f"code_llama/{phase}{ident}",
                          "model_dir": "real:code_llama", "server": server})
    return lines


CTC_FOLDERS = ("wav2vec2", "wav2vec2_lower")
CTC_TEXTS = {
    "upper": "HELLO WORLD IT'S A TEST",
    "lower": "hello world it's a test",
    "spaces": " A  B \tC\n",
    "specials": "A <s> B</s>C <unk>D<pad> <laugh> E",
    "multi-char": "THE TH xTHx  TH  ",
    "strip-x1c": "x\x1c<s>\x1cy \u00a0</s>\u2003z",
    "delimiter": "A|B || C",
    "other-chars": "Grüße, 日本 😀!",
}


#: Vocabulary-file and byte classes: EsmTokenizer (esm2's vocab.txt, model type esm),
#: MgpstrTokenizer (mgp-str-base's vocab.json) and DiaTokenizer (no file).
VOCAB_FOLDERS = ("esm", "mgpstr", "dia")
VOCAB_TEXTS = {
    "protein": "MKTAYIAKQRQISFVKSHFSRQ",
    "protein-spaces": "MKT AYI  AKQ\tRQ\n",
    "lower-and-specials": "mk ta<mask>Y <cls>X<eos> zz <null_1>",
    "mgp": "hello world 123 [GO]x[s] ABC",
    "dia": "[S1] Hello there. [S2] Hi! (laughs) é\x00",
    "strip-x1c": "LA\x1c<eos>\x1cG \u00a0<pad>\u2003z",
    "other-chars": "Grüße, 日本 😀!",
}


def build_ctc(folders: tuple[str, ...] = CTC_FOLDERS,
              texts: dict[str, str] = CTC_TEXTS) -> list[dict[str, Any]]:
    """Wav2Vec2CTCTokenizer folders (model type wav2vec2, no tokenizer_class): the
    960h vocabulary, and one upper-casing with two multi-character entries; or, with
    other folders and texts, the vocabulary-file corpus."""
    lines = []
    for folder in folders:
        name = f"py-{folder}"
        server = {"--served-model-name": name, "--max-model-len": 512}
        bodies: list[tuple[str, str, dict[str, Any]]] = []
        for key, text in texts.items():
            bodies.append((COMPLETIONS, f"completion-{key}", {"prompt": text}))
            bodies.append((COMPLETIONS, f"completion-{key}-no-specials",
                           {"prompt": text, "add_special_tokens": False}))
        first = next(iter(texts.values()))
        bodies.append((COMPLETIONS, "completion-truncate", {"prompt": first,
                                                            "truncate_prompt_tokens": 5}))
        bodies.append((COMPLETIONS, "completion-too-long", {"prompt": "A" * 600}))
        some = list(texts.values())
        bodies.append((CHAT, "chat-user", {"messages": [
            {"role": "user", "content": some[3]}]}))
        bodies.append((CHAT, "chat-multi-turn", {"messages": [
            {"role": "user", "content": some[1]},
            {"role": "assistant", "content": some[4]},
            {"role": "user", "content": some[2]}]}))
        for endpoint, ident, body in bodies:
            lines.append({"body": {"model": name, **body}, "endpoint": endpoint,
                          "id": f"{folder}/{ident}", "model_dir": f"python_models/{folder}",
                          "server": server})
    return lines


#: fastBPE-style classes over CLIP's merges written as their vocab.json/merges.txt
#: (tests/real_models.py's ``clip_fastbpe``): CTRLTokenizer (model type ctrl) and
#: BlenderbotSmallTokenizer (blenderbot-small).
BPE_FOLDERS = ("ctrl_rule", "blenderbot_small_rule")
BPE_TEXTS = {
    "prose": "Hello world, it's a fine day (isn't it?) -- yes!",
    "case": "THE Quick BROWN fox's TAIL: İstanbul ΑΣ Straße",
    "whitespace": "  runs \t\t tabs\n\nnewlines\r\n end \n",
    "x1c": "x\x1cy\x1d z \u00a0a\u2003b\u3000c",
    "punctuation": "..,,!!?? (a)(b) 'q' don''t a.b,c!d?e",
    "specials": "<unk> a<unk>b __start__x __end__ __unk__y__null__ __newln__",
    "markers": "@@ a@@ @@b </w> a</w>b",
    "other-chars": "Grüße aus Köln — 日本語 😀 e\u0301",
    "numbers": "12345 3.14 1,000,000 x2 2x",
}


#: CTRL's bpe over fairseq dictionaries and fastBPE codes (CLIP's, ``clip_fastbpe``):
#: PhobertTokenizer and BertweetTokenizer (normalization off), named by GPT-2 folders.
FAIRSEQ_FOLDERS = ("phobert_rule", "bertweet_rule")
FAIRSEQ_TEXTS = {**BPE_TEXTS, "specials": "<s> a</s>b <unk> <pad><mask> __start__ <s>x",
                 "tweet": "@user check https://t.co/x :) #fun RT 😂 cooool!!!"}


def build_bpe(folders: tuple[str, ...] = BPE_FOLDERS,
              texts: dict[str, str] = BPE_TEXTS) -> list[dict[str, Any]]:
    """CTRL's and Blenderbot small's BPE over real folders: the vocabulary-file corpus's
    shape, each folder a composed real one served as ``real-<folder>``, the too-long
    prompt one-character words (a run of one letter merges into few tokens)."""
    lines = build_ctc(folders, texts)
    for line in lines:
        folder = line["model_dir"].removeprefix("python_models/")
        line["model_dir"] = f"real:{folder}"
        line["body"]["model"] = line["server"]["--served-model-name"] = f"real-{folder}"
        if line["id"].endswith("/completion-too-long"):
            line["body"]["prompt"] = "x " * 600
    return lines


#: BERT's Python WordPiece classes over bert-base-uncased's vocab.txt (llama.cpp's GGUF
#: vocabulary, tests/real_models.py's ``wordpiece_vocab_txt``): RoCBertTokenizer (model
#: type roc_bert, lower-casing, CJK spaced) and BertJapaneseTokenizer (basic/wordpiece,
#: cased, named by a GPT-2 folder's tokenizer_class; and with its character sub-words).
WORDPIECE_FOLDERS = ("roc_bert_rule", "bert_japanese_rule", "bert_japanese_char_rule")
WORDPIECE_TEXTS = {
    "prose": "Hello world, it's a fine day (isn't it?) -- yes! unaffable",
    "case-accents": "THE Café naïve résumé ÉCOLE e\u0301 İstanbul ΑΣ ß",
    "whitespace": "  runs \t\t tabs\n\nnewlines\r\n end \u2028x\u3000y",
    "controls": "x\x1cy\x00z\ufffd \x07bell\u200bq",
    "specials": "[CLS] a[SEP]b [UNK] [PAD][MASK] [CL\x00S] [cls]",
    "cjk": "東京タワー は 高い 中文字 한국어",
    "pieces": "##ing un##able ### x" + "y" * 101 + " ok",
    "punctuation": "$5.00 & 100% @home #tag ^_^ `q` «quoted» ¿qué?",
    "other-chars": "Grüße aus Köln — 😀 ﬁ ①",
}


def build_wordpiece() -> list[dict[str, Any]]:
    """RoCBert's and BertJapanese's WordPiece over real folders, as :func:`build_bpe`."""
    return build_bpe(WORDPIECE_FOLDERS, WORDPIECE_TEXTS)


#: Python classes a GPT-2 folder names by tokenizer_class (their own model types vLLM
#: does not start for): SpeechT5Tokenizer and BartphoTokenizer over sentencepiece's test
#: model (Bartpho's dict.txt its pieces), ProphetNetTokenizer over bert-base-uncased's
#: vocabulary, VitsTokenizer (phonemize off) over a Wav2Vec2 CTC vocab.json, normalized
#: and raw (no blanks, Romanian), and with its default phonemize (vLLM's answer to a
#: folder prefixkey refuses), MyT5Tokenizer over a byte_maps.json written for it, and
#: GPTNeoXJapaneseTokenizer over that vocabulary with its own lines after it (and
#: ClvpTokenizer's folder, :data:`CLVP_TEXTS`).
NAMED_FOLDERS = ("speecht5_named", "bartpho_named", "prophetnet_named", "vits_named",
                 "vits_raw_named", "vits_phonemize_named", "myt5_named",
                 "gpt_neox_japanese_named")
NAMED_TEXTS = {
    "prose": "Hello world, it's a fine day (isn't it?) -- yes! 12,345 unaffable",
    "upper": "THE CAT SAT <laugh> TH WITH HER DOG'S BONE",
    "whitespace": "  runs \t\t tabs\n\nnewlines\r\n end \u2028x\u3000y ",
    "specials": "<s> a</s>b <unk> <pad><mask> [SEP]x [X_SEP] [MASK] [UNK] [PAD] <laugh>",
    "case-accents": "THE Café naïve résumé ÉCOLE e\u0301 İstanbul ΑΣ ß ț Ț ţ",
    "controls": "x\x1cy\x00z\ufffd \x07bell\u200bq \u00a0<pad>\u2003</s>",
    "cjk": "東京タワー は 高い 中文字 한국어",
    "other-chars": "Grüße aus Köln — 😀 ﬁ ① 1,000",
    "pieces": "##ing un##able x" + "y" * 101 + " ok \u2581lead",
    "rewrites": "the thing é ö x théé <extra_id_0>x<extra_id_124> <extra_id_125> ends </s>",
    "japanese": ("東京 とうきょう ー〜 😀 x\ty\r\nz\u3000w — \u2212 ¡ \u01c0 \u02b9 \u0300 ‖ ⯿ "
                 "<SP><BR> "
                 "<<SP>>< <|startoftext|>a<|endoftext|>"),
}

#: ClvpTokenizer over Qwen3's byte-level BPE as vocab.json and merges.txt: the texts
#: above and its normalizer's own (numbers, amounts, ordinals, abbreviations).
CLVP_TEXTS = {
    **NAMED_TEXTS,
    "amounts": ("I have $1.50, $1, $0.01, $.5, $2.5.3, £5 and 1,000,000 things in 1999 or "
                "2005 or 1900 or 2000."),
    "ordinals": "The 1st, 2nd, 3rd, 11th, 12th, 21st, 101st and 2000th; 3.14159 and 0.5.",
    "abbreviations": "Mr. Smith, MRS. jones, Dr. Who, st. louis, Co. Ltd. Capt. Esq. Ft. rev.",
    "quotes-spaces": "\"quoted\" it's we'll they'd I'm  x   y \t z\n\nend  ",
    "huge": "huge 123456789012345678901234 and 999999999999999999 and 12,34,5 1,2",
    "clvp-specials": "[STOP] a[UNK]b <|endoftext|>c [SPACE] trailing ",
}


def build_named() -> list[dict[str, Any]]:
    """The classes named by tokenizer_class (:data:`NAMED_FOLDERS`), then Clvp's folder
    (appended: the other folders' bodies are unchanged)."""
    return (build_bpe(NAMED_FOLDERS, NAMED_TEXTS)
            + build_bpe(("clvp_named",), CLVP_TEXTS))


#: GPT-2 twins (tests/render/real/, python_models/) of the folders of classes whose own
#: architectures vLLM 0.29.0 starts none of, and their corpora's bodies: that release
#: tokenizes them named in a folder it starts for.
GPT2_FOLDERS = {"marian_gpt2": "spm", "m2m_100_gpt2": "spm", "plbart_gpt2": "spm",
                "speech_to_text_gpt2": "spm", "blenderbot_small_gpt2": "bpe",
                "wav2vec2_gpt2": "ctc"}


def build_gpt2() -> list[dict[str, Any]]:
    """The GPT-2 twins' bodies, each its class's corpus's (:data:`GPT2_FOLDERS`)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import build_real_pyspm_bodies as spm

    lines: list[dict[str, Any]] = []
    for folder, kind in GPT2_FOLDERS.items():
        if kind == "spm":
            name = f"real-{folder}"
            lines += folder_lines(folder, {"--served-model-name": name, "--max-model-len": 512},
                                  ((CHAT, spm._chat(name)), (COMPLETIONS, spm._completions(name))))
        else:
            lines += build_bpe((folder,)) if kind == "bpe" else build_ctc((folder,))
    return lines


CORPORA = ("real_py_", "real_py_ctc_", "real_py_vocab_", "real_py_codellama_",
           "real_py_bpe_", "real_py_wp_", "real_py_fairseq_", "real_py_named_",
           "real_py_gpt2_")


def keep_release(release: str, harvest: Path, corpora: tuple[str, ...] = CORPORA) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from release_vectors import compact

    for corpus in corpora:
        source = harvest / f"{corpus}vectors.jsonl"
        if not source.is_file():  # the release's server did not start for its folders
            continue
        records = [json.loads(line) for line in source.read_text("utf-8").splitlines()]
        out = RENDER_DIR / "releases" / release / f"{corpus}vectors.jsonl"
        out.write_text("".join(json.dumps(compact(r), ensure_ascii=False, sort_keys=True)
                               + "\n" for r in records), "utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep-release", nargs=2, metavar=("RELEASE", "DIR"))
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--code-llama", action="store_true")
    parser.add_argument("--ctc", action="store_true")
    parser.add_argument("--vocab", action="store_true")
    parser.add_argument("--bpe", action="store_true")
    parser.add_argument("--wordpiece", action="store_true")
    parser.add_argument("--fairseq", action="store_true")
    parser.add_argument("--named", action="store_true")
    parser.add_argument("--gpt2", action="store_true")
    args = parser.parse_args(argv)
    if args.keep_release:
        keep_release(args.keep_release[0], Path(args.keep_release[1]))
        return 0
    corpus = ("real_py_codellama_" if args.code_llama else "real_py_ctc_" if args.ctc
              else "real_py_vocab_" if args.vocab else "real_py_bpe_" if args.bpe
              else "real_py_wp_" if args.wordpiece
              else "real_py_fairseq_" if args.fairseq
              else "real_py_named_" if args.named
              else "real_py_gpt2_" if args.gpt2 else "real_py_")
    out = args.out or RENDER_DIR / f"{corpus}bodies.jsonl"
    lines = (build_code_llama() if args.code_llama else build_ctc() if args.ctc
             else build_ctc(VOCAB_FOLDERS, VOCAB_TEXTS) if args.vocab
             else build_bpe() if args.bpe else build_wordpiece() if args.wordpiece
             else build_bpe(FAIRSEQ_FOLDERS, FAIRSEQ_TEXTS) if args.fairseq
             else build_named() if args.named
             else build_gpt2() if args.gpt2 else build())
    write_bodies(out, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
