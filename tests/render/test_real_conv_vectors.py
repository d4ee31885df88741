"""Replay vLLM 0.31.0's rendering of folders without tokenizer.json (converted).

``real_conv_bodies.jsonl`` (tools/build_real_conv_bodies.py) holds the bodies of
test_real_wu_vectors.py over tests/render/real/ folders holding a real SentencePiece
model and no tokenizer.json: Mistral 7B's BPE model (mistral_common 1.13.1's
tokenizer.model.v1) as LlamaTokenizer's (``conv_llama`` with Llama 2's
tokenizer_config.json, ``conv_llama_nobos`` without its ``add_bos_token``) and as the
generic backend's (``conv_generic_bpe``), and the sentencepiece 0.2.1 sdist's Unigram test
model under T5Tokenizer, AlbertTokenizer, XLNetTokenizer, CamembertTokenizer,
XLMRobertaTokenizer and the generic backend (``conv_generic``).
``real_conv_files_bodies.jsonl`` (tools/build_real_conv_files_bodies.py) holds them over
folders with vocab.json and merges.txt, or vocab.txt, and no tokenizer.json;
``real_conv_more_bodies.jsonl`` (tools/build_real_conv_more_bodies.py) over more classes'
folders (the language-code classes, Qwen 3.5's, Parakeet's, ConvBERT's, ESMC's). The vectors
are what vLLM 0.31.0's render server answered (tools/harvest_render.py): every 200 must
give the same ids, every vLLM error an error with the same status. The files are fetched
into a cache (tests/real_models.py): without it these tests skip, under CI they fetch.
"""

from __future__ import annotations

import json
from types import MappingProxyType

import pytest
from render_cases import (
    RENDER_DIR,
    RenderCase,
    assert_covers_both_answers,
    assert_server_replays,
    assert_takes_rebuild,
    each_case,
    each_release_case,
    kept_case,
    kept_vectors,
    real_renderer,
    release_table,
    render_cases,
    server_options,
)

from prefixkey.render import Renderer, RenderUnsupportedError, ServerOptions
from prefixkey.render._hf_converted import CONVERTED_RELEASES
from prefixkey.render._hf_rebuilds import REBUILDS

SPM_CASES = render_cases("real_conv_")
FILE_CASES = render_cases("real_conv_files_")
#: Each folder and the class vLLM's transformers converted it for.
SPM_CLASSES = {
    "conv_llama": "LlamaTokenizer", "conv_llama_nobos": "LlamaTokenizer",
    "conv_generic_bpe": "TokenizersBackend", "conv_t5": "T5Tokenizer",
    "conv_albert": "AlbertTokenizer", "conv_xlnet": "XLNetTokenizer",
    "conv_camembert": "CamembertTokenizer", "conv_xlm_roberta": "XLMRobertaTokenizer",
    "conv_generic": "TokenizersBackend"}
FILE_CLASSES = {
    "conv_qwen3": "Qwen2Tokenizer", "conv_gpt2": "GPT2Tokenizer",
    "conv_roberta": "RobertaTokenizer", "conv_bert": "BertTokenizer",
    "conv_blenderbot": "BlenderbotTokenizer", "conv_clip": "CLIPTokenizer",
    "conv_codegen": "CodeGenTokenizer", "conv_cohere": "CohereTokenizer",
    "conv_deberta": "DebertaTokenizer", "conv_distilbert_cased": "DistilBertTokenizer",
    "conv_dpr_context": "DPRContextEncoderTokenizer", "conv_dpr": "DPRQuestionEncoderTokenizer",
    "conv_funnel": "FunnelTokenizer", "conv_gpt_neox": "GPTNeoXTokenizer",
    "conv_herbert": "HerbertTokenizer", "conv_layoutlmv2": "LayoutLMv2Tokenizer",
    "conv_layoutlmv3": "LayoutLMv3Tokenizer", "conv_markuplm": "MarkupLMTokenizer",
    "conv_mpnet": "MPNetTokenizer", "conv_nougat": "NougatTokenizer",
    "conv_openai_gpt": "OpenAIGPTTokenizer", "conv_splinter": "SplinterTokenizer",
    "conv_whisper": "WhisperTokenizer", "conv_whisper_bare": "WhisperTokenizer"}
