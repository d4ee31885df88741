"""Replay vLLM 0.31.0's truncation by the Python tokenizers and mistral_common's: a pooling
model's tokenizer keeps the start of the prompt, a generative one's the end.

``real_trunc_bodies.jsonl`` (tools/build_real_trunc_bodies.py) truncates completions and
chat bodies with every kind of Python tokenizer (bytes: ByT5, Perceiver, Dia; code
points: Canine; vocabulary characters: MGP-STR, Wav2Vec2 CTC; vocabulary words: ESM;
fastBPE words: CTRL, Blenderbot small, PhoBERT; WordPiece: RoCBert, BertJapanese) and
with mistral_common's (``--tokenizer-mode mistral``: SentencePiece and Tekken), each
under an architecture vLLM runs as a pooling model (``*_pool`` folders) and some under
their generative one. ``real_trunc_vectors.jsonl`` is what vLLM's render server answered
(tools/harvest_render.py): every 200 must give the same ids, every vLLM error an error
with the same status. tests/render/releases/<release>/real_trunc_vectors.jsonl hold other
releases' answers to the same bodies (the builder's ``--keep-release``), replayed with
that release's ``--vllm-version``. The real folders' files are fetched into a cache
(tests/real_models.py): without it those tests skip.
"""

from __future__ import annotations

import json

import pytest
from render_cases import (
    RENDER_DIR,
    RenderCase,
    assert_replays,
    each_case,
    each_release_case,
    kept_vectors,
    release_table,
    render_cases,
    server_renderer,
)

from prefixkey.render import Renderer, RenderUnsupportedError, ServerOptions
from prefixkey.render._folder import config_architectures
from prefixkey.render._runner import runner_type

CASES = render_cases("real_trunc_")
RELEASES = sorted(p.parent.name for p in (RENDER_DIR / "releases").glob(
    "*/real_trunc_vectors.jsonl"))
#: (release, folder) whose server did not start: vLLM 0.29.0's registry answers "Model
#: architectures ['Wav2Vec2Model'] are not supported for now" (its harvest), and the same
#: for BlenderbotSmallModel.
NOT_STARTED = {("0.29.0", "wav2vec2_pool"), ("0.29.0", "blenderbot_small_pool")}
#: Each folder, the runner vLLM 0.31.0 picks for it (the side its answers truncate on),
#: and the special tokens a completion gets before and after its text.
FOLDERS = {
    "byt5_pool": ("pooling", 0, 1), "byt5": ("generate", 0, 1),
    # No architectures: vLLM runs the model type's base class, GPT2Model, as a pooling one.
    "byt5_noarch": ("pooling", 0, 1),
    "perceiver_pool": ("pooling", 1, 1), "dia_pool": ("pooling", 0, 0),
    "canine_pool": ("pooling", 1, 1), "canine": ("generate", 1, 1),
    "mgpstr_pool": ("pooling", 0, 0), "wav2vec2_pool": ("pooling", 0, 0),
    "esm_pool": ("pooling", 1, 1), "esm": ("generate", 1, 1),
    "ctrl_pool": ("pooling", 0, 0), "ctrl_rule": ("generate", 0, 0),
    "blenderbot_small_pool": ("pooling", 0, 0), "phobert_pool": ("pooling", 1, 1),
    "roc_bert_pool": ("pooling", 1, 1), "roc_bert_rule": ("generate", 1, 1),
    "bert_japanese_pool": ("pooling", 1, 1),
    "mistral7b_v03_pool": ("pooling", 1, 0), "mistral_nemo_pool": ("pooling", 1, 0),
}
def renderer(case: RenderCase, release: str | None = None) -> Renderer:
    if case.server.get("--tokenizer-mode") == "mistral":
        pytest.importorskip("mistral_common")
    return server_renderer(case, release)


