"""Replay vLLM's rendering of folders with added_tokens.json or chat_template.json (issue 19).

``real_files_bodies.jsonl`` (tools/build_real_files_bodies.py) holds the bodies of
test_real_wu_vectors.py, and texts holding the added tokens, over tests/render/real/
folders carrying transformers' legacy ``added_tokens.json`` (read only without an
``added_tokens_decoder``: render/_hf_specials.py ``legacy_added_tokens``) on the as-is,
rebuilt and converted paths, or a processor's ``chat_template.json`` in a text-only
folder (AutoProcessor finds no processor: render/_folder.py ``_check_processor_template``).
The vectors are what vLLM 0.31.0's render server answered (tools/harvest_render.py), the
releases/ copies what the other releases' did: every 200 must give the same ids, every
vLLM error an error with the same status.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from real_models import folder as real_folder
from render_cases import (
    RenderCase,
    assert_server_replays,
    each_case,
    each_release_case,
    real_renderer,
    release_table,
    render_cases,
)

from prefixkey.render import Renderer, RenderUnsupportedError, ServerOptions

CASES = render_cases("real_files_")
#: Each folder: the path vLLM's transformers loads it with, and the file it carries.
FOLDERS = {
    "files_legacy_asis": ("as_is", "added_tokens.json"),
    "files_legacy_rebuilt": ("rebuilt", "added_tokens.json"),
    "files_modern_rebuilt": ("rebuilt", "added_tokens.json"),
    "files_legacy_conv": ("converted", "added_tokens.json"),
    "files_ctj_text": ("as_is", "chat_template.json"),
    "files_ctj_only": ("as_is", "chat_template.json"),
}
#: The releases whose answers were kept (releases/<release>/real_files_vectors.jsonl):
#: every folder at each.
KEPT = ("0.29.0", "0.30.0", "0.32.0", "0.33.0")
#: The text every added_tokens.json folder's corpus encodes (tools/build_real_files_bodies.py).
ADDED_TEXT = "completion-added-no-specials"


def test_the_corpus_covers_every_folder() -> None:
    assert {c.real for c in CASES} == set(FOLDERS)
    assert {200, 400} <= {c.status for c in CASES}


@pytest.mark.parametrize(("real", "spec"), sorted(FOLDERS.items()))
def test_each_folder_takes_its_path_and_carries_its_file(real: str,
                                                        spec: tuple[str, str]) -> None:
    path, file = spec
    r = real_renderer(CASES, real)
    assert r.folder.tokenizer_decision.path == path
    assert (r.folder.tokenizer_path / file).is_file()


@pytest.mark.parametrize("real", ["files_legacy_asis", "files_legacy_rebuilt",
                                  "files_legacy_conv"])
def test_a_legacy_file_changes_the_ids(real: str, tmp_path: Path) -> None:
    """Without the file the added-token text is other ids: the replay proves it is read."""
    case = next(c for c in CASES if c.real == real and c.id.endswith(ADDED_TEXT))
    folder = tmp_path / real
    shutil.copytree(real_folder(real), folder, ignore=shutil.ignore_patterns(".*"))
    (folder / "added_tokens.json").unlink()
    renderer = Renderer(ServerOptions(model=str(folder), max_model_len=512))
    assert renderer.tokenizer.encode(case.body["prompt"], add_special_tokens=False) \
        != _prompt_ids(case)


def test_the_file_beside_a_decoder_changes_nothing() -> None:
    """files_modern_rebuilt is Qwen3's folder (qwen3) with the legacy folder's file beside
    its added_tokens_decoder: vLLM's ids are those of the folder without it."""
    modern = {c.id.split("/", 1)[1]: _prompt_ids(c) for c in CASES
              if c.real == "files_modern_rebuilt" and c.id.endswith(ADDED_TEXT)}
    legacy = {c.id.split("/", 1)[1]: _prompt_ids(c) for c in CASES
              if c.real == "files_legacy_rebuilt" and c.id.endswith(ADDED_TEXT)}
    renderer = Renderer(ServerOptions(model=str(real_folder("qwen3")), max_model_len=512))
    case = next(c for c in CASES if c.real == "files_modern_rebuilt"
                and c.id.endswith(ADDED_TEXT))
    assert renderer.tokenizer.encode(case.body["prompt"], add_special_tokens=False) \
        == modern[ADDED_TEXT] != legacy[ADDED_TEXT]


def test_a_text_folder_renders_with_the_tokenizer_template() -> None:
    """vLLM's processor lookup finds none, so chat_template.json's template is unused:
    no 200 answer holds its text, and without another template chats are vLLM's 400."""
    marker = Renderer(ServerOptions(model=str(real_folder("llama3")))).tokenizer.encode(
        "PROCESSOR TEMPLATE", add_special_tokens=False)
    for case in CASES:
        if str(case.real).startswith("files_ctj") and case.status == 200:
            assert not _holds(case.token_ids or [], marker), case.id
    only = [c for c in CASES if c.real == "files_ctj_only" and "/chat-" in c.id]
    assert only and all(c.status == 400 for c in only)


def _prompt_ids(case: RenderCase) -> list[int]:
    """A one-prompt completion's ids (vLLM answers a list per prompt)."""
    assert case.token_ids and isinstance(case.token_ids[0], list), case.id
    ids: list[int] = case.token_ids[0]
    return ids


def _holds(ids: list[int], part: list[int]) -> bool:
    return any(ids[i:i + len(part)] == part for i in range(len(ids) - len(part) + 1))


@pytest.mark.parametrize(("field", "value", "why"), [
    ("model_type", "whisper", "model_type 'whisper' has a processor class"),
    ("processor_class", "LlavaProcessor", "names a processor_class"),
])
def test_a_folder_whose_processor_reads_the_file_is_refused(tmp_path: Path, field: str,
                                                            value: str, why: str) -> None:
    folder = tmp_path / "folder"
    shutil.copytree(real_folder("files_ctj_text"), folder, ignore=shutil.ignore_patterns(".*"))
    name = "config.json" if field == "model_type" else "tokenizer_config.json"
    config = json.loads((folder / name).read_text("utf-8"))
    config[field] = value
    (folder / name).write_text(json.dumps(config), "utf-8")
    with pytest.raises(RenderUnsupportedError, match=why) as info:
        Renderer(ServerOptions(model=str(folder), max_model_len=512))
    assert info.value.field == "chat_template.json"


@each_case(CASES)
def test_vllm_rendering_of_the_folders_replays(case: RenderCase) -> None:
    assert_server_replays(case)


@each_release_case(release_table("real_files_", dict.fromkeys(KEPT, ())))
def test_other_releases_rendering_of_the_folders_replays(release: str, case: RenderCase) -> None:
    assert_server_replays(case, release)
