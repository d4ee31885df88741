"""The mistral mode's folder and option rules (the ids themselves: test_real_mistral_vectors).

vLLM 0.31's auto mode takes the mistral mode only with ``consolidated*.safetensors``
weights next to Mistral's tokenizer file (tokenizers/registry.py); without them its
answer depends on the server's own folder, so a folder with ``tekken.json`` or
``tokenizer.model.v*`` and no mode is refused, naming ``--tokenizer-mode``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import real_models

from prefixkey.errors import MissingExtraError, PrefixKeyError
from prefixkey.render import (
    ModelFolderError,
    Renderer,
    RenderUnsupportedError,
    ServerOptions,
)

pytest.importorskip("mistral_common")

USER = {"role": "user", "content": "What is the weather like in Paris today?"}


def _copy(name: str, tmp_path: Path, *extra: str) -> Path:
    """A copy of a real folder (its tokenizer file linked) with empty extra files."""
    source = real_models.folder(name)
    target = tmp_path / name
    target.mkdir()
    for path in source.iterdir():
        if not path.name.startswith("."):
            (target / path.name).symlink_to(path)
    for file in extra:
        (target / file).write_bytes(b"")
    return target


@pytest.mark.parametrize(("name", "file"), [("mistral_nemo", "tekken.json"),
                                            ("mistral7b_v03", "tokenizer.model.v3")])
def test_auto_mode_on_a_mistral_folder_asks_for_the_servers_mode(name: str, file: str) -> None:
    with pytest.raises(RenderUnsupportedError) as info:
        Renderer(ServerOptions(model=str(real_models.folder(name))))
    assert info.value.field == "--tokenizer-mode"
    assert file in str(info.value) and "consolidated*.safetensors" in str(info.value)


def test_auto_mode_with_consolidated_weights_is_the_mistral_mode(tmp_path: Path) -> None:
    folder = _copy("mistral_nemo", tmp_path, "consolidated.safetensors")
    auto = Renderer(ServerOptions(model=str(folder)))
    explicit = Renderer(ServerOptions(model=str(folder), tokenizer_mode="mistral"))
    body = {"messages": [USER]}
    assert auto.render_chat(body).token_ids == explicit.render_chat(body).token_ids
    assert list(auto.render_chat(body).token_ids)[:2] == [1, 3]  # <s>[INST]


def test_native_config_with_weights_is_refused(tmp_path: Path) -> None:
    folder = _copy("mistral_nemo", tmp_path, "consolidated.safetensors", "params.json")
    with pytest.raises(RenderUnsupportedError) as info:
        Renderer(ServerOptions(model=str(folder), tokenizer_mode="mistral"))
    assert info.value.field == "params.json"


def test_the_mode_is_read_as_vllm_reads_it() -> None:
    assert ServerOptions(model="m", tokenizer_mode="Mistral").tokenizer_mode == "mistral"
    with pytest.raises(RenderUnsupportedError):
        ServerOptions(model="m", tokenizer_mode="kimi_k3")


def test_a_folder_without_a_mistral_tokenizer_file(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"model_type": "mistral", '
                                          '"max_position_embeddings": 64}')
    with pytest.raises(ModelFolderError) as info:
        Renderer(ServerOptions(model=str(tmp_path), tokenizer_mode="mistral"))
    assert "No tokenizer file found" in str(info.value)


def test_without_sentencepiece_a_sentencepiece_folder_names_the_extra(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    folder = real_models.folder("mistral7b_v03")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "sentencepiece" else real(name, *a))
    with pytest.raises(MissingExtraError, match=r"prefixkey\[mistral\]") as info:
        Renderer(ServerOptions(model=str(folder), tokenizer_mode="mistral"))
    assert info.value.module == "sentencepiece"
    # A tekken file needs no SentencePiece.
    assert Renderer(ServerOptions(model=str(real_models.folder("mistral_nemo")),
                                  tokenizer_mode="mistral")).render_chat({"messages": [USER]})


def test_an_unverified_mistral_common_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import mistral_common

    folder = real_models.folder("mistral_nemo")
    monkeypatch.setattr(mistral_common, "__version__", "1.11.6")
    with pytest.raises(RenderUnsupportedError) as info:
        Renderer(ServerOptions(model=str(folder), tokenizer_mode="mistral"))
    assert info.value.field == "mistral_common" and "1.11.6" in str(info.value)


def test_server_kwargs_that_change_the_tokenizer_call_are_refused() -> None:
    folder = real_models.folder("mistral_nemo")
    options = ServerOptions(model=str(folder), tokenizer_mode="mistral",
                            default_chat_template_kwargs={"truncation": True})
    with pytest.raises(RenderUnsupportedError):
        Renderer(options)
    harmless = ServerOptions(model=str(folder), tokenizer_mode="mistral",
                             default_chat_template_kwargs={"enable_thinking": True})
    assert Renderer(harmless).render_chat({"messages": [USER]}).token_ids


def test_rendering_does_not_change_the_body() -> None:
    renderer = Renderer(ServerOptions(model=str(real_models.folder("mistral_nemo")),
                                      tokenizer_mode="mistral"))
    body = {"messages": [USER, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_0123456789abcdef", "type": "function",
         "function": {"name": "f", "arguments": '{"x": 1}'}}]},
        {"role": "tool", "content": "1", "tool_call_id": "call_0123456789abcdef"}],
        "tools": [{"type": "function", "function": {"name": "f"}}]}
    before = copy.deepcopy(body)
    renderer.render_chat(body)
    assert body == before


def test_images_are_not_rendered_in_this_mode() -> None:
    renderer = Renderer(ServerOptions(model=str(real_models.folder("mistral_nemo")),
                                      tokenizer_mode="mistral"))
    with pytest.raises(PrefixKeyError):
        renderer.render_chat({"messages": [USER]}, placeholder_token_ids=[[10, 10]])


def test_the_render_command_takes_the_mistral_mode(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from prefixkey.cli import main

    folder = real_models.folder("mistral7b_v03")
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"id": "c", "endpoint": "/v1/chat/completions",
                                  "body": {"messages": [USER]}}) + "\n", encoding="utf-8")
    assert main(["render", "--model-dir", str(folder), "--tokenizer-mode", "mistral",
                 str(source)]) == 0
    (line,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    renderer = Renderer(ServerOptions(model=str(folder), tokenizer_mode="mistral"))
    assert line["token_ids"] == list(renderer.render_chat({"messages": [USER]}).token_ids)


def test_a_text_sentencepiece_cannot_encode_is_refused_not_guessed() -> None:
    renderer = Renderer(ServerOptions(model=str(real_models.folder("mistral7b_v03")),
                                      tokenizer_mode="mistral"))
    with pytest.raises(RenderUnsupportedError, match="cannot encode"):
        renderer.render_completion({"prompt": "a\ud800b"})


def test_hash_with_the_mistral_mode_keys_the_rendered_ids(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from prefixkey import Hasher
    from prefixkey.cli import main

    folder = real_models.folder("mistral_nemo")
    body = {"messages": [USER] * 4, "cache_salt": "salt"}
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"id": "c", "endpoint": "/v1/chat/completions",
                                  "block_size": 4, "body": body}) + "\n", encoding="utf-8")
    assert main(["hash", "--model-dir", str(folder), "--tokenizer-mode", "mistral",
                 str(source)]) == 0
    (line,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    rendered = Renderer(ServerOptions(model=str(folder), tokenizer_mode="mistral"))
    keys = Hasher(block_size=4).block_hashes(rendered.render_chat(body).request)
    assert line["block_hashes"] == [k.hex() for k in keys if isinstance(k, bytes)]


def test_hf_mode_on_a_tekken_only_folder_takes_transformers_conversion() -> None:
    """vLLM 0.31 --tokenizer-mode hf on Mistral NeMo's tekken.json alone: the server
    starts with transformers' conversion (chat: no template, 400; completions: no BOS),
    reproduced (render/_hf_tiktoken.py; replayed in test_real_tiktoken_vectors.py)."""
    decision = Renderer(ServerOptions(model=str(real_models.folder("mistral_nemo")),
                                      tokenizer_mode="hf")).folder.tokenizer_decision
    assert decision.path == "converted" and decision.converted is not None
    assert decision.converted.converter == "tekken" and "MistralConverter" in decision.why


def test_hf_mode_on_a_sentencepiece_only_folder_is_a_server_that_does_not_start() -> None:
    """vLLM 0.31 --tokenizer-mode hf on tokenizer.model.v3 alone stops at start:
    "Couldn't instantiate the backend tokenizer" (transformers seeks 'tokenizer.model.')."""
    with pytest.raises(ModelFolderError) as info:
        Renderer(ServerOptions(model=str(real_models.folder("mistral7b_v03")),
                               tokenizer_mode="hf"))
    assert info.value.field == "tokenizer.model.v3"
    assert "does not start" in str(info.value)


def test_hf_mode_reads_tokenizer_json_beside_mistrals_files(tmp_path: Path) -> None:
    """vLLM 0.31 --tokenizer-mode hf over mistral_hf_llama2tok plus Mistral NeMo's
    tekken.json and Mistral 7B's tokenizer.model.v3 answered its 58 corpus bodies as the
    folder without them (transformers reads tekken.json only without tokenizer.json)."""
    folder = _copy("mistral_hf_llama2tok", tmp_path)
    (folder / "tekken.json").symlink_to(real_models.folder("mistral_nemo") / "tekken.json")
    (folder / "tokenizer.model.v3").symlink_to(
        real_models.folder("mistral7b_v03") / "tokenizer.model.v3")
    plain = Renderer(ServerOptions(model=str(real_models.folder("mistral_hf_llama2tok"))))
    both = Renderer(ServerOptions(model=str(folder), tokenizer_mode="hf"))
    body = {"prompt": "What is the weather like in Paris today?"}
    ids = [list(r.token_ids) for r in both.render("/v1/completions", body)]
    assert ids == [list(r.token_ids) for r in plain.render("/v1/completions", body)]
    assert ids[0][0] == 1  # <s>: the tokenizer.json's post-processor, not a conversion's
    with pytest.raises(RenderUnsupportedError) as info:  # auto: the server's weights decide
        Renderer(ServerOptions(model=str(folder)))
    assert info.value.field == "--tokenizer-mode"