MORE_CASES = render_cases("real_conv_more_")
MORE_CLASSES = {
    "conv_qwen3_5": "Qwen3_5Tokenizer", "conv_qwen3_5_spm": "Qwen3_5Tokenizer",
    "conv_parakeet": "ParakeetTokenizer", "conv_mbart": "MBartTokenizer",
    "conv_mbart50": "MBart50Tokenizer", "conv_nllb": "NllbTokenizer",
    "conv_seamless_m4t": "SeamlessM4TTokenizer", "conv_layoutxlm": "LayoutXLMTokenizer",
    "conv_udop": "UdopTokenizer", "conv_lasr": "LasrTokenizer", "conv_mluke": "MLukeTokenizer",
    "conv_dpr_reader": "DPRReaderTokenizer", "conv_convbert": "ConvBertTokenizer",
    "conv_esmc": "EsmcTokenizer", "conv_luke": "LukeTokenizer",
    "conv_videoprism": "VideoPrismTokenizer", "conv_tipsv2": "Tipsv2Tokenizer"}
#: The same corpus's tokenizer.json folders of the classes whose rebuild the conversion
#: needed (render/_hf_rebuilds.py).
RULE_CLASSES = {"videoprism_rule": "VideoPrismTokenizer", "tipsv2_rule": "Tipsv2Tokenizer"}
#: The recipe each class's conversion is built by, where it is not the class's own
#: (ConvBertTokenizer has BertTokenizer's __init__; ParakeetTokenizer TokenizersBackend's).
RECIPES = {"ConvBertTokenizer": "bert", "ParakeetTokenizer": "spm"}
CASES = (*SPM_CASES, *FILE_CASES, *MORE_CASES)


def renderer(real: str) -> Renderer:
    return real_renderer(CASES, real)


#: Classes whose call wants words with their boxes: vLLM answers every body with a 400.
REFUSING = frozenset({"conv_layoutlmv2", "conv_layoutlmv3", "conv_layoutxlm", "conv_udop"})
#: Qwen3_5Tokenizer reads no vocab.json: its default vocabulary encodes no text, so every
#: completion is empty, which vLLM refuses, and a chat is its special tokens alone.
EMPTY = frozenset({"conv_qwen3_5"})


def test_the_corpora_cover_every_folder_and_both_answers() -> None:
    """Both answers for each folder but the refusing ones, whose every answer is a 400
    saying so (as for their tokenizer.json folders, test_real_layout_vectors.py)."""
    assert_covers_both_answers(SPM_CASES, SPM_CLASSES)
    assert {c.real for c in FILE_CASES} == set(FILE_CLASSES)
    assert_covers_both_answers(tuple(c for c in FILE_CASES if c.real not in REFUSING),
                               set(FILE_CLASSES) - REFUSING)
    assert {c.real for c in MORE_CASES} == set(MORE_CLASSES) | set(RULE_CLASSES)
    assert_covers_both_answers(
        tuple(c for c in MORE_CASES if c.real not in REFUSING | EMPTY),
        (set(MORE_CLASSES) | set(RULE_CLASSES)) - REFUSING - EMPTY)
    for real in REFUSING:
        cases = [c for c in CASES if c.real == real]
        assert {c.status for c in cases} == {400}
        assert sum("Words must" in str(c.error) for c in cases) >= len(cases) - 2


@pytest.mark.parametrize(("real", "cls"), sorted(
    {**SPM_CLASSES, **FILE_CLASSES, **MORE_CLASSES}.items()))
def test_each_folder_takes_its_class_conversion(real: str, cls: str) -> None:
    folder = next(c for c in CASES if c.real == real).folder()
    assert not (folder / "tokenizer.json").exists()
    decision = renderer(real).folder.tokenizer_decision
    assert (decision.path, decision.tokenizer_class) == ("converted", cls)
    assert decision.recipe == RECIPES.get(cls, REBUILDS[cls].name if cls in REBUILDS
                                          else "spm")


