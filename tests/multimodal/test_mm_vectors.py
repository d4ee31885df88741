"""Replay the multimodal identifiers harvested from each release's real code.

``vectors.jsonl`` comes from ``tools/harvest_mm.py``: vLLM's own hasher, image
loader and hash call site over the fixtures in ``images/``. Every record must
give vLLM's identifier, or a typed error exactly where it is not reproducible
from the encoded bytes, where vLLM rejects the image, or where the release has
no such option.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from prefixkey.core import KNOWN_RELEASES
from prefixkey.errors import (
    InvalidRequestError,
    PrefixKeyError,
    UndecodableMediaError,
    UnreproducibleIdentifierError,
)
from prefixkey.multimodal import MMHasher

HERE = Path(__file__).resolve().parent
IMAGES = HERE / "images"
VECTORS = HERE / "vectors.jsonl"

#: Fixtures whose decode is lossless in a mode with a portable RGB conversion, judged
#: from how make_images.py wrote them (not from prefixkey's rule).
PORTABLE_PIXELS = frozenset({
    "rgb.png", "rgba.png", "palette.png", "palette_transparent.png", "gray.png",
    "gray_alpha.png", "bilevel.png", "tiny.png", "large.png", "exif_rotated.png",
    "lossless.webp", "palette.gif", "rgb.bmp", "rgb.tiff", "rgba_lzw.tiff",
})
UNDECODABLE = frozenset({"undecodable.png", "not_an_image.bin", "truncated.png"})
#: The first release hashing encoded bytes; before it, pixels.
ENCODED_BYTES_SINCE = Version("0.13.0")
#: First releases of the options some records use (vLLM ignores them before, the harvester
#: passes them anyway; prefixkey refuses an option the release does not have).
OPTION_SINCE = {"media_io_kwargs": Version("0.9.2"), "uuid": Version("0.10.2")}


def _by_release() -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in VECTORS.read_text().splitlines():
        record = json.loads(line)
        out[record["vllm_version"]].append(record)
    return out


RECORDS = _by_release()
DATA = {p.name: p.read_bytes() for p in IMAGES.iterdir()}


def _expected(record: dict[str, Any]) -> tuple[type[PrefixKeyError], str] | str:
    """vLLM's identifier, or the typed error (and its field) prefixkey must raise."""
    release = Version(record["vllm_version"])
    for option, since in OPTION_SINCE.items():
        if record.get(option) and release < since:
            return InvalidRequestError, option
    if "error" in record:
        if record["file"] in UNDECODABLE or "max_image_pixels" in record:
            return UndecodableMediaError, "image"
        # ImageMediaIO(image_mode="RGB", **media_io_kwargs["image"]): a TypeError in vLLM.
        assert record["error"] == "TypeError", record
        return InvalidRequestError, "media_io_kwargs.image.image_mode"
    if release < ENCODED_BYTES_SINCE and record["file"] not in PORTABLE_PIXELS:
        return UnreproducibleIdentifierError, "image"
    return str(record["identifier"])


def _model_hash_kwargs(record: dict[str, Any]) -> dict[str, bool] | None:
    """What 0.33's re-hashing processors add, for the request's image count (their code)."""
    n = record.get("images", 1)
    return {
        None: None,
        "deepseek_vl2": {"cropping": n <= 2},  # process_one crops up to two images
        "unlimited_ocr": {"cropping": n == 1},  # and crop_mode, on by default
        "h2ovl": {"use_msac": n == 1},  # and the image processor's use_msac, on here
    }[record.get("architecture")]


def _replay(record: dict[str, Any]) -> str | tuple[type[PrefixKeyError], str]:
    try:
        hasher = MMHasher(
            model=record["model"], vllm_version=record["vllm_version"],
            mm_hasher_algorithm=record.get("algorithm"),
            mm_processor_kwargs=record.get("mm_processor_kwargs"),
            tokenization_kwargs=record.get("tokenization_kwargs"),
            media_io_kwargs=record.get("media_io_kwargs"),
            max_image_pixels=record.get("max_image_pixels"),
        )
        return hasher.image(DATA[record["file"]], uuid=record.get("uuid"),
                            lora_name=record.get("lora_name"),
                            model_hash_kwargs=_model_hash_kwargs(record))
    except PrefixKeyError as exc:
        return type(exc), str(exc.field)


def test_vectors_cover_every_known_release() -> None:
    assert set(RECORDS) == set(KNOWN_RELEASES)


def test_vectors_exercise_every_outcome() -> None:
    errors = {expected[0] for records in RECORDS.values() for r in records
              if not isinstance(expected := _expected(r), str)}
    assert errors == {InvalidRequestError, UndecodableMediaError, UnreproducibleIdentifierError}


@pytest.mark.parametrize("release", sorted(RECORDS, key=lambda v: Version(str(v))))
def test_release_vectors(release: str) -> None:
    wrong = []
    for record in RECORDS[release]:
        expected, got = _expected(record), _replay(record)
        if got != expected:
            wrong.append(f"{record} -> {got!r}, expected {expected!r}")
    assert not wrong, f"{len(wrong)} of {len(RECORDS[release])} records:\n" + "\n".join(wrong[:5])
