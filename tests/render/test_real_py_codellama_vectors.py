"""Replay vLLM 0.31.0's rendering of a CodeLlama folder (CodeLlamaTokenizer's rebuild).

``real_py_codellama_bodies.jsonl`` (tools/build_python_bodies.py --code-llama) was posted
to one render server in order over tests/render/real/code_llama (the @lenml llama2
package's real tokenizer.json, Mistral 7B's vocabulary, a CodeLlamaTokenizer
tokenizer_config.json): plain bodies, then bodies whose text holds ``<FILL_ME>``, then
the plain bodies again (``after-fill/``). vLLM
formats a text with one ``<FILL_ME>`` and a non-empty suffix as an infilling prompt and
its tokenizer keeps a changed normalizer afterwards: the ``after-fill/`` answers differ.
prefixkey gives the answers of the tokenizer as loaded (the first phase), vLLM's 400 for
two fill tokens, the prefix alone for an empty suffix, and refuses the infilling texts.
The tokenizer file is fetched into a cache (tests/real_models.py): without it these
tests skip, under CI they fetch.
"""

from __future__ import annotations

import pytest
from render_cases import RenderCase, assert_replays, render_cases, server_renderer

from prefixkey.render import Renderer, RenderUnsupportedError

CASES = render_cases("real_py_codellama_")
INFILLING = ("fill", "fill-start", "chat-fill")  # one <FILL_ME>, a non-empty suffix
FIRST = [c for c in CASES if not c.id.startswith("code_llama/after-fill/")]
AFTER = [c for c in CASES if c.id.startswith("code_llama/after-fill/")]


def _infilling(case: RenderCase) -> bool:
    name = case.id.removeprefix("code_llama/").removeprefix("completion-")
    return name.removesuffix("-no-specials") in INFILLING


def renderer() -> Renderer:
    return server_renderer(CASES[0])


def test_the_folder_takes_codellamas_rebuild() -> None:
    decision = renderer().folder.tokenizer_decision
    assert (decision.path, decision.tokenizer_class, decision.recipe) == (
        "rebuilt", "CodeLlamaTokenizer", "code_llama")


@pytest.mark.parametrize("case", [c for c in FIRST if not _infilling(c)],
                         ids=lambda c: c.id)
def test_vllm_rendering_of_the_codellama_folder_replays(case: RenderCase) -> None:
    assert_replays(renderer(), case)


@pytest.mark.parametrize("case", [c for c in FIRST if _infilling(c)], ids=lambda c: c.id)
def test_an_infilling_text_is_refused_and_says_why(case: RenderCase) -> None:
    assert case.status == 200  # vLLM renders it, then encodes later texts otherwise
    with pytest.raises(RenderUnsupportedError, match="infilling prompt and then keeps a "
                       "changed normalizer"):
        renderer().render(case.endpoint, case.body)


def test_vllm_encodes_otherwise_after_an_infilling_text() -> None:
    # The refusal's reason, as vLLM's server answered: the same bodies, before and after.
    first = {c.id.removeprefix("code_llama/"): c for c in FIRST}
    changed = [c.id for c in AFTER
               if c.token_ids != first[c.id.removeprefix("code_llama/after-fill/")].token_ids]
    assert len(changed) >= 8 and len(changed) < len(AFTER)
    assert "code_llama/after-fill/completion-leading-space" in changed