@pytest.mark.parametrize(("real", "cls"), sorted(RULE_CLASSES.items()))
def test_the_rule_folders_take_their_class_rebuild(real: str, cls: str) -> None:
    assert_takes_rebuild(renderer(real), cls)


def test_qwen3_5_without_tokenizer_json_encodes_no_text() -> None:
    """Qwen3_5Tokenizer's vocabulary file is TokenizersBackend's tokenizer.model: beside
    vocab.json and merges.txt alone it builds its one-token default, so vLLM answers every
    text with no ids (a completion: a 400) and a chat with its special tokens alone."""
    cases = [c for c in MORE_CASES if c.real == "conv_qwen3_5"]
    texts = [c for c in cases if c.endpoint == "/v1/completions"]
    assert len(texts) >= 40
    assert all(c.status == 400 and "No token_ids rendered" in str(c.error) for c in texts)
    chats = [c for c in cases if c.status == 200]
    assert chats and all(c.token_ids and max(c.token_ids) < 30 for c in chats)


def test_a_converted_bpe_model_merges_by_piece_id_not_by_score() -> None:
    """SentencePieceExtractor generates a BPE model's merges in the order of the merged
    piece's id, not by its score as the converter that wrote tokenizer.json did: Mistral
    7B's model converted gives other pieces for runs of spaces than Llama 2's lenml
    tokenizer.json of the same vocabulary (whose other texts encode the same)."""
    import real_models

    ids = {c.id: c.token_ids for c in SPM_CASES if c.status == 200}
    llama = Renderer(ServerOptions(model=str(real_models.folder("llama2")),
                                   served_model_name=("real-llama2",), max_model_len=512))
    for key, same in (("space-runs", False), ("ascii", True), ("accents", True)):
        body = json.loads(json.dumps(next(c.body for c in SPM_CASES
                                          if c.id == f"conv_llama/completion-{key}")))
        body["model"] = "real-llama2"
        rendered = [list(r.token_ids) for r in llama.render("/v1/completions", body)]
        assert (rendered == ids[f"conv_llama/completion-{key}"]) is same, key


#: The texts whose pieces differ without tokenizer.json: they spell a special token the
#: rule folder's tokenizer.json lists as an added token, a plain vocabulary entry here.
_SPELLED_SPECIALS = {"conv_mpnet/completion-specials-bert-no-specials",
                     "conv_markuplm/completion-specials-spm-no-specials"}


def test_vocabulary_files_encode_as_their_tokenizer_json_does() -> None:
    """A ``conv_X`` folder holds the vocabulary of the ``X_rule`` folder's tokenizer.json as
    vocabulary files: vLLM's ids for the same text without special tokens are the same
    (the post-processor, which the class keeps from tokenizer.json, and the file's added
    tokens differ)."""
    answers = {}
    for corpus in ("real_wu_", "real_wu2_", "real_bpe_", "real_bpe_more_", "real_spm_",
                   "real_layout_", "real_rebuild_"):
        answers.update({c.id: (c.status, c.token_ids, c.body) for c in render_cases(corpus)})
    compared = 0
    for case in FILE_CASES:
        ident = case.id.removeprefix("conv_")
        rule = ident.replace("/", "_rule/", 1)
        if not case.id.endswith("-no-specials") or rule not in answers:
            continue
        status, ids, body = answers[rule]
        if {**body, "model": ""} != {**case.body, "model": ""}:
            continue
        compared += 1
        same = (status, ids) == (case.status, case.token_ids)
        assert same is (case.id not in _SPELLED_SPECIALS), case.id
    assert compared >= 200  # every rule folder's corpus shares these bodies


@each_case(CASES)
def test_vllm_rendering_of_the_folders_replays(case: RenderCase) -> None:
    assert_server_replays(case)


