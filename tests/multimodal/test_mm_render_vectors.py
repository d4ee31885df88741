"""Replay identifiers from a real vLLM 0.31 render server (tools/harvest_mm_render.py).

The server rendered chat requests with each fixture as an ``image_url`` (data:
URLs, and a file:// URL) over a tiny BLIP-2 folder; its ``features.mm_hashes``
must be what MMHasher gives for the same bytes and server flags, and what it
refused an UndecodableMediaError here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefixkey.errors import UndecodableMediaError
from prefixkey.multimodal import MMHasher

HERE = Path(__file__).resolve().parent
RECORDS = [json.loads(line) for line in
           (HERE / "render_vectors.jsonl").read_text().splitlines()]
CONFIG = json.loads((HERE / "models" / "blip2_tiny" / "config.json").read_text())


def _hasher(record: dict[str, Any]) -> MMHasher:
    return MMHasher(model=record["model"], vllm_version=record["vllm_version"],
                    mm_hasher_algorithm=record.get("algorithm"),
                    media_io_kwargs=record.get("media_io_kwargs"))


@pytest.mark.parametrize("record", RECORDS,
                         ids=[f"{r['file']}-{r['url']}-{r.get('algorithm', 'blake3')}-"
                              f"{r.get('uuid')}" for r in RECORDS])
def test_render_server_identifiers(record: dict[str, Any]) -> None:
    data = (HERE / "images" / record["file"]).read_bytes()
    if record["status"] != 200:
        assert record["status"] == 400 and "Failed to load image" in record["error"]["message"]
        with pytest.raises(UndecodableMediaError):
            _hasher(record).image(data, uuid=record.get("uuid"))
        return
    assert _hasher(record).image(data, uuid=record.get("uuid")) == record["identifier"]


def test_the_placeholders_are_the_processor_s_image_tokens() -> None:
    """BLIP-2 inserts num_query_tokens <image> ids before the prompt: the span the
    caller's placeholder ids give, located in the rendered prompt."""
    spans = {json.dumps(r["placeholder"]) for r in RECORDS if r["status"] == 200}
    assert spans == {json.dumps({"offset": 0, "length": CONFIG["num_query_tokens"]})}
    for record in RECORDS:
        if record["status"] == 200:
            ids = record["token_ids"][:CONFIG["num_query_tokens"] + 1]
            assert ids[:-1] == [CONFIG["image_token_index"]] * CONFIG["num_query_tokens"]
            assert ids[-1] != CONFIG["image_token_index"]
