"""MMHasher's contract beyond the vectors: bad input gets a typed error, eras are data."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from prefixkey.core import KNOWN_RELEASES
from prefixkey.errors import (
    FrozenError,
    InvalidRequestError,
    UndecodableMediaError,
    UnknownVersionError,
    UnreproducibleIdentifierError,
)
from prefixkey.multimodal import (
    IDENTIFIER_ERAS,
    MMHasher,
    identifier_era,
    image_identifier,
)

HERE = Path(__file__).resolve().parent
RGB_PNG = (HERE / "images" / "rgb.png").read_bytes()
MODEL = "Qwen/Qwen2-VL-2B-Instruct"


def _vector(**match: Any) -> dict[str, Any]:
    """The one harvested record with exactly these fields besides the outcome."""
    for line in (HERE / "vectors.jsonl").read_text().splitlines():
        record: dict[str, Any] = json.loads(line)
        rest = {k: v for k, v in record.items() if k not in ("identifier", "error", "message")}
        if rest == match:
            return record
    raise LookupError(match)


def test_eras_are_ordered_and_start_at_known_releases() -> None:
    versions = [e.first_version for e in IDENTIFIER_ERAS]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    assert {e.since for e in IDENTIFIER_ERAS} <= set(KNOWN_RELEASES)
    assert len({e.name for e in IDENTIFIER_ERAS}) == len(IDENTIFIER_ERAS)


@pytest.mark.parametrize(("version", "since"), [
    ("0.31.1.dev5+g1a2b.cu128", "0.31.0"), ("0.12.0", "0.11.0"), ("v0.13.0rc1", "0.13.0"),
    ("0.33", "0.33.0"), ("0.8.5.post1", "0.7.0"),
])
def test_versions_resolve_to_their_release_era(version: str, since: str) -> None:
    assert identifier_era(version).since == since


def test_unknown_versions_are_refused() -> None:
    with pytest.raises(UnknownVersionError):
        MMHasher(model=MODEL, vllm_version="0.6.6")
    with pytest.raises(UnknownVersionError):
        MMHasher(model=MODEL, vllm_version="9.0.0")
    lenient = MMHasher(model=MODEL, vllm_version="9.0.0", strict=False)
    assert lenient.era is IDENTIFIER_ERAS[-1] and lenient.warnings


def test_a_hasher_is_immutable() -> None:
    hasher = MMHasher(model=MODEL)
    with pytest.raises(FrozenError):
        hasher._before = b""
    with pytest.raises(FrozenError):
        del hasher.era
    assert copy.deepcopy(hasher) is hasher


def test_a_uuid_needs_no_image_bytes() -> None:
    record = _vector(file="rgb.png", model=MODEL, uuid="user-image-0001",
                     mm_processor_kwargs={"max_pixels": 1003520}, vllm_version="0.31.0")
    hasher = MMHasher(model=MODEL, mm_processor_kwargs={"max_pixels": 1003520})
    assert hasher.image(None, uuid="user-image-0001") == record["identifier"]
    assert MMHasher(model=MODEL).image(None, uuid="u") == "u"
    with pytest.raises(InvalidRequestError, match="bytes or a uuid"):
        hasher.image(None)


def test_image_identifier_is_the_hasher_s() -> None:
    record = _vector(file="rgb.png", model=MODEL, algorithm="sha512", vllm_version="0.27.0")
    got = image_identifier(RGB_PNG, model=MODEL, vllm_version="0.27.0",
                           mm_hasher_algorithm="sha512")
    assert got == record["identifier"]


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"model": ""}, "model"),
    ({"model": 7}, "model"),
    ({"mm_hasher_algorithm": "md5"}, "mm_hasher_algorithm"),
    ({"mm_hasher_algorithm": "sha256", "vllm_version": "0.14.0"}, "mm_hasher_algorithm"),
    ({"mm_processor_kwargs": {"n": 2**63}}, "mm_processor_kwargs.n"),
    ({"mm_processor_kwargs": {"x": float("nan")}}, "mm_processor_kwargs.x"),
    ({"mm_processor_kwargs": {"x": {1, 2}}}, "mm_processor_kwargs.x"),
    ({"mm_processor_kwargs": {"x": "\ud800"}}, "mm_processor_kwargs.x"),
    ({"mm_processor_kwargs": [1]}, "mm_processor_kwargs"),
    ({"mm_processor_kwargs": {"model_id": "m"}, "vllm_version": "0.20.0"},
     "mm_processor_kwargs.model_id"),
    ({"mm_processor_kwargs": {"a": 1}, "tokenization_kwargs": {"a": 2},
      "vllm_version": "0.10.0"}, "tokenization_kwargs.a"),
    ({"media_io_kwargs": {"image": 3}}, "media_io_kwargs.image"),
    ({"media_io_kwargs": {"image": {"rgba_background_color": [0, 0, 256]}}},
     "media_io_kwargs.image.rgba_background_color"),
    ({"media_io_kwargs": {"image": {"image_mode": 5}}}, "media_io_kwargs.image.image_mode"),
    ({"media_io_kwargs": {"image": {"image_mode": "RGBA"}}, "vllm_version": "0.26.0"},
     "media_io_kwargs.image.image_mode"),
    ({"media_io_kwargs": {"image": {}}, "vllm_version": "0.9.1"}, None),
    ({"media_io_kwargs": {"image": {"a": 1}}, "vllm_version": "0.9.1"}, "media_io_kwargs"),
    ({"max_image_pixels": 10, "vllm_version": "0.24.0"}, "max_image_pixels"),
    ({"max_image_pixels": "10"}, "max_image_pixels"),
])
def test_bad_configurations_name_their_field(kwargs: dict[str, Any], field: str | None) -> None:
    arguments = {"model": MODEL, **kwargs}
    if field is None:
        MMHasher(**arguments)
        return
    with pytest.raises(InvalidRequestError) as info:
        MMHasher(**arguments)
    assert info.value.field == field


@pytest.mark.parametrize(("version", "call", "field"), [
    ("0.31.0", {"data": "not bytes"}, "image"),
    ("0.31.0", {"uuid": 5}, "uuid"),
    ("0.10.1", {"uuid": "u"}, "uuid"),
    ("0.13.0", {"lora_name": "adapter"}, "lora_name"),
    ("0.31.0", {"lora_name": 3}, "lora_name"),
])
def test_bad_items_name_their_field(version: str, call: dict[str, Any], field: str) -> None:
    hasher = MMHasher(model=MODEL, vllm_version=version)
    with pytest.raises(InvalidRequestError) as info:
        hasher.image(call.pop("data", RGB_PNG), **call)
    assert info.value.field == field


def test_undecodable_images_are_typed_errors_in_every_era() -> None:
    for era in IDENTIFIER_ERAS:
        hasher = MMHasher(model=MODEL, vllm_version=era.since)
        for data in (b"", b"GIF89a", b"\x89PNG\r\n\x1a\n" + b"\0" * 40, RGB_PNG[:-30]):
            with pytest.raises(UndecodableMediaError) as info:
                hasher.image(data, field="images[3]")
            assert info.value.field == "images[3]"


def test_pixel_eras_refuse_lossy_images_and_point_to_the_render_endpoint() -> None:
    jpeg = (HERE / "images" / "rgb.jpg").read_bytes()
    for era in IDENTIFIER_ERAS:
        hasher = MMHasher(model=MODEL, vllm_version=era.since)
        if Version(era.since) >= Version("0.13.0"):
            assert len(hasher.image(jpeg)) == 64
            continue
        with pytest.raises(UnreproducibleIdentifierError, match="render endpoint"):
            hasher.image(jpeg)


def test_audio_and_video_are_refused_with_the_reason() -> None:
    hasher = MMHasher(model=MODEL)
    with pytest.raises(UnreproducibleIdentifierError, match="waveform"):
        hasher.audio(b"RIFF")
    with pytest.raises(UnreproducibleIdentifierError, match="video loader"):
        hasher.video(b"\0\0\0\x18ftypmp42")


def test_the_era_table_in_the_docs_is_current() -> None:
    table = (HERE.parents[1] / "docs" / "multimodal.md").read_text()
    for era in IDENTIFIER_ERAS:
        assert f"| {era.name} | {era.since}" in table
        assert era.changes in table


def test_model_hash_kwargs_exist_from_0_33() -> None:
    with pytest.raises(InvalidRequestError) as info:
        MMHasher(model=MODEL, vllm_version="0.32.0").image(RGB_PNG,
                                                           model_hash_kwargs={"cropping": True})
    assert info.value.field == "model_hash_kwargs"
    with pytest.raises(InvalidRequestError) as info:
        MMHasher(model=MODEL, vllm_version="0.33.0").image(RGB_PNG,
                                                           model_hash_kwargs={"mm_hash": "x"})
    assert info.value.field == "model_hash_kwargs.mm_hash"
