"""Build ``tests/render/real_tiktoken_bodies.jsonl``: bodies over folders without tokenizer.json
whose tokenizer transformers converts from a tiktoken or tekken vocabulary file.

Maintainer tool. Each folder of :data:`FOLDERS` (tests/render/real/<name>/) holds a real
vocabulary file and no tokenizer.json: Meta's Llama 3 ``tokenizer.model`` (tiktoken
``base64 rank`` lines, llama-models' wheel) under the Hugging Face repository's
tokenizer_config.json (``llama3_tiktoken``), the same file as ``tiktoken.model`` under a
tokenizer_config.json with gaps in ``added_tokens_decoder``, ``extra_special_tokens`` and
``add_bos_token`` (``llama3_tiktoken_rule``); mistral_common's ``tekken.json`` files, one
alone (``mistral_nemo``, no template) and one given ``special_tokens`` under a
tokenizer_config.json with ``add_bos_token``/``add_eos_token`` (``mistral_tekken_rule``),
served with ``--tokenizer-mode hf`` (the mode vLLM's ``auto`` takes without
``consolidated*.safetensors`` weights). transformers' ``convert_to_native_format`` builds
the tokenizer from that file (render/_hf_tiktoken.py): vLLM's answer is the ground truth
of the conversion. ``tools/harvest_render.py --bodies tests/render/real_tiktoken_bodies.jsonl
--out tests/render/real_tiktoken_vectors.jsonl --port 19210`` records vLLM 0.31's answers;
the ``real_tiktoken_029_`` (the tiktoken folders: :data:`RELEASES`), ``_030_`` and
``_032_`` copies are harvested with ``--vllm-python /work/venvs/vllm0XY/bin/python``,
``_033_`` with 0.32's python and ``PYTHONPATH=/work/venvs/vllm033-overlay
VLLM_TARGET_DEVICE=cpu`` (docs/render-releases.md).

Usage::

    python tools/build_real_tiktoken_bodies.py
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import build_real_rebuild_bodies as rebuild
from corpus_io import RENDER_DIR, folder_lines, write_bodies

#: Each folder and the tokenizer mode its server runs.
FOLDERS = {"llama3_tiktoken": "auto", "llama3_tiktoken_rule": "auto",
           "mistral_nemo": "hf", "mistral_tekken_rule": "hf"}
#: The releases whose own servers answer the same bodies (one copy of the corpus each),
#: and the folders each copy holds: vLLM 0.29's hf mode passes no ``mistral_format=False``,
#: so transformers 5.24 loads a Mistral model type's tekken.json with MistralCommonBackend
#: there (render/_eras.py ``hf_mistral_format``): mistral_nemo's answers are then
#: mistral_common's, and its server does not start for mistral_tekken_rule ("Unknown
#: control token [IMG]").
RELEASES = {"029": ("llama3_tiktoken", "llama3_tiktoken_rule", "mistral_nemo"),
            "030": tuple(FOLDERS),
            "032": tuple(FOLDERS), "033": tuple(FOLDERS)}
TEXTS = {
    "specials-rule": ("<|begin_of_text|>hi<|eot_id|> x <|custom_lstrip|> y<|custom_last|>  z "
                      "<|extra_a|><|extra_b|><|reserved_token_128050|><|reserved_token_128201|>"),
    "specials-mistral": "<s>[INST]hi[/INST]</s> <unk>[THINK]<SPECIAL_20><SPECIAL_999> ok</s>",
    "reserved-llama": "<|reserved_special_token_5|><|start_header_id|>x<|end_header_id|>",
    "long-word": "Pneumonoultramicroscopicsilicovolcanoconiosis antidisestablishmentarianism",
    "emoji-zwj": "👨‍👩‍👧‍👦 🏳️‍🌈 🇫🇷 ✌🏽 😀😀😀",
    "bytes-odd": "\u0000\u0001 tab\there \x7f \ufeffbom \U0001f600\u200d",
}


def build(folders: tuple[str, ...] = tuple(FOLDERS)) -> list[dict[str, Any]]:
    saved = dict(rebuild.TEXTS)
    rebuild.TEXTS.update(TEXTS)
    try:
        lines = []
        for folder in folders:
            mode = FOLDERS[folder]
            name = f"real-{folder}"
            server = {"--served-model-name": name, "--max-model-len": 2048,
                      **({"--tokenizer-mode": mode} if mode != "auto" else {})}
            completions = rebuild._completions(name)
            completions.append(("completion-too-long", {
                "model": name, "prompt": rebuild.TEXTS["punct"] * 200}))
            lines += folder_lines(folder, server, ((rebuild.CHAT, rebuild._chat(name)),
                                                   (rebuild.COMPLETIONS, completions)))
        return lines
    finally:
        rebuild.TEXTS.clear()
        rebuild.TEXTS.update(saved)


def main() -> int:
    write_bodies(RENDER_DIR / "real_tiktoken_bodies.jsonl", build())
    for release, folders in RELEASES.items():
        write_bodies(RENDER_DIR / f"real_tiktoken_{release}_bodies.jsonl", build(folders))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
