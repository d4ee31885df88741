"""The tokenizer path vLLM 0.31 + transformers 5.17 take for a folder (render/_hf_decision.py).

The facts (``_hf_facts.py``) are generated from the real packages by
tools/extract_hf_tokenizers.py; these cases are the classes the real
``get_tokenizer`` built for the real folders of tests/render/real (Qwen3:
Qwen2Tokenizer, DeepSeek-V3: TokenizersBackend, Gemma 3: GemmaTokenizer, Llama 3:
TokenizersBackend), and the rules around them. The ids are checked against vLLM's
render server in tests/render/test_real_hf_vectors.py.
"""

from __future__ import annotations

import fnmatch
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from prefixkey.render._hf_decision import (
    BASE_FACTS,
    TokenizerPath,
    _name_matches,
    decide_tokenizer,
    release_drift,
)
from prefixkey.render._hf_tiktoken import ConvertedSource

ROOT = Path(__file__).resolve().parents[2]


def decide(model_type: str, tokenizer_class: str | None = None, *, name: str = "/m",
           architectures: tuple[str, ...] = (), mode: str = "auto",
           tokenizer_json: bool = True, **config: Any) -> TokenizerPath:
    tconf: dict[str, Any] = {} if tokenizer_class is None else {
        "tokenizer_class": tokenizer_class}
    tconf.update(config.pop("tokenizer_config", {}))
    return decide_tokenizer(model_type=model_type, architectures=list(architectures),
                            tokenizer_mode=mode, tokenizer_config=tconf,
                            config={"model_type": model_type, **config}, name=name,
                            has_tokenizer_json=tokenizer_json)


@pytest.mark.parametrize(("model_type", "hub", "path", "cls", "recipe"), [
    ("qwen3", "Qwen2Tokenizer", "rebuilt", "Qwen2Tokenizer", "qwen2"),
    ("qwen3_moe", None, "rebuilt", "Qwen2Tokenizer", "qwen2"),
    ("qwen2", "PreTrainedTokenizerFast", "rebuilt", "Qwen2Tokenizer", "qwen2"),
    ("deepseek_v3", "LlamaTokenizerFast", "as_is", "TokenizersBackend", None),
    ("gemma3_text", "GemmaTokenizer", "rebuilt", "GemmaTokenizer", "gemma"),
    ("gemma3", "GemmaTokenizerFast", "rebuilt", "GemmaTokenizer", "gemma"),
    ("llama", "PreTrainedTokenizerFast", "as_is", "TokenizersBackend", None),
    ("llama", "LlamaTokenizerFast", "rebuilt", "LlamaTokenizer", "llama"),
    ("mistral", "LlamaTokenizer", "as_is", "TokenizersBackend", None),
    ("mistral", None, "as_is", "TokenizersBackend", None),
    ("phi3", "LlamaTokenizer", "as_is", "TokenizersBackend", None),
    ("gpt2", None, "rebuilt", "GPT2Tokenizer", "gpt2"),
    ("qwen3_5", None, "rebuilt", "Qwen3_5Tokenizer", "qwen3_5"),
    ("qwen3_5_moe", "Qwen2Tokenizer", "rebuilt", "Qwen2Tokenizer", "qwen2"),
    ("gpt_neox", "GPTNeoXTokenizerFast", "rebuilt", "GPTNeoXTokenizer", "gpt_neox"),
    ("olmo", None, "rebuilt", "GPTNeoXTokenizer", "gpt_neox"),
    ("cohere2", "CohereTokenizerFast", "rebuilt", "CohereTokenizer", "cohere"),
    ("codegen", "CodeGenTokenizer", "rebuilt", "CodeGenTokenizer", "codegen"),
    ("bart", None, "rebuilt", "RobertaTokenizer", "roberta"),
    ("bert", None, "rebuilt", "BertTokenizer", "bert"),
    ("t5", None, "rebuilt", "T5Tokenizer", "t5"),
    ("internlm2", "InternLM2Tokenizer", "as_is", "TokenizersBackend", None),
    ("llama", "PreTrainedTokenizer", "as_is", "TokenizersBackend", None),
    ("llama", "NoSuchTokenizer", "as_is", "TokenizersBackend", None),
])
def test_the_class_and_path_transformers_takes(model_type: str, hub: str | None, path: str,
                                               cls: str, recipe: str | None) -> None:
    decision = decide(model_type, hub)
    assert (decision.path, decision.tokenizer_class, decision.recipe) == (path, cls, recipe)
    assert decision.reproduced == (path == "as_is" or recipe is not None)


