"""Image chat rendered in process equals vLLM 0.31's render server, family by family.

Every vision corpus (``tests/vision/<prefix>bodies.jsonl``, tools/build_vision_bodies.py)
was posted to a real vLLM 0.31.0 render server running the model's own processor over a
weightless real folder (tests/render/real/<name>), and its answers recorded
(tools/harvest_vision.py). Here each body goes through prefixkey's Renderer, whose
vision family (prefixkey/render/_vision) expands the images: every 200 must give vLLM's
token ids, each image's identifier, offset and length (``features.mm_hashes`` /
``mm_placeholders``) and the same block keys as the answer read by
RenderResponseParser; every error must be an error with vLLM's status. The folders'
tokenizer files come from a cache (tests/real_models.py): without it these tests skip
with the command that fills it; under CI they fetch.
"""

from __future__ import annotations

import base64
import struct
from pathlib import Path
from typing import Any, Final

import msgpack
import pytest

pytest.importorskip("PIL", reason="the multimodal extra (Pillow) is not installed")
pytest.importorskip("jinja2", reason="the render extra (jinja2) is not installed")

from images import loaded_sizes, materialize
from vision_cases import VisionCase, renderer, vision_cases

from prefixkey import Hasher
from prefixkey.errors import PrefixKeyError, UndecodableMediaError
from prefixkey.render import (
    CHAT_ENDPOINT,
    RenderRequestError,
    RenderResponseParser,
    RenderUnsupportedError,
)
from prefixkey.render._vision import ImageSize
from prefixkey.render._vision._qwen import Qwen2VL

#: The corpora replayed here, and the families each must cover.
CORPORA: Final = {"qwen_": {"qwen2_vl", "qwen2_5_vl", "qwen3_vl"},
                  "llava_": {"llava15", "llava_next"},
                  "llava_onevision_": {"llava_onevision"},
                  "internvl_": {"internvl3"},
                  "gemma3_": {"gemma3_vl"},
                  "pixtral_": {"pixtral12b", "mistral_small31"},
                  "qwen3_vl_moe_": {"qwen3_vl_moe"},
                  "llama4_": {"llama4"}}
CASES: Final = tuple(case for prefix in CORPORA for case in vision_cases(prefix))


@pytest.fixture(scope="module")
def image_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server's --allowed-local-media-path: where file:// images are written."""
    return tmp_path_factory.mktemp("vision-images")


def test_each_corpus_covers_its_families_and_both_answers() -> None:
    for prefix, folders in CORPORA.items():
        cases = vision_cases(prefix)
        assert {c.real for c in cases} == folders
        for folder in folders:
            statuses = {c.status for c in cases if c.real == folder}
            assert {200, 400} <= statuses, folder


def _items(answer: dict[str, Any]) -> list[tuple[str, int, int]]:
    features = answer.get("features") or {}
    hashes = (features.get("mm_hashes") or {}).get("image", [])
    spans = (features.get("mm_placeholders") or {}).get("image", [])
    return [(h, s["offset"], s["length"]) for h, s in zip(hashes, spans, strict=True)]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_vllm_s_image_chat_answers_replay(case: VisionCase, image_dir: Path) -> None:
    r = renderer(case, image_dir)
    body = materialize(case.body, image_dir)
    if case.status != 200:
        with pytest.raises(PrefixKeyError) as caught:
            r.render_chat(body)
        assert not isinstance(caught.value, RenderUnsupportedError), caught.value
        if isinstance(caught.value, UndecodableMediaError):
            assert case.status == 400, case.error  # vLLM: "Failed to load image: …"
            return
        assert isinstance(caught.value, RenderRequestError), caught.value
        assert caught.value.status == case.status, (caught.value, case.error)
        return
    rendered = r.render_chat(body)
    assert list(rendered.token_ids) == case.token_ids
    items = [(m.identifier, m.offset, m.length) for m in rendered.request.mm_items]
    assert items == _items(case.response)
    (answer,) = RenderResponseParser(served_model_names=r.options.served_names).parse(
        CHAT_ENDPOINT, 200, case.response, model=case.body.get("model"))
    hasher = Hasher(block_size=16)
    assert hasher.block_hashes(rendered.request) == hasher.block_hashes(answer.request)


def _grids(answer: dict[str, Any]) -> list[tuple[int, ...]]:
    """``features.mm_metadata.image[i].image_grid_thw``: vLLM's msgpack of the processor's
    tensor (dtype, shape, then the little-endian values as an ext)."""
    out = []
    for item in ((answer.get("features") or {}).get("mm_metadata") or {}).get("image", []):
        meta = msgpack.unpackb(base64.b64decode(item), raw=False, strict_map_key=False)
        dtype, shape, raw = meta["image_grid_thw"]["data"]
        assert (dtype, shape) == ("int64", [3])
        out.append(struct.unpack("<3q", raw.data))
    return out


QWEN_OK: Final = [c for c in vision_cases("qwen_") if c.status == 200]


@pytest.mark.parametrize("case", QWEN_OK, ids=[c.id for c in QWEN_OK])
def test_qwen_grids_are_the_image_processor_s(case: VisionCase, image_dir: Path) -> None:
    """The patch grid of each image (rows, columns: the image as vLLM loaded it, EXIF
    orientation applied) is the one vLLM's HF image processor returned, not only its
    token count, which is the same for a transposed image."""
    r = renderer(case, image_dir)
    family = r._images._family if r._images is not None else None
    assert isinstance(family, Qwen2VL)
    kwargs = {**case.server.get("--mm-processor-kwargs", {}),
              **case.body.get("mm_processor_kwargs", {})}
    grids = [family.grid(ImageSize(*size), kwargs) for size in loaded_sizes(case.body)]
    assert grids == _grids(case.response)
