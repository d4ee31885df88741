"""Llama 4: each image's tile grid is vLLM's, and what the family refuses.

Its answers (ids, identifiers, spans, keys) are replayed by test_vision_vectors.py (the
llama4_ corpus). Here the tile grid itself, (rows, columns), is checked against the
``aspect_ratios`` vLLM recomputed for each image (``features.mm_metadata``): the token
count alone is the same for a grid and its transpose. The folder is tests/render/real/
llama4, composed from the fetch cache (its tokenizer.json converted from Meta's tiktoken
file, tests/real_models.py).
"""

from __future__ import annotations

import base64
import json
import shutil
import struct
from pathlib import Path
from typing import Any, Final

import msgpack
import pytest

pytest.importorskip("PIL", reason="the multimodal extra (Pillow) is not installed")
pytest.importorskip("jinja2", reason="the render extra (jinja2) is not installed")

import real_models
from images import loaded_sizes
from vision_cases import vision_cases

from prefixkey.render import ModelFolderError, Renderer, RenderUnsupportedError, ServerOptions
from prefixkey.render._vision import ImageSize
from prefixkey.render._vision._llama4 import Llama4

OK: Final = [c for c in vision_cases("llama4_") if c.status == 200]


def _family(folder: Path) -> Llama4:
    images = Renderer(ServerOptions(model=str(folder)))._images
    assert images is not None and isinstance(images._family, Llama4)
    return images._family


def _aspect_ratios(answer: dict[str, Any]) -> list[tuple[int, ...]]:
    out = []
    for item in answer["features"]["mm_metadata"]["image"]:
        meta = msgpack.unpackb(base64.b64decode(item), raw=False, strict_map_key=False)
        dtype, shape, raw = meta["aspect_ratios"]["data"]
        assert (dtype, shape) == ("int64", [2])
        out.append(struct.unpack("<2q", raw.data))
    return out


def test_each_image_s_tile_grid_is_vllm_s() -> None:
    family = _family(real_models.folder("llama4"))
    seen = set()
    for case in OK:
        grids = [family.grid(ImageSize(*size)) for size in loaded_sizes(case.body)]
        assert grids == _aspect_ratios(case.response), case.id
        seen.update(grids)
    # The corpus holds one tile, a grid and its transpose, and the 16-tile canvases.
    assert {(1, 1), (1, 2), (2, 1), (4, 4), (1, 16), (16, 1)} <= seen


def _copy(tmp_path: Path, file: str, **values: Any) -> Path:
    folder = tmp_path / "llama4"
    shutil.copytree(real_models.folder("llama4"), folder)
    path = folder / file
    data = json.loads(path.read_text())
    if file == "config.json":
        data["vision_config"].update(values)
    else:
        data.update(values)
    path.write_text(json.dumps(data))
    return folder


@pytest.mark.parametrize(("file", "values", "field"), [
    ("config.json", {"pixel_shuffle_ratio": "half"}, "config.json vision_config"
     ".pixel_shuffle_ratio"),
    ("config.json", {"image_size": 340}, "config.json vision_config.image_size"),
    ("preprocessor_config.json", {"resize_to_max_canvas": 1},
     "preprocessor_config.json resize_to_max_canvas"),
    ("preprocessor_config.json", {"max_patches": 0}, "preprocessor_config.json max_patches"),
])
def test_a_malformed_folder_is_refused_naming_the_field(
        tmp_path: Path, file: str, values: dict[str, Any], field: str) -> None:
    with pytest.raises(ModelFolderError) as caught:
        _family(_copy(tmp_path, file, **values))
    assert caught.value.field == field


def test_processor_kwargs_are_refused_typed() -> None:
    family = _family(real_models.folder("llama4"))
    with pytest.raises(RenderUnsupportedError, match="render endpoint") as caught:
        family.check_kwargs({"max_patches": 4}, "--mm-processor-kwargs")
    assert caught.value.field == "--mm-processor-kwargs.max_patches"

