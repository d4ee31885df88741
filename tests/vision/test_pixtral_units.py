"""Pixtral in Mistral's format: the grid rule, what the family refuses, params.json folders.

vLLM 0.31's answers are replayed by test_vision_vectors.py (the pixtral_ corpus, over
tests/render/real/pixtral12b: Pixtral-12B-2409's params.json and its tekken.json from
the mistral_common wheel). These pin the rest: the grid against the library function
vLLM's processor calls, typed refusals for what is not verified (Mistral Small 3.x's
merged grid, kwargs, a Pixtral architecture outside the mistral mode), and the
``placeholder_token_ids`` check.
"""

from __future__ import annotations

import base64
import json
import shutil
from functools import cache
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("PIL", reason="the multimodal extra (Pillow) is not installed")
pytest.importorskip("mistral_common", reason="the mistral extra is not installed")

import real_models
from images import png

from prefixkey.errors import InvalidRequestError
from prefixkey.render import (
    ModelFolderError,
    Renderer,
    RenderRequestError,
    RenderUnsupportedError,
    ServerOptions,
)
from prefixkey.render._vision import FAMILIES, UNVERIFIED, ImageSize, VisionFolder
from prefixkey.render._vision._pixtral import Pixtral, grid

SERVED = "pixtral-12b-2409"


def _options(folder: Path, **extra: Any) -> ServerOptions:
    return ServerOptions(model=str(folder), served_model_name=(SERVED,), tokenizer_mode="mistral",
                         **extra)


@cache
def _renderer(**extra: Any) -> Renderer:
    folder = real_models.folder("pixtral12b")
    return Renderer(_options(folder, **extra), str(folder))


def _copy(tmp_path: Path, tekken_image: dict[str, Any] | None = None,
          **params: Any) -> Path:
    """The pixtral12b folder copied, its params.json and tekken.json image section edited."""
    folder = tmp_path / "pixtral"
    shutil.copytree(real_models.folder("pixtral12b"), folder)
    data = json.loads((folder / "params.json").read_text())
    (folder / "params.json").write_text(json.dumps({**data, **params}))
    if tekken_image is not None:
        tekken = json.loads((folder / "tekken.json").read_text())
        tekken["image"] = tekken_image
        (folder / "tekken.json").write_text(json.dumps(tekken))
    return folder


def _body(*parts: Any, **extra: Any) -> dict[str, Any]:
    return {"model": SERVED, "messages": [{"role": "user", "content": list(parts)}], **extra}


def _image(w: int, h: int, **spec: Any) -> dict[str, Any]:
    url = "data:image/png;base64," + base64.b64encode(png(w, h, **spec)).decode()
    return {"type": "image_url", "image_url": {"url": url}}


class _Sized:
    def __init__(self, width: int, height: int) -> None:
        self.size = (width, height)


def test_pixtral_is_a_family_and_mistral3_stays_refused() -> None:
    assert FAMILIES["PixtralForConditionalGeneration"] is Pixtral
    assert "Mistral3ForConditionalGeneration" in UNVERIFIED


def test_grid_is_mistral_common_s_own_rule() -> None:
    """The library function vLLM's processor calls (``get_number_of_image_patches``), over
    sizes around its patch and the max-size scaling (Python's round half to even)."""
    from mistral_common.tokens.tokenizers.image import ImageConfig, ImageEncoder

    for patch, max_size, merge in ((16, 1024, 1), (14, 1540, 2)):
        encoder = ImageEncoder(ImageConfig(patch, max_size, merge), None)  # type: ignore[arg-type]
        sizes = [(w, h) for w in (1, 15, 16, 17, 31, 33, 1023, 1024, 1025, 1540, 2047, 2048,
                                  3000, 4097) for h in (1, 7, 16, 17, 513, 1025, 2049, 3079)]
        sizes += [(2048, 1025), (2048, 1023), (3000, 7), (1040, 10), (3080, 1541)]
        for w, h in sizes:
            assert grid(w, h, patch * merge, max_size) == \
                encoder._image_to_num_tokens(_Sized(w, h)), (w, h)  # type: ignore[arg-type]