#: The releases of transformers 5.19, whose conversion code is 5.17's, each with the
#: corpora it answered as 0.31.0 did (0.33.0: its overlay).
@each_release_case(release_table(("real_conv_", "real_conv_files_", "real_conv_more_"),
                                 {"0.32.0": (), "0.33.0": ()}))
def test_vllm_0_32_and_0_33_rendering_of_the_folders_replays(release: str,
                                                             case: RenderCase) -> None:
    """vLLM 0.32.0 and 0.33.0 (transformers 5.19) answered the corpora as 0.31.0 did
    (releases/<release>/real_conv_vectors.jsonl, real_conv_files_vectors.jsonl,
    real_conv_more_vectors.jsonl)."""
    assert_server_replays(case, release)


#: The vocabulary-file folder vLLM 0.29.0 did not start for (its registry lists none of
#: MarkupLM's architectures): its kept answers are that start failure.
NOT_STARTED_029 = frozenset({"conv_markuplm"})


@each_release_case(release_table("real_conv_files_", {"0.29.0": NOT_STARTED_029,
                                                      "0.30.0": ()}))
def test_vllm_0_29_and_0_30_rendering_of_the_vocabulary_file_folders_replays(
        release: str, case: RenderCase) -> None:
    """vLLM 0.29.0 and 0.30.0 (transformers 5.24) answered the vocabulary-file folders
    as 0.31.0 did (releases/<release>/real_conv_files_vectors.jsonl)."""
    assert_server_replays(case, release)


@pytest.mark.parametrize("real", sorted(NOT_STARTED_029))
def test_vllm_0_29_did_not_start_for_a_folder_and_it_is_refused(real: str) -> None:
    kept = [v for k, v in kept_vectors("0.29.0", "real_conv_files_").items()
            if k.startswith(f"{real}/")]
    assert kept and all(v["status"] is None and "startup" in v for v in kept)
    with pytest.raises(RenderUnsupportedError, match=r"vLLM 0\.29\.0 does not start"):
        real_renderer(FILE_CASES, real, "0.29.0")


#: The generic backend's folders, which transformers 5.24 (vLLM 0.29, 0.30) converts
#: otherwise (render/_eras.py ``generic_spm``).
GENERIC = frozenset({"conv_generic", "conv_generic_bpe"})
#: The releases of transformers 5.24 whose answers for the SentencePiece folders were kept.
SPM_524 = ("0.29.0", "0.30.0")


@each_release_case(release_table("real_conv_", dict.fromkeys(SPM_524, ())))
def test_vllm_0_29_and_0_30_rendering_of_the_spm_folders_replays(release: str,
                                                                  case: RenderCase) -> None:
    """vLLM 0.29.0 and 0.30.0 (transformers 5.24) answered the rebuilding classes'
    SentencePiece folders as 0.31.0 did, and the generic backend's by 5.24's build
    (releases/0.30.0/real_conv_vectors.jsonl, 0.29.0's)."""
    assert_server_replays(case, release)


@pytest.mark.parametrize("release", SPM_524)
def test_transformers_5_24_converts_the_generic_folders_otherwise(release: str) -> None:
    """Its transformers builds the generic backend's tokenizer otherwise (the model's
    normalizer spec followed, merges by score): 76 of those folders' 78 texts got other
    ids than 0.31.0's, so one build cannot give both releases' answers."""
    cases = [c for c in SPM_CASES if c.real in GENERIC and c.status == 200
             and c.endpoint == "/v1/completions" and isinstance(c.body.get("prompt"), str)
             and c.body["prompt"].strip()]
    kept = [kept_case(c, release, "real_conv_") for c in cases]
    assert len(cases) > 60
    assert sum(k.token_ids != c.token_ids for c, k in zip(cases, kept, strict=True)) >= 60


@each_release_case(release_table("real_conv_more_", {"0.30.0": ()}))
def test_vllm_0_30_rendering_of_the_more_folders_replays(release: str, case: RenderCase) -> None:
    """vLLM 0.30.0 (transformers 5.24) answered the conv_more folders
    (releases/0.30.0/real_conv_more_vectors.jsonl): as 0.31.0 did but for LUKE's and
    mLUKE's, whose classes build otherwise there (render/_hf_rebuilds.py
    ``Rebuild.builds_in``)."""
    assert_server_replays(case, release)


