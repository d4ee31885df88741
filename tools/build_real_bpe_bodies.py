"""Build ``tests/render/real_bpe_bodies.jsonl``: bodies over folders whose tokenizer class is one
of the byte-level BPE classes rebuilt from a real vocabulary (CLIPTokenizer, WhisperTokenizer).

Maintainer tool. Each folder of :data:`FOLDERS` (tests/render/real/<name>/) holds a
tokenizer.json built from a real model's files (OpenAI CLIP's merges from open_clip_torch's
wheel, Whisper's ``multilingual.tiktoken`` from openai-whisper's sdist:
tests/render/real_models.json, tests/real_models.py) under a ``tokenizer_config.json``
whose ``tokenizer_class`` makes transformers pick the class: vLLM's answer for that folder
is the ground truth of the class's rebuild. The texts are those of
tools/build_real_rebuild_bodies.py and more of what these classes change: CLIP lowercases,
folds whitespace runs and appends ``</w>`` to each word; Whisper wraps the text in its
prefix tokens. ``tools/harvest_render.py --bodies tests/render/real_bpe_bodies.jsonl --out
tests/render/real_bpe_vectors.jsonl --port 18700`` records vLLM 0.31's answers; the
``real_bpe_029_``, ``real_bpe_030_`` and ``real_bpe_032_`` copies are harvested with
``--vllm-python /work/venvs/vllm0XY/bin/python``; the same for ``real_bpe_more_``.

Usage::

    python tools/build_real_bpe_bodies.py
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import build_real_rebuild_bodies as rebuild
from corpus_io import RENDER_DIR, write_bodies

#: Each corpus and its folders: the first (CLIPTokenizer, WhisperTokenizer), then
#: ``real_bpe_more_`` (OpenAIGPTTokenizer, HerbertTokenizer, DebertaTokenizer,
#: BlenderbotTokenizer, Siglip2Tokenizer over Gemma 3's vocabulary as SigLIP 2's is,
#: NougatTokenizer), whose texts add mask tokens; ``real_bpe_spm_``: CodeLlamaTokenizer
#: (byte-fallback BPE over the @lenml llama2 package's vocabulary, Mistral 7B's), whose
#: texts add its infilling tokens.
CORPORA = {"real_bpe_": ("clip_rule", "whisper_rule"),
           "real_bpe_more_": ("openai_gpt_rule", "herbert_rule", "deberta_rule",
                              "blenderbot_rule", "siglip2_rule", "nougat_rule"),
           "real_bpe_spm_": ("codellama_rule",)}
#: The releases whose own servers answer the same bodies (one copy of the corpus each).
RELEASES = ("029", "030", "032")
MORE_TEXTS = {
    "upper-specials": "<|STARTOFTEXT|>Shout<|EndOfText|> and <|startoftext|>quiet<|endoftext|>",
    "whisper-specials": ("<|startoftranscript|><|en|><|transcribe|><|notimestamps|> Hi"
                         "<|0.00|> there<|1.50|><|nospeech|>"),
    "long-word": "Pneumonoultramicroscopicsilicovolcanoconiosis antidisestablishmentarianism",
    "whitespace-odd": "a\u3000b\u2003c\u00a0\u00a0d\ve\ff\u2028g\u0085h",
    "apostrophes": "it\u2019s JOHN'S don\u2019t 'quoted' rock'n'roll",
    "digits-long": "31415926535897932384626433 0x1F 1e-9 ٣٤٥ ①②",
    "emoji-zwj": "👨‍👩‍👧‍👦 🏳️‍🌈 🇫🇷 ✌🏽 😀😀😀",
}
MASK_TEXTS = {
    "masks": "fill [MASK] and <mask> here, [MASK][MASK] <mask>. <s>x</s> [CLS]y[SEP]",
    "accents-upper": "ÉCOLE Ünïcödé ÀÉÎÕÜ straße ǅ ﬃ",
}
INFILL_TEXTS = {
    # (a text with <FILL_ME> is CodeLlama's infilling split, refused: not in the corpus)
    "infill": "<PRE> def f(x):<SUF>\n    return y <MID>▁<PRE>a▁<SUF>b▁<MID>c▁<EOT><FILL>",
}

#: Line breaks json.dumps leaves as they are (it escapes the control characters).


def build(corpus: str = "real_bpe_") -> list[dict[str, Any]]:
    saved = dict(rebuild.TEXTS)
    rebuild.TEXTS.update(MORE_TEXTS)
    if corpus != "real_bpe_":
        rebuild.TEXTS.update(MASK_TEXTS)
    if corpus == "real_bpe_spm_":
        rebuild.TEXTS.update(INFILL_TEXTS)
    try:
        return rebuild.build(CORPORA[corpus])
    finally:
        rebuild.TEXTS.clear()
        rebuild.TEXTS.update(saved)


def main() -> int:
    for corpus in CORPORA:
        _write(corpus, build(corpus))
    return 0


def _write(corpus: str, lines: list[dict[str, Any]]) -> None:
    for prefix in (corpus, *(f"{corpus}{r}_" for r in RELEASES)):
        write_bodies(RENDER_DIR / f"{prefix}bodies.jsonl", lines)


if __name__ == "__main__":
    raise SystemExit(main())