def test_the_family_refuses_a_folder_outside_the_mistral_mode() -> None:
    """vLLM: "This model requires `--tokenizer-mode mistral`"."""
    folder = VisionFolder({"architectures": ["PixtralForConditionalGeneration"]}, {}, {},
                          lambda text: None, lambda text: [])
    with pytest.raises(ModelFolderError) as caught:
        Pixtral(folder)
    assert caught.value.field == "--tokenizer-mode"


def test_outside_the_mistral_mode_pixtral_images_are_refused_text_renders(
        tmp_path: Path) -> None:
    """A Hugging Face folder naming the architecture: vLLM's Pixtral processor needs the
    mistral mode; prefixkey renders the text and refuses the images, typed."""
    folder = tmp_path / "hf"
    shutil.copytree(real_models.folder("qwen3"), folder)
    config = json.loads((folder / "config.json").read_text())
    config["architectures"] = ["PixtralForConditionalGeneration"]
    (folder / "config.json").write_text(json.dumps(config))
    r = Renderer(ServerOptions(model=str(folder), served_model_name=(SERVED,)))
    assert r.render_chat(_body({"type": "text", "text": "hi"})).token_ids
    with pytest.raises(RenderUnsupportedError, match="--tokenizer-mode mistral"):
        r.render_chat(_body(_image(32, 32)))


def test_an_unverified_merge_is_refused_naming_the_endpoint(tmp_path: Path) -> None:
    """Merges 1 (Pixtral) and 2 (Mistral Small 3.1) are harvested; any other is refused."""
    folder = _copy(tmp_path, {"image_patch_size": 14, "max_image_size": 1540,
                              "spatial_merge_size": 3})
    with pytest.raises(RenderUnsupportedError, match="render endpoint") as caught:
        Renderer(_options(folder), str(folder))
    assert caught.value.field == "tekken.json image.spatial_merge_size"


def test_params_json_alone_gives_vllm_s_default_context_length() -> None:
    """vLLM 0.31's render server over this folder logged "Using max model len 128000"."""
    assert _renderer().max_model_len == 128_000


@pytest.mark.parametrize("key", ["yarn", "llama_4_scaling"])
def test_params_json_keys_not_reproduced_are_refused(tmp_path: Path, key: str) -> None:
    folder = _copy(tmp_path, **{key: {"factor": 4.0}})
    with pytest.raises(RenderUnsupportedError) as caught:
        Renderer(_options(folder), str(folder))
    assert caught.value.field == f"params.json {key}"


def test_placeholder_token_ids_must_equal_the_expansion() -> None:
    r = _renderer()
    body = _body({"type": "text", "text": "x"}, _image(17, 33))
    assert r._mistral is not None and r._mistral._images is not None
    family = r._mistral._images._family
    assert isinstance(family, Pixtral)
    expansion = list(family.expansion(ImageSize(17, 33), {}))
    assert r.render_chat(body, placeholder_token_ids=[expansion]).token_ids == \
        r.render_chat(body).token_ids
    with pytest.raises(InvalidRequestError):
        r.render_chat(body, placeholder_token_ids=[expansion[:-1]])


def test_trusted_request_kwargs_are_refused_typed() -> None:
    """Pixtral's processor takes no kwarg prefixkey reproduces."""
    r = _renderer(trust_request_mm_kwargs=True)
    with pytest.raises(RenderUnsupportedError) as caught:
        r.render_chat(_body(_image(32, 32), mm_processor_kwargs={"max_image_size": 512}))
    assert caught.value.field == "mm_processor_kwargs.max_image_size"


def test_an_exif_transposed_grid_is_vllm_s_500() -> None:
    """mistral_common opens the bytes without EXIF transpose, vLLM's loader with it."""
    with pytest.raises(RenderRequestError) as caught:
        _renderer().render_chat(_body(_image(300, 100, exif=6)))
    assert caught.value.status == 500


def test_the_hasher_s_decode_gives_the_size_mistral_common_opens() -> None:
    """EXIF orientation 6 swaps the loaded size (vLLM's loader), not the opened one."""
    from prefixkey.multimodal import MMHasher

    loaded = MMHasher(model="m").loaded_image(png(300, 100, exif=6))
    assert (loaded.size, loaded.opened_size) == ((100, 300), (300, 100))

