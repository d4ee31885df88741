"""Gemma 3, LLaVA and InternVL families: what they refuse, and the rules beside vLLM's answers.

The answers themselves are replayed by test_vision_vectors.py (gemma3_, llava_,
llava_onevision_ and internvl_ corpora). These pin what a folder or a kwarg the
families do not reproduce gets: a typed refusal naming the field, never a guess.
The folders are the real ones (tests/render/real), composed from the fetch cache.
"""

from __future__ import annotations

import json
import shutil
from functools import cache
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("PIL", reason="the multimodal extra (Pillow) is not installed")
pytest.importorskip("jinja2", reason="the render extra (jinja2) is not installed")

import real_models

from prefixkey.render import ModelFolderError, Renderer, RenderUnsupportedError, ServerOptions
from prefixkey.render._vision import VisionFamily
from prefixkey.render._vision._gemma3 import replace_token_matches


@cache
def _family(name: str) -> VisionFamily:
    """The family a real folder's Renderer built (once per folder: tokenizers are large)."""
    images = Renderer(ServerOptions(model=str(real_models.folder(name))))._images
    assert images is not None and images._family is not None
    return images._family


def _copy(tmp_path: Path, name: str, **edits: dict[str, Any]) -> Path:
    """A real folder copied, with each ``file={key: value}`` merged into its JSON file."""
    folder = tmp_path / name
    shutil.copytree(real_models.folder(name), folder)
    for file, values in edits.items():
        path = folder / f"{file}.json"
        data = json.loads(path.read_text())
        data.update(values)
        path.write_text(json.dumps(data))
    return folder


def test_gemma3_merges_newline_pairs_left_to_right_without_overlap() -> None:
    """vLLM's replace_token_matches: each pair once, scanning on past a replacement."""
    assert replace_token_matches([1, 2, 1, 2, 2], (1, 2), 9) == [9, 9, 2]
    assert replace_token_matches([2, 2, 2], (2, 2), 9) == [9, 2]
    assert replace_token_matches([1], (1, 2), 9) == [1]


def test_gemma3_refuses_an_image_processor_it_does_not_reproduce(tmp_path: Path) -> None:
    folder = _copy(tmp_path, "gemma3_vl",
                   preprocessor_config={"image_processor_type": "SiglipImageProcessor"})
    with pytest.raises(RenderUnsupportedError, match="not verified") as caught:
        Renderer(ServerOptions(model=str(folder)))
    assert caught.value.field == "preprocessor_config.json image_processor_type"


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"do_pan_and_scan": 1}, "--mm-processor-kwargs.do_pan_and_scan"),
    ({"pan_and_scan_min_crop_size": 0}, "--mm-processor-kwargs.pan_and_scan_min_crop_size"),
    ({"pan_and_scan_max_num_crops": 2.0}, "--mm-processor-kwargs.pan_and_scan_max_num_crops"),
    ({"size": {"height": 448}}, "--mm-processor-kwargs.size"),
    ({"images_kwargs": {"size": 3}}, "--mm-processor-kwargs.images_kwargs"),
    ({"images_kwargs": {"pan_and_scan_max_num_crops": -1}},
     "--mm-processor-kwargs.images_kwargs.pan_and_scan_max_num_crops"),
    ({"do_pan_and_scan": True, "images_kwargs": {"do_pan_and_scan": False}},
     "--mm-processor-kwargs.do_pan_and_scan"),
])
def test_gemma3_refuses_kwargs_it_does_not_reproduce(kwargs: dict[str, Any],
                                                     field: str) -> None:
    with pytest.raises(RenderUnsupportedError) as caught:
        _family("gemma3_vl").check_kwargs(kwargs, "--mm-processor-kwargs")
    assert caught.value.field == field


def test_llava_refuses_a_vision_tower_it_does_not_reproduce(tmp_path: Path) -> None:
    config = json.loads((real_models.folder("llava15") / "config.json").read_text())
    vision = {**config["vision_config"], "model_type": "pixtral"}
    folder = _copy(tmp_path, "llava15", config={"vision_config": vision})
    with pytest.raises(RenderUnsupportedError, match="pixtral") as caught:
        Renderer(ServerOptions(model=str(folder)))
    assert caught.value.field == "config.json vision_config.model_type"


def test_llava_refuses_an_unknown_feature_select_strategy(tmp_path: Path) -> None:
    folder = _copy(tmp_path, "llava15", config={"vision_feature_select_strategy": "cls"})
    with pytest.raises(RenderUnsupportedError, match="'cls'"):
        Renderer(ServerOptions(model=str(folder)))


@pytest.mark.parametrize("pinpoints", [[], [[336]], [[336, "672"]], None])
def test_llava_next_refuses_malformed_pinpoints(tmp_path: Path, pinpoints: Any) -> None:
    folder = _copy(tmp_path, "llava_next", config={"image_grid_pinpoints": pinpoints})
    with pytest.raises(ModelFolderError, match="image_grid_pinpoints"):
        Renderer(ServerOptions(model=str(folder)))


def test_llava_takes_no_processor_kwargs() -> None:
    with pytest.raises(RenderUnsupportedError, match="not reproduced"):
        _family("llava15").check_kwargs({"do_resize": False}, "mm_processor_kwargs")


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"max_patches": 0}, "--mm-processor-kwargs.max_patches"),
    ({"crop_to_patches": "yes"}, "--mm-processor-kwargs.crop_to_patches"),
    ({"max_dynamic_patch": 6}, "--mm-processor-kwargs.max_dynamic_patch"),
])
def test_internvl_refuses_kwargs_it_does_not_reproduce(kwargs: dict[str, Any],
                                                       field: str) -> None:
    with pytest.raises(RenderUnsupportedError) as caught:
        _family("internvl3").check_kwargs(kwargs, "--mm-processor-kwargs")
    assert caught.value.field == field


def test_internvl_refuses_an_image_processor_it_does_not_reproduce(tmp_path: Path) -> None:
    folder = _copy(tmp_path, "internvl3",
                   preprocessor_config={"image_processor_type": "InternVLImageProcessor"})
    with pytest.raises(RenderUnsupportedError, match="not verified"):
        Renderer(ServerOptions(model=str(folder)))