@pytest.mark.parametrize("release", ["0.29.0", "0.30.0"])
@pytest.mark.parametrize("real", ["conv_luke", "conv_mluke"])
def test_the_luke_conversions_differ_at_transformers_5_24(release: str, real: str) -> None:
    """The converted LUKE folders' answers at 0.29.0 and 0.30.0 differ from 0.31.0's (the
    entity tokens' ids, LUKE's post-processor), and each is replayed above."""
    base = {c.id: (c.status, c.token_ids) for c in MORE_CASES if c.real == real}
    others = {c.real for c in MORE_CASES if c.real is not None and c.real != real}
    kept = release_table("real_conv_more_", {release: others})[release]
    assert base and any((c.status, c.token_ids) != base[c.id] for c in kept)


def _release_renderer(release: str, real: str) -> Renderer:
    return real_renderer(CASES, real, release)


#: The corpora each source's conversions were replayed on (render/_hf_converted.py
#: ``CONVERTED_RELEASES``).
SOURCE_CORPORA = {"sentencepiece": ("real_conv_", "real_conv_spm_", "real_conv_more_"),
                  "generic": ("real_conv_", "real_conv_spm_", "real_conv_more_"),
                  "files": ("real_conv_files_", "real_conv_more_")}


@pytest.mark.parametrize("source", sorted(SOURCE_CORPORA))
def test_each_conversion_opens_the_releases_that_answered_its_corpora(source: str) -> None:
    """A release is open for a conversion exactly when its answers to every corpus of it
    are kept (0.31.0's are the corpora's own)."""
    kept = {p.parent.name for p in (RENDER_DIR / "releases").glob("*/meta.json")
            if all((p.parent / f"{c}vectors.jsonl").is_file() for c in SOURCE_CORPORA[source])}
    assert CONVERTED_RELEASES[source] == kept | {"0.31.0"}


@pytest.mark.parametrize(("release", "real"), [
    ("0.29.0", "conv_qwen3"), ("0.29.0", "conv_whisper"), ("0.33.0", "conv_qwen3"),
    ("0.33.0", "conv_whisper"), ("0.33.0", "conv_luke"), ("0.33.0", "conv_dpr_reader")])
def test_a_release_not_replayed_is_refused(monkeypatch: pytest.MonkeyPatch, release: str,
                                           real: str) -> None:
    """A release missing from a source's ``CONVERTED_RELEASES`` (its answers not
    harvested) is refused for that source's conversions; every release prefixkey knows
    answered them all, so one is taken out here."""
    from prefixkey.render import _hf_converted

    monkeypatch.setattr(_hf_converted, "CONVERTED_RELEASES", MappingProxyType(
        {**CONVERTED_RELEASES, "files": CONVERTED_RELEASES["files"] - {release}}))
    case = next(c for c in CASES if c.name == real)
    with pytest.raises(RenderUnsupportedError, match=f"not vLLM {release}'s"):
        Renderer(server_options(case, release))  # not the cached renderers


#: The conv_more folders vLLM 0.29.0 is refused for: its registry starts none of
#: MBart's and Udop's architectures.
NOT_029 = frozenset({"conv_mbart", "conv_mbart50", "conv_udop"})


@each_release_case(release_table("real_conv_more_", {"0.29.0": NOT_029}))
def test_vllm_0_29_rendering_of_the_more_folders_replays(release: str, case: RenderCase) -> None:
    """vLLM 0.29.0 (transformers 5.24) answered the other conv_more folders
    (releases/0.29.0/real_conv_more_vectors.jsonl)."""
    assert_server_replays(case, release)


@pytest.mark.parametrize("real", sorted(NOT_029))
def test_vllm_0_29_is_refused_for_the_more_folders_it_cannot_render(real: str) -> None:
    with pytest.raises(RenderUnsupportedError, match=r"0\.29\.0"):
        _release_renderer("0.29.0", real)