def _ids(folder: str) -> dict[str, list[int]]:
    """vLLM's ids per body of ``folder`` (a completion's first prompt)."""
    out = {}
    for case in CASES:
        if case.name == folder and case.status == 200:
            ids = case.token_ids if case.endpoint == "/v1/chat/completions" else \
                case.token_ids[0]
            out[case.id.split("/", 1)[1]] = ids
    return out


def test_the_corpus_covers_every_folder_and_both_answers() -> None:
    assert {c.name for c in CASES} == set(FOLDERS)
    for folder in FOLDERS:
        assert {200, 400} <= {c.status for c in CASES if c.name == folder}, folder


@pytest.mark.parametrize("folder", sorted(FOLDERS))
def test_each_folder_runs_as_vllm_runs_it(folder: str) -> None:
    case = next(c for c in CASES if c.name == folder)
    config = json.loads((case.model_dir / "config.json").read_text("utf-8"))
    assert runner_type(config_architectures(config, "0.31.0"), "0.31.0") == FOLDERS[folder][0]


@pytest.mark.parametrize("folder", sorted(FOLDERS))
def test_the_tokenizer_truncates_on_the_runners_side(folder: str) -> None:
    """vLLM's own answers: truncating to 9 keeps the first pieces of a pooling model's
    prompt and the last of a generative one's, room left for the special tokens (the
    untruncated ids are the body truncated to the context, more than the prompt holds)."""
    runner, before, after = FOLDERS[folder]
    ids = _ids(folder)
    full, nine = ids["completion-truncate-minus-1-short"], ids["completion-truncate-9"]
    assert len(full) > 12 and len(nine) == 9
    text = full[before:len(full) - after]
    room = 9 - before - after
    kept = text[:room] if runner == "pooling" else text[-room:]
    assert nine == [*full[:before], *kept, *full[len(full) - after:]]
    assert ids["completion-truncate-side-left"] == full[-9:]  # a named side: ids sliced
    assert ids["completion-truncate-side-right"] == full[:9]


@each_case(CASES)
def test_vllm_truncation_replays(case: RenderCase) -> None:
    assert_replays(renderer(case), case)


def test_the_releases_answered_every_body() -> None:
    assert RELEASES
    for release in RELEASES:
        assert set(kept_vectors(release, "real_trunc_")) == {
            c.id for c in CASES if (release, c.name) not in NOT_STARTED}


@each_release_case(release_table("real_trunc_", {
    release: {folder for r, folder in NOT_STARTED if r == release} for release in RELEASES}))
def test_a_release_truncation_replays(release: str, case: RenderCase) -> None:
    assert_replays(renderer(case, release), case)


@pytest.mark.parametrize(("release", "folder"), sorted(NOT_STARTED))
def test_a_folder_the_release_does_not_start_is_refused(release: str, folder: str) -> None:
    case = next(c for c in CASES if c.name == folder)
    with pytest.raises(RenderUnsupportedError, match="does not start for it"):
        renderer(case, release)


#: transformers 5.17's (vLLM 0.31's) PerceiverTokenizer over tests/render/python_models/
#: perceiver, ``tok("abcdef", truncation=True, max_length=n)``, with either
#: ``truncation_side``: no room for a byte at 1 (the two special tokens alone, each side).
PERCEIVER_TRUNCATED = {(1, "left"): [4, 5], (1, "right"): [4, 5],
                       (4, "left"): [4, 107, 108, 5], (4, "right"): [4, 103, 104, 5]}


@pytest.mark.parametrize(("length", "side"), sorted(PERCEIVER_TRUNCATED))
def test_the_tokenizer_keeps_the_special_tokens_past_its_room(length: int, side: str) -> None:
    """vLLM slices such ids again to the length; the tokenizer's own answer is transformers'."""
    r = Renderer(ServerOptions(model=str(RENDER_DIR / "python_models" / "perceiver")))
    assert r.tokenizer.encode_truncated("abcdef", add_special_tokens=True, max_length=length,
                                        side=side) == PERCEIVER_TRUNCATED[length, side]
