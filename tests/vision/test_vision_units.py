"""The vision framework's own rules: placement, limits, options, refusals (no server needed).

What vLLM answered is replayed by test_vision_vectors.py; these pin the pieces around
it: replace_markers (vLLM's token-level PromptReplacement), the flags that became
ServerOptions fields, the refusals of what no family reproduces, and the loaded size
of an EXIF-rotated image.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("PIL", reason="the multimodal extra (Pillow) is not installed")
pytest.importorskip("jinja2", reason="the render extra (jinja2) is not installed")

from images import image_bytes, materialize

from prefixkey.cli import main
from prefixkey.errors import InvalidRequestError, PrefixKeyError
from prefixkey.multimodal import MMHasher
from prefixkey.render import (
    ModelFolderError,
    Renderer,
    RenderRequestError,
    RenderUnsupportedError,
    ServerOptions,
)
from prefixkey.render._vision import FAMILIES, UNVERIFIED, replace_markers

ROOT = Path(__file__).resolve().parents[2]
BLIP2 = ROOT / "tests" / "multimodal" / "models" / "blip2_tiny"
TEXT_FOLDER = ROOT / "tests" / "render" / "models" / "gpt2_bytelevel"
IMAGES = ROOT / "tests" / "multimodal" / "images"
PNG = base64.b64encode((IMAGES / "rgb.png").read_bytes()).decode()


def _image(url: str = f"data:image/png;base64,{PNG}") -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


def _body(*parts: Any, **extra: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": list(parts)}], **extra}


# ------------------------------------------------------------------ placement


def test_markers_are_replaced_in_order_and_extra_ones_stay() -> None:
    placed = replace_markers([1, 9, 2, 9, 3, 9], [9], [[7, 7], [8]])
    assert placed.token_ids == [1, 7, 7, 2, 8, 3, 9]
    assert placed.spans == [(1, 2), (4, 1)]


def test_multi_token_markers_match_whole() -> None:
    placed = replace_markers([5, 6, 5, 6, 7], [6, 7], [[0, 0, 0]])
    assert placed.token_ids == [5, 6, 5, 0, 0, 0]
    assert placed.spans == [(3, 3)]


def test_a_missing_marker_is_vllm_s_500() -> None:
    with pytest.raises(RenderRequestError, match=r"mm_items\['image'\]\[1\]") as caught:
        replace_markers([1, 9, 2], [9], [[7], [8]])
    assert caught.value.status == 500


# ------------------------------------------------------------------ options


@pytest.mark.parametrize(("value", "limits"), [
    ({"image": 2}, {"image": 2}), ({"image": {"count": 3, "width": 512}}, {"image": 3}),
    ({}, {}), ({"image": 0, "video": 1}, {"image": 0, "video": 1}),
])
def test_limit_mm_per_prompt_is_read_as_vllm_reads_it(value: Any,
                                                      limits: dict[str, int]) -> None:
    assert dict(ServerOptions(model="m", limit_mm_per_prompt=value).limit_mm_per_prompt) == \
        limits


@pytest.mark.parametrize("value", [{"image": -1}, {"image": "2"}, {"image": True}, [2],
                                   {"image": {"width": 5}}])
def test_a_malformed_limit_is_refused(value: Any) -> None:
    with pytest.raises(ModelFolderError) as caught:
        ServerOptions(model="m", limit_mm_per_prompt=value)
    assert (caught.value.field or "").startswith("--limit-mm-per-prompt")


@pytest.mark.parametrize("value", [[1], {1: 2}, "x"])
def test_malformed_server_processor_kwargs_are_refused(value: Any) -> None:
    with pytest.raises(ModelFolderError, match="JSON object"):
        ServerOptions(model="m", mm_processor_kwargs=value)


def test_the_item_limit_counts_per_prompt() -> None:
    """BLIP-2's own limit is 1; the server's may only lower it (validate_num_items)."""
    renderer = Renderer(ServerOptions(model=str(BLIP2), limit_mm_per_prompt={"image": 0}))
    with pytest.raises(RenderRequestError, match=r"At most 0 image\(s\) may be provided"):
        renderer.render_chat(_body(_image(), {"type": "text", "text": "x"}))


def test_request_kwargs_are_vllm_s_400_even_without_images() -> None:
    renderer = Renderer(ServerOptions(model=str(TEXT_FOLDER)))
    for name, value in (("mm_processor_kwargs", {"max_pixels": 1}),
                        ("media_io_kwargs", {"image": {}}) ):
        with pytest.raises(RenderRequestError, match="--trust-request-mm-kwargs") as caught:
            renderer.render_chat(_body({"type": "text", "text": "hi"}, **{name: value}))
        assert caught.value.field == name


def test_the_cli_takes_the_image_flags(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"id": "a", "endpoint": "/v1/chat/completions",
                                  "body": _body(_image())}) + "\n")
    status = main(["render", "--model-dir", str(BLIP2), "--limit-mm-per-prompt",
                   '{"image": 0}', "--mm-processor-kwargs", "{}", "--trust-request-mm-kwargs",
                   str(source)])
    (line,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert status == 1
    assert "At most 0 image(s)" in line["error"]["message"]


# ------------------------------------------------------------------ refusals


def _vision_folder(tmp_path: Path, architecture: str) -> Path:
    folder = tmp_path / "model"
    shutil.copytree(TEXT_FOLDER, folder)
    config = json.loads((folder / "config.json").read_text())
    config["architectures"] = [architecture]
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "preprocessor_config.json").write_text("{}")
    return folder


@pytest.mark.parametrize("architecture", sorted(UNVERIFIED))
def test_an_unverified_family_s_folder_is_refused_by_name(tmp_path: Path,
                                                           architecture: str) -> None:
    family, _ = UNVERIFIED[architecture]
    with pytest.raises(RenderUnsupportedError, match="render endpoint") as caught:
        Renderer(ServerOptions(model=str(_vision_folder(tmp_path, architecture))))
    assert family in caught.value.reason
    assert caught.value.field == "preprocessor_config.json"


def test_no_architecture_is_both_verified_and_refused() -> None:
    assert not set(FAMILIES) & set(UNVERIFIED)


def test_a_text_model_refuses_images_naming_the_endpoint() -> None:
    renderer = Renderer(ServerOptions(model=str(TEXT_FOLDER)))
    with pytest.raises(RenderUnsupportedError, match="render endpoint"):
        renderer.render_chat(_body(_image()))


@pytest.mark.parametrize("part", [
    {"type": "video_url", "video_url": {"url": "data:video/mp4;base64,AAAA"}},
    {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
    {"type": "audio_url", "audio_url": {"url": "data:audio/wav;base64,AAAA"}},
])
def test_video_and_audio_stay_refused(part: dict[str, Any]) -> None:
    renderer = Renderer(ServerOptions(model=str(BLIP2)))
    with pytest.raises(RenderUnsupportedError):
        renderer.render_chat(_body(part, {"type": "text", "text": "x"}))


def test_an_image_given_by_uuid_alone_is_refused_naming_both_answers() -> None:
    """vLLM's processor base looks such an item up in its cache before any family's code
    runs: a server that has not seen the uuid answers 400, one that has renders it
    (real_dsv4_ corpus); only the replica knows which it is."""
    renderer = Renderer(ServerOptions(model=str(BLIP2)))
    with pytest.raises(RenderUnsupportedError, match=re.escape(
            "Cache miss for image at index 0 but data is not provided.")):
        renderer.render_chat(_body({"type": "image_url", "image_url": None, "uuid": "u"},
                                   {"type": "text", "text": "x"}))


def test_an_image_without_data_or_uuid_is_refused() -> None:
    renderer = Renderer(ServerOptions(model=str(BLIP2)))
    with pytest.raises(RenderUnsupportedError, match="without data"):
        renderer.render_chat(_body({"type": "image_url", "image_url": {"url": ""}},
                                   {"type": "text", "text": "x"}))


# ------------------------------------------------------------------ loading


@pytest.mark.parametrize(("orientation", "size"), [(None, (300, 100)), (1, (300, 100)),
                                                   (3, (300, 100)), (6, (100, 300)),
                                                   (8, (100, 300)), (5, (100, 300))])
def test_the_loaded_size_applies_the_exif_orientation(orientation: int | None,
                                                      size: tuple[int, int]) -> None:
    spec: dict[str, Any] = {"w": 300, "h": 100}
    if orientation is not None:
        spec["exif"] = orientation
    loaded = MMHasher(model="m").loaded_image(image_bytes(spec))
    assert loaded.size == size
    assert loaded.identifier == MMHasher(model="m").image(image_bytes(spec))


def test_a_generated_file_image_is_written_under_the_directory(tmp_path: Path) -> None:
    body = materialize(_body({"type": "image_url",
                              "image_url": {"gen": {"w": 4, "h": 3}, "as": "file"}}), tmp_path)
    url = body["messages"][0]["content"][0]["image_url"]["url"]
    assert url.startswith(tmp_path.as_uri())
    with pytest.raises(InvalidRequestError, match="allowed-local-media-path"):
        Renderer(ServerOptions(model=str(BLIP2))).render_chat(body)


# ------------------------------------------------------------------ Qwen kwargs


@pytest.mark.parametrize(("kwargs", "error", "field"), [
    ({"min_pixels": 1003520, "max_pixels": 50176}, RenderUnsupportedError,
     "mm_processor_kwargs.min_pixels"),
    ({"size": {"shortest_edge": 3136, "longest_edge": 50176}, "min_pixels": 3136,
      "max_pixels": 50176}, RenderUnsupportedError, "mm_processor_kwargs.size"),
    ({"images_kwargs": {"max_pixels": 50176}}, RenderUnsupportedError,
     "mm_processor_kwargs.images_kwargs"),
    ({"max_pixels": 0}, RenderUnsupportedError, "mm_processor_kwargs.max_pixels"),
    ({"size": {"longest_edge": 50176}}, RenderRequestError, "mm_processor_kwargs.size"),
])
def test_qwen_kwargs_not_reproduced_are_refused(kwargs: dict[str, Any],
                                                 error: type[PrefixKeyError],
                                                 field: str) -> None:
    import real_models

    folder = real_models.folder("qwen2_vl")
    renderer = Renderer(ServerOptions(model=str(folder), trust_request_mm_kwargs=True))
    with pytest.raises(error) as caught:
        renderer.render_chat(_body(_image(), {"type": "text", "text": "x"},
                                   mm_processor_kwargs=kwargs))
    assert caught.value.field == field


def test_a_family_verified_for_one_release_refuses_another() -> None:
    import real_models

    folder = real_models.folder("qwen2_vl")
    renderer = Renderer(ServerOptions(model=str(folder), vllm_version="0.32.0"))
    with pytest.raises(RenderUnsupportedError, match=r"verified against vLLM 0\.31\.0 only"):
        renderer.render_chat(_body(_image(), {"type": "text", "text": "x"}))


@pytest.mark.parametrize(("vision", "field"), [
    ({"patch_size": 0}, "patch_size"),
    ({"downsample_ratio": 1.5}, "downsample_ratio"),
    ({"max_image_tokens": "many"}, "max_image_tokens"),
    ({"min_pixels": True}, "min_pixels"),
    ({"max_wh_ratio": -1}, "max_wh_ratio"),
    ({"max_wh_ratio": "wide"}, "max_wh_ratio"),
])
def test_deepseek_v41_refuses_a_malformed_vision_config(tmp_path: Path, vision: dict[str, Any],
                                                        field: str) -> None:
    """What the V4.1 processor reads of ``vision_config`` is checked when the folder loads
    (its image answers are replayed by tests/render/test_real_dsv4_vectors.py)."""
    import real_models

    folder = tmp_path / "dsv41"
    shutil.copytree(real_models.folder("deepseek_v41_image"), folder)
    config = json.loads((folder / "config.json").read_text("utf-8"))
    (folder / "config.json").write_text(json.dumps({**config, "vision_config": vision}))
    with pytest.raises(ModelFolderError) as caught:
        Renderer(ServerOptions(model=str(folder)))
    assert caught.value.field == f"config.json vision_config {field}"
