"""transformers' legacy ``added_tokens.json`` as from_pretrained reads it (render/_hf_specials).

One rule at every release vLLM 0.29-0.33 runs (transformers 5.17, 5.19, 5.24 read it
with the same code): the file is opened only when tokenizer_config.json has no
``added_tokens_decoder``; each token is special when its text is a named or extra special
token, and then not normalized; tokenizer.json's added tokens win an id both give. The
ids vLLM then gets are replayed in tests/render/test_real_files_vectors.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tokenizers import Tokenizer, models

from prefixkey.render import ModelFolderError
from prefixkey.render._hf_specials import added_tokens_decoder, legacy_added_tokens


@pytest.mark.parametrize(("config", "file", "read"), [
    ({}, {"<a>": 5}, {"<a>": 5}),
    ({"added_tokens_decoder": {}}, {"<a>": 5}, None),
    ({}, None, None),
])
def test_the_file_is_read_only_without_a_decoder(tmp_path: Path, config: dict[str, Any],
                                                 file: dict[str, int] | None,
                                                 read: dict[str, int] | None) -> None:
    if file is not None:
        (tmp_path / "added_tokens.json").write_text(json.dumps(file), "utf-8")
    assert legacy_added_tokens(tmp_path, config) == read


@pytest.mark.parametrize("text", ['["<a>"]', '{"<a>": "5"}', '{"<a>": true}', "{"])
def test_a_file_that_is_no_token_to_id_map_is_a_folder_error(tmp_path: Path,
                                                            text: str) -> None:
    (tmp_path / "added_tokens.json").write_text(text, "utf-8")
    with pytest.raises(ModelFolderError, match=r"added_tokens\.json"):
        legacy_added_tokens(tmp_path, {})


def test_specials_are_named_or_extra_tokens_and_tokenizer_json_wins_an_id() -> None:
    loaded = Tokenizer(models.WordLevel({"a": 0, "<s>": 1}, unk_token="a"))
    loaded.add_special_tokens(["<s>"])
    init: dict[str, Any] = {"bos_token": "<x>", "extra_special_tokens": ["<y>"]}
    decoder = added_tokens_decoder(init, None, loaded,
                                   {"<x>": 7, "<y>": 8, "<z>": 9, "<clash>": 1})
    flags = {i: (t.content, t.special, t.normalized) for i, t in decoder.items()}
    assert flags == {7: ("<x>", True, False), 8: ("<y>", True, False),
                     9: ("<z>", False, True), 1: ("<s>", True, False)}
