"""Replay vLLM 0.31.0's truncation where it runs a pooling model: its tokenizer keeps the
start of the prompt.

``real_pool_bodies.jsonl`` (tools/build_real_pool_bodies.py) truncates completions and
chat bodies on tests/render/real/ folders vLLM runs as pooling models (``bert_bge``:
BertModel, WordPiece; ``xlm_roberta_model``: XLMRobertaModel, Unigram) and on one whose
architecture's name ends like a pooling model's but which the registry runs as a
generative one (``chatglm_model_rule``: ChatGLMModel over bge's files).
``real_pool_vectors.jsonl`` is what vLLM's render server answered (tools/harvest_render.py):
every 200 must give the same ids, every vLLM error an error with the same status. The
files are fetched into a cache (tests/real_models.py): without it these tests skip.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from render_cases import (
    RenderCase,
    assert_covers_both_answers,
    assert_server_replays,
    each_case,
    render_cases,
)

from prefixkey.render import Renderer, RenderUnsupportedError, ServerOptions
from prefixkey.render._eras import verified_releases
from prefixkey.render._folder import config_architectures
from prefixkey.render._runner import runner_type
from prefixkey.render._runner_facts import REGISTERED

CASES = render_cases("real_pool_")
#: Each folder and the runner vLLM 0.31.0 picks for it (the side its answers truncate on).
FOLDER_RUNNERS = {"bert_bge": "pooling", "xlm_roberta_model": "pooling",
                  "chatglm_model_rule": "generate"}


def _ids(real: str) -> dict[str, list[int]]:
    """vLLM's ids per body of ``real`` (a completion's first prompt)."""
    out = {}
    for case in CASES:
        if case.real == real and case.status == 200:
            ids = case.token_ids if case.endpoint == "/v1/chat/completions" else \
                case.token_ids[0]
            out[case.id.split("/", 1)[1]] = ids
    return out


def test_the_corpus_covers_every_folder_and_both_answers() -> None:
    assert_covers_both_answers(CASES, FOLDER_RUNNERS)


@pytest.mark.parametrize(("real", "runner"), sorted(FOLDER_RUNNERS.items()))
def test_each_folder_runs_as_vllm_runs_it(real: str, runner: str) -> None:
    case = next(c for c in CASES if c.real == real)
    config = json.loads((case.folder() / "config.json").read_text("utf-8"))
    assert runner_type(config_architectures(config, "0.31.0"), "0.31.0") == runner


@pytest.mark.parametrize(("real", "runner"), sorted(FOLDER_RUNNERS.items()))
def test_the_tokenizer_truncates_on_the_runners_side(real: str, runner: str) -> None:
    """vLLM's own answers: truncating to 9 keeps the first specials-wrapped 7 pieces of a
    pooling model's prompt and the last 7 of a generative one's (the untruncated ids
    are the body truncated to 200, more than the prompt holds)."""
    ids = _ids(real)
    full, nine = ids["completion-truncate-200"], ids["completion-truncate-9"]
    assert len(full) > 20 and len(nine) == 9
    kept = full[1:8] if runner == "pooling" else full[-8:-1]
    assert nine == [full[0], *kept, full[-1]]
    assert ids["completion-truncate-side-left"] == full[-9:]  # a named side: ids sliced
    assert ids["completion-truncate-side-right"] == full[:9]


@each_case(CASES)
def test_vllm_rendering_of_the_folders_replays(case: RenderCase) -> None:
    assert_server_replays(case)


@pytest.mark.parametrize(("architectures", "runner"), [
    (("LlamaForCausalLM",), "generate"), (("LlamaModel",), "generate"),
    (("BertModel",), "pooling"), (("BertForMaskedLM",), "pooling"),
    (("XLMRobertaForSequenceClassification",), "pooling"),
    (("XLMRobertaForMaskedLM",), "generate"),  # neither registered nor suffixed
    (("ChatGLMModel",), "generate"),  # registered: generative classes
    (("Unknown", "GPT2LMHeadModel"), "generate"), (("Unknown", "FooModel"), "pooling"),
    ((), "generate")])
def test_the_runner_of_architectures(architectures: tuple[str, ...], runner: str) -> None:
    """vLLM 0.31's default runner (config/model.py): the first architecture its registry
    knows (by its class) or a suffix matches decides; none: generate."""
    assert runner_type(architectures, "0.31.0") == runner


def test_every_verified_release_has_its_runner_facts() -> None:
    assert set(verified_releases()) <= set(REGISTERED)


#: Qwen2-VL (its class imports torchvision): vLLM 0.31.0's render server, in the
#: vision-capable venv the runner facts come from (vllm031v), answered this chat body's
#: ``truncate_prompt_tokens: 5`` (no ``truncation_side``) with its last 5 ids.
QWEN2_VL_BODY = {"messages": [{"role": "user", "content": "Hello there, how are you?"}]}
QWEN2_VL_LAST_5 = [151645, 198, 151644, 77091, 198]


def test_a_vision_model_truncates_on_the_left() -> None:
    """Qwen2-VL's class generates: the tokenizer keeps the prompt's end."""
    import real_models

    assert runner_type(("Qwen2VLForConditionalGeneration",), "0.31.0") == "generate"
    r = Renderer(ServerOptions(model=str(real_models.folder("qwen2_vl"))))
    truncated = r.render_chat(QWEN2_VL_BODY | {"truncate_prompt_tokens": 5})
    assert list(truncated.token_ids) == QWEN2_VL_LAST_5


def test_an_architecture_whose_runner_is_not_known_renders_but_does_not_truncate(
        tmp_path: Path) -> None:
    """Dots3Note's class could not be imported in the install the facts come from (an
    audio architecture such as MiDashengLM's would need its processor file to start at
    all: render/_processor_startup.py): which runner vLLM picks for it is not known here,
    so only the tokenizer's own truncation (no ``truncation_side``) is refused."""
    import real_models

    assert REGISTERED["0.31.0"]["Dots3NoteForCausalLM"] == "error"
    shutil.copytree(real_models.folder("bert_bge"), tmp_path / "m")
    config = json.loads((tmp_path / "m" / "config.json").read_text("utf-8"))
    config["architectures"] = ["Dots3NoteForCausalLM"]
    (tmp_path / "m" / "config.json").write_text(json.dumps(config), "utf-8")
    r = Renderer(ServerOptions(model=str(tmp_path / "m")))
    body = {"prompt": "Hello there, how are you?"}
    (full,) = r.render_completion(body)
    with pytest.raises(RenderUnsupportedError, match="could not be imported") as info:
        r.render_completion(body | {"truncate_prompt_tokens": 5})
    assert info.value.field == "truncate_prompt_tokens"
    (named,) = r.render_completion(body | {"truncate_prompt_tokens": 5,
                                           "truncation_side": "left"})
    assert list(named.token_ids) == list(full.token_ids)[-5:]

