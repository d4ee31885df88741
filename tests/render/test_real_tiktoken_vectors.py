"""Replay vLLM 0.31.0's rendering of folders whose tokenizer transformers converts from a
tiktoken or tekken vocabulary file (no tokenizer.json).

``real_tiktoken_bodies.jsonl`` (tools/build_real_tiktoken_bodies.py) holds chat and
completions bodies over Meta's Llama 3 ``tokenizer.model`` (tiktoken, from llama-models'
wheel) under the Hugging Face repository's tokenizer_config.json and under one with
gaps in ``added_tokens_decoder``, ``extra_special_tokens`` and ``add_bos_token``; and
over mistral_common's ``tekken.json`` files, alone and given ``special_tokens`` under a
tokenizer_config.json with ``add_bos_token``/``add_eos_token`` (``--tokenizer-mode hf``).
``real_tiktoken_vectors.jsonl`` is what vLLM 0.31.0's render server answered
(tools/harvest_render.py); ``real_tiktoken_029_`` (the tiktoken folders and
mistral_nemo), ``_030_``, ``_032_`` and ``_033_`` are the same bodies answered by vLLM
0.29.0's, 0.30.0's, 0.32.0's and 0.33.0's servers,
each replayed with ``vllm_version`` set. vLLM 0.29.0's mode hf loads a Mistral model
type's tekken.json with transformers' MistralCommonBackend: mistral_nemo's completions are
then mistral_common's ids (rendered as the mistral mode renders them) and its chat finds
no template (a 400); its server does not start for mistral_tekken_rule. Every 200 must
give the same ids, every vLLM error an error with the same status. The files are fetched
into a cache (tests/real_models.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from render_cases import (
    RenderCase,
    assert_covers_both_answers,
    assert_server_replays,
    each_release_case,
    release_table,
    render_cases,
    server_renderer,
)

from prefixkey.errors import PrefixKeyError
from prefixkey.render import Renderer, RenderUnsupportedError, ServerOptions
from prefixkey.render._hf_converted import MODEL_PROTO
from prefixkey.render._hf_tiktoken import (
    TEKKEN_DEPRECATED_SPECIALS,
    TEKKEN_FILLER,
    ConvertedSource,
    converted_source,
)
from prefixkey.render._protobuf import is_message

#: Corpus prefix -> the release whose render server answered it (the same bodies).
RELEASES = {"real_tiktoken_": "0.31.0", "real_tiktoken_029_": "0.29.0",
            "real_tiktoken_030_": "0.30.0", "real_tiktoken_032_": "0.32.0",
            "real_tiktoken_033_": "0.33.0"}
CASES = {prefix: render_cases(prefix) for prefix in RELEASES}
#: Each folder and the converter vLLM's transformers used for its vocabulary file.
FOLDER_CONVERTERS = {"llama3_tiktoken": ("tiktoken", "tokenizer.model"),
                     "llama3_tiktoken_rule": ("tiktoken", "tiktoken.model"),
                     "mistral_nemo": ("tekken", "tekken.json"),
                     "mistral_tekken_rule": ("tekken", "tekken.json")}


def renderer(prefix: str, case: RenderCase) -> Renderer:
    return server_renderer(case, RELEASES[prefix])


def test_the_corpus_covers_every_folder_and_both_answers() -> None:
    for prefix, cases in CASES.items():
        # 0.29's hf mode loads tekken.json with MistralCommonBackend, which does not load
        # mistral_tekken_rule's (the server does not start).
        folders = [f for f in FOLDER_CONVERTERS
                   if prefix != "real_tiktoken_029_" or f != "mistral_tekken_rule"]
        assert_covers_both_answers(cases, folders)


@pytest.mark.parametrize("real", sorted(FOLDER_CONVERTERS))
def test_each_folder_takes_its_conversion(real: str) -> None:
    case = next(c for c in CASES["real_tiktoken_"] if c.real == real)
    decision = renderer("real_tiktoken_", case).folder.tokenizer_decision
    assert (decision.path, decision.tokenizer_class) == ("converted", "TokenizersBackend")
    assert decision.converted is not None and decision.reproduced
    assert (decision.converted.converter, decision.converted.file) == FOLDER_CONVERTERS[real]


@each_release_case(release_table("real_tiktoken_", dict.fromkeys(RELEASES.values(), ())))
def test_vllm_rendering_of_converted_folders_replays(release: str, case: RenderCase) -> None:
    assert_server_replays(case, release)


def test_vllm_0_29_hf_mode_loads_a_mistral_tekken_json_with_mistral_common(
        tmp_path: Path) -> None:
    """vLLM 0.29 passes no mistral_format=False in mode hf: transformers 5.24 loads
    MistralCommonBackend over tekken.json, so prefixkey renders mistral_nemo with
    mistral_common (the replay above), refuses mistral_tekken_rule with the reason its
    server did not start ("Unknown control token [IMG]"), and a folder with a chat
    template, which was not harvested."""
    import real_models

    nemo = real_models.folder("mistral_nemo")
    renderer = Renderer(ServerOptions(model=str(nemo), tokenizer_mode="hf",
                                      vllm_version="0.29.0"))
    assert renderer._mistral is not None
    with pytest.raises(PrefixKeyError, match=r"Unknown control token \[IMG\]") as failed:
        Renderer(ServerOptions(model=str(real_models.folder("mistral_tekken_rule")),
                               tokenizer_mode="hf", vllm_version="0.29.0"))
    assert failed.value.field == "--tokenizer-mode"
    with pytest.raises(RenderUnsupportedError, match="not verified") as info:
        renderer.render("/v1/chat/completions", {
            "model": str(nemo), "messages": [{"role": "user", "content": "Hi"}],
            "chat_template": "{{ messages[0]['content'] }}"})
    assert info.value.field == "chat_template"
    folder = tmp_path / "nemo"
    folder.mkdir()
    for name in ("config.json", "tekken.json"):
        (folder / name).symlink_to(nemo / name)
    (folder / "tokenizer_config.json").write_text('{"chat_template": "{{ 1 }}"}')
    with pytest.raises(RenderUnsupportedError, match="not verified") as info:
        Renderer(ServerOptions(model=str(folder), tokenizer_mode="hf", vllm_version="0.29.0"))
    assert info.value.field == "tokenizer_config.json"
    # transformers 5.24 takes tekken.json beside a tokenizer.json too: not harvested.
    (folder / "tokenizer_config.json").unlink()
    (folder / "tokenizer.json").symlink_to(real_models.folder("mbart_encdec") / "tokenizer.json")
    with pytest.raises(RenderUnsupportedError, match=r"beside a tokenizer\.json") as info:
        Renderer(ServerOptions(model=str(folder), tokenizer_mode="hf", vllm_version="0.29.0"))
    assert info.value.field == "--tokenizer-mode"


def test_the_deprecated_tekken_specials_are_mistral_commons() -> None:
    tekken = pytest.importorskip("mistral_common.tokens.tokenizers.tekken")
    listed = sorted(tekken.Tekkenizer.DEPRECATED_SPECIAL_TOKENS, key=lambda e: e["rank"])
    assert [e["rank"] for e in listed] == list(range(len(listed)))
    assert tuple(str(getattr(e["token_str"], "value", e["token_str"])) for e in listed) == (
        TEKKEN_DEPRECATED_SPECIALS)
    assert tekken.Tekkenizer.SPECIAL_TOKEN_TEMPLATE == TEKKEN_FILLER


def test_a_tiktoken_file_is_no_model_proto_and_a_sentencepiece_model_is() -> None:
    import real_models

    tiktoken = real_models.folder("llama3_tiktoken") / "tokenizer.model"
    spm = real_models.folder("mistral7b_v03") / "tokenizer.model.v3"
    assert not is_message(tiktoken.read_bytes(), MODEL_PROTO)
    assert is_message(spm.read_bytes(), MODEL_PROTO)


def test_a_folder_whose_names_match_two_vocabulary_files_is_refused(tmp_path: Path) -> None:
    """transformers reads the first match in os.listdir's order, which the folder's copy
    does not fix."""
    (tmp_path / "tekken.json").write_text("{}")
    (tmp_path / "tokenizer.model").write_text("")
    with pytest.raises(RenderUnsupportedError) as info:
        converted_source(tmp_path)
    assert "'tekken.json' and 'tokenizer.model'" in str(info.value)


def test_a_name_holding_tokenizer_json_stops_the_search(tmp_path: Path) -> None:
    """from_pretrained searches the listing only when no name holds "tokenizer.json"; it
    then reads the class's own vocab_file, tokenizer.model (none here: not converted)."""
    (tmp_path / "tekken.json").write_text("{}")
    assert converted_source(tmp_path) == ConvertedSource("tekken", "tekken.json")
    (tmp_path / "tokenizer.json.orig").write_text("{}")
    assert converted_source(tmp_path) is None


def test_a_broken_tiktoken_line_is_a_folder_vllm_does_not_start_for(tmp_path: Path) -> None:
    import real_models

    source = real_models.folder("llama3_tiktoken")
    for name in ("config.json", "tokenizer_config.json"):
        (tmp_path / name).write_bytes((source / name).read_bytes())
    (tmp_path / "tiktoken.model").write_bytes(b"IQ== 0\nIg== one\n")
    with pytest.raises(PrefixKeyError) as info:
        Renderer(ServerOptions(model=str(tmp_path))).render(
            "/v1/completions", {"prompt": "x"})
    assert info.value.field == "tiktoken.model"
    assert "line 2" in str(info.value) and "does not start" in str(info.value)


