"""Siglip2Tokenizer, and the other rebuilt BPE classes whose ``__init__`` passes
``str(unk_token)`` to their model, as each transformers release builds them
(render/_hf_backend.py ``derived_values``: ``unk_str``).

tests/render/test_real_drift_vectors.py replays vLLM 0.29's and 0.30's own answers for a
siglip2 folder (Qwen3's vocabulary, a null ``unk_token``), which transformers 5.24 loads
with Siglip2Tokenizer: its BPE's unk is then the text "None", a token of that vocabulary,
standing for every character the vocabulary lacks. Here real vocabularies (Gemma 3's, as
SigLIP 2's is, and Qwen3's) under the class's name and ``unk_token`` variants (the
file's, null, absent: the class's default, added as a special token) are loaded by
transformers itself in each release's scratch vLLM install (tests/vllm_venvs.py, as
vLLM's tokenizer loads them: ``AutoTokenizer.from_pretrained(folder,
truncation_side="left")``), texts of mixed case, accents, scripts, whitespace runs and
special tokens encoded, and prefixkey must give the same ids, or fail where transformers
fails. Skipped without the installs or the real folders' cache.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

TEXTS = ("Hello World", "HeLLo ÀÉÎ İstanbul ǅ ΣΑΣ ß", "café naïve e\u0301 日本語 🙂",
         "  lead and trail  ", "a  b\t\tc\n\nd\r\n", "\u00a0nbsp\u3000ideo\u200bzw",
         "▁x ▁▁y", "<bos>a<eos> <unk> <mask> <pad>", "<|im_start|>Hi None<|im_end|>", "")
_MISSING = object()
_ADDED_UNK = {"__type": "AddedToken", "content": "<unk>", "lstrip": False, "rstrip": False,
              "normalized": False, "single_word": False, "special": True}
#: name -> (real folder whose tokenizer.json and tokenizer_config.json it takes, class,
#: unk_token: a value, or _MISSING for none).
#: Qwen3's tokenizer_config.json has a null bos_token too, which CLIPTokenizer's
#: RobertaProcessing fails on (prefixkey refuses it); NllbTokenizer and
#: SeamlessM4TTokenizer fail on a null unk_token.
FOLDERS: dict[str, tuple[str, str, Any]] = {
    "gemma3-siglip2": ("siglip2_rule", "Siglip2Tokenizer", _MISSING),
    "gemma3-siglip2-added": ("siglip2_rule", "Siglip2Tokenizer", _ADDED_UNK),
    "qwen3-siglip2-absent": ("drift_siglip2", "Siglip2Tokenizer", _MISSING),
    **{f"qwen3-{cls.removesuffix('Tokenizer').lower()}-null": ("drift_siglip2", cls, None)
       for cls in ("Siglip2Tokenizer", "GemmaTokenizer", "CodeLlamaTokenizer",
                   "HerbertTokenizer", "OpenAIGPTTokenizer", "CLIPTokenizer",
                   "NllbTokenizer", "SeamlessM4TTokenizer")},
}


def _folder(root: Path, name: str) -> Path:
    import real_models

    real, cls, unk = FOLDERS[name]
    source = real_models.folder(real)
    folder = root / name
    folder.mkdir()
    (folder / "tokenizer.json").symlink_to(source / "tokenizer.json")
    config = json.loads((source / "tokenizer_config.json").read_text("utf-8"))
    config = {k: v for k, v in config.items() if k != "unk_token"} | {"tokenizer_class": cls}
    (folder / "tokenizer_config.json").write_text(json.dumps(
        config if unk is _MISSING else config | {"unk_token": unk}), "utf-8")
    (folder / "config.json").write_text(json.dumps(
        {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
         "max_position_embeddings": 4096}), "utf-8")
    return folder


@pytest.mark.parametrize("release", ["0.29.0", "0.31.0"])
def test_the_unk_token_builds_as_transformers_does(release: str, tmp_path: Path) -> None:
    from vllm_venvs import assert_builds_as_transformers

    assert_builds_as_transformers(release, [_folder(tmp_path, name) for name in FOLDERS],
                                  TEXTS, cwd=tmp_path,
                                  test="tests/units/test_unk_str_builds.py")