def test_the_name_patterns_pick_the_generic_backend() -> None:
    assert decide("llama", "LlamaTokenizerFast").path == "rebuilt"
    hub_name = decide("llama", "LlamaTokenizerFast", name="deepseek-ai/DeepSeek-Coder-6.7B")
    assert (hub_name.path, hub_name.tokenizer_class) == ("as_is", "TokenizersBackend")


def test_what_is_not_a_hugging_face_tokenizer_is_named() -> None:
    # gpt-oss: Harmony renders its chat, but its tokenizer (completions) is the folder's.
    assert decide("gpt_oss").path == "as_is"
    assert decide("mistral", mode="mistral").path == "mistral"
    kimi = decide("kimi_k3", architectures=("KimiK3ForConditionalGeneration",))
    assert kimi.path == "refused" and "kimi_k3" in kimi.why
    inkling = decide("inkling", architectures=("InklingForCausalLM",))
    assert inkling.path == "refused" and "inkling" in inkling.why
    # An encoder mode (render/_encoders.py): TokenizersBackend over tokenizer.json as it
    # is, whatever the hub class (LlamaTokenizerFast would be rebuilt on the hf path).
    v32 = decide("deepseek_v32", "LlamaTokenizerFast", architectures=("DeepseekV32ForCausalLM",))
    assert (v32.path, v32.tokenizer_class, v32.mode) == ("as_is", "TokenizersBackend",
                                                         "deepseek_v32")
    given = decide("llama", "LlamaTokenizerFast", mode="deepseek_v32")
    assert (given.path, given.mode) == ("as_is", "deepseek_v32")
    # An explicit hf mode keeps the Hugging Face tokenizer.
    assert decide("deepseek_v32", architectures=("DeepseekV32ForCausalLM",),
                  mode="hf").path == "as_is"


def test_remote_code_and_conversions_are_refused_truly() -> None:
    remote = decide("gpt2", tokenizer_config={"auto_map": {"AutoTokenizer": ["x.T", None]}})
    assert remote.path == "refused" and "--trust-remote-code" in remote.why
    # transformers drops auto_map for its incorrect-hub-class types.
    dropped = decide("deepseek_v3", tokenizer_config={"auto_map": {"AutoTokenizer": ["x.T",
                                                                                     None]}})
    assert dropped.path == "as_is"
    converted = decide("llama", "LlamaTokenizer", tokenizer_json=False)
    assert (converted.path, converted.recipe) == ("converted", "llama")
    assert converted.reproduced and "tokenizer.model (a SentencePiece model)" in converted.why
    # vLLM loads model_type mistral with TokenizersBackend: the generic conversion.
    generic = decide("mistral", "LlamaTokenizer", tokenizer_json=False)
    assert (generic.path, generic.tokenizer_class, generic.recipe) == (
        "converted", "TokenizersBackend", "spm")
    unconverted = decide("gpt2", "RoFormerTokenizer", tokenizer_json=False)
    assert unconverted.path == "converted" and not unconverted.reproduced
    assert "does not reproduce for this class" in unconverted.why


def test_a_tiktoken_or_tekken_file_is_converted_by_tokenizers_backend_only() -> None:
    """render/_hf_tiktoken.py reproduces TokenizersBackend's conversion; a class of its
    own runs its __init__ around the converted tokenizer: still refused."""
    source = ConvertedSource("tiktoken", "tokenizer.model")
    backend = decide_tokenizer(
        model_type="llama", architectures=[], tokenizer_mode="auto",
        tokenizer_config={"tokenizer_class": "PreTrainedTokenizerFast"},
        config={"model_type": "llama"}, name="/m", has_tokenizer_json=False,
        converted=source)
    assert (backend.path, backend.tokenizer_class, backend.converted) == (
        "converted", "TokenizersBackend", source)
    assert backend.reproduced and "TikTokenConverter" in backend.why
    own = decide_tokenizer(
        model_type="llama", architectures=[], tokenizer_mode="auto",
        tokenizer_config={"tokenizer_class": "LlamaTokenizer"},
        config={"model_type": "llama"}, name="/m", has_tokenizer_json=False,
        converted=source)
    assert own.path == "converted" and not own.reproduced and own.converted is None
    python = decide("bert-japanese", "CpmTokenizer")
    assert python.path == "refused" and "Python tokenizer" in python.why


def test_the_facts_are_those_of_the_installed_packages() -> None:
    from vllm_venvs import vllm_command

    python, env = vllm_command("0.31.0")
    done = subprocess.run([str(python), "tools/extract_hf_tokenizers.py", "--check"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert sys.version_info >= (3, 10)


def test_the_docs_table_is_current() -> None:
    done = subprocess.run([sys.executable, "tools/hf_tokenizer_table.py", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


#: Every name pattern table the decision matches against: the rules' own and each release's drift.
_PATTERN_TABLES = [BASE_FACTS.BACKEND_NAME_PATTERNS, frozenset()] + [
    release_drift(v)[1] for v in ("0.29.0", "0.30.0", "0.32.0", "0.33.0")]


@pytest.mark.parametrize("patterns", _PATTERN_TABLES)
def test_a_tables_one_regex_matches_as_fnmatch_does(patterns: Any) -> None:
    names = [p.replace("*", s) for table in _PATTERN_TABLES for p in table
             for s in ("", "x", "-7B/b")]
    names += ["Qwen/Qwen3-8B", "DeepSeek-AI/DeepSeek-Coder-7b", "a/b", "", "x\n",
              "deepseek-ai/deepseek-coder"]
    for name in names:
        expected = any(fnmatch.fnmatch(name.lower(), p) for p in patterns)
        assert _name_matches(name, patterns) is expected, (name, sorted(patterns))


#: Drifted types per release: refused, or decided by the release's own facts as a type its
#: corpora replayed is (render/_hf_decision.py ``type_rule_facts``): janus and wavtokenizer
#: register nothing at 5.24, as llama; qwen4_exp ignores its hub class for Qwen3_5Tokenizer,
#: as qwen3_5 (tests/render/test_real_drift_vectors.py); internlm3 as modernbert-decoder;
#: pocket_tts and nemo_speechlm register TokenizersBackend at 5.24, as beam; vLLM 0.33
#: loads step5 with TokenizersBackend, as unlimited_ocr; siglip2 at 5.24 is itself replayed.
_DRIFT_ROWS = [
    ("0.29.0", "janus", False), ("0.30.0", "wavtokenizer", False),
    ("0.29.0", "internlm3", False), ("0.29.0", "siglip2", False),
    ("0.30.0", "siglip2", False),
    ("0.29.0", "pocket_tts", False), ("0.30.0", "nemo_speechlm", False),
    ("0.29.0", "omniasr_ctc", False), ("0.30.0", "hyperclovax_vision_v2", False),
    ("0.32.0", "qwen4_exp", False), ("0.32.0", "qwen3_5_moe_text", False),
    ("0.32.0", "minicpmv4_7", False), ("0.33.0", "step5", False),
    ("0.33.0", "step5_vl", False),
    ("0.33.0", "hyperclovax_vision_v2", False),
]


@pytest.mark.parametrize(("release", "model_type", "refused"), _DRIFT_ROWS)
def test_a_drifted_type_is_refused_unless_decided_as_a_replayed_one(
        release: str, model_type: str, refused: bool) -> None:
    from prefixkey.render._eras import render_release
    from prefixkey.render._hf_decision import release_facts, type_rule_facts
    from prefixkey.render._hf_facts_delta import drifted

    facts = release_facts(release)
    assert model_type in drifted(BASE_FACTS, facts)[0]
    assert (model_type in release_drift(release)[0]) is refused
    alike = {t for t in render_release(release).hf_replayed
             if type_rule_facts(t, facts) == type_rule_facts(model_type, facts)}
    assert bool(alike) is not refused
