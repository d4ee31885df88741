"""The vision corpus's images, made from a small spec, byte for byte the same everywhere.

A corpus body names an image by spec instead of carrying it:
``{"type": "image_url", "image_url": {"gen": SPEC, "as": "data" | "file"}}``.
:func:`image_bytes` turns a spec into the file's bytes and :func:`materialize` turns
a body into the one vLLM was sent (a data: URL, or a file:// URL under the directory
given, which the server had as ``--allowed-local-media-path``). Identifiers hash the
encoded bytes (vLLM 0.13+), so the encoder here is our own and fixed: PNG with stored
(uncompressed) deflate blocks and no ancillary chunk but an optional ``eXIf`` carrying
an EXIF orientation; Pillow's encoders would give other bytes under another zlib.

A spec: ``{"w": int, "h": int}`` with optional ``"mode"`` (``"RGB"`` default, ``"L"``,
``"RGBA"``, ``"1"`` for bilevel: large images stay small), ``"seed"`` (pixel pattern),
``"exif"`` (an orientation 1-8); or ``{"raw": "garbage" | "truncated"}`` for bytes no
decoder accepts.
"""

from __future__ import annotations

import base64
import copy
import struct
import zlib
from pathlib import Path
from typing import Any, Final

_SIGNATURE: Final = b"\x89PNG\r\n\x1a\n"
# PNG colour type and bit depth per mode.
_TYPES: Final = {"1": (0, 1), "L": (0, 8), "RGB": (2, 8), "RGBA": (6, 8)}
_CHANNELS: Final = {"L": 1, "RGB": 3, "RGBA": 4}
_STORED_MAX: Final = 0xFFFF


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def _stored_zlib(raw: bytes) -> bytes:
    """A zlib stream of stored deflate blocks: the same bytes under any zlib."""
    out = bytearray(b"\x78\x01")
    view = memoryview(raw)
    for start in range(0, max(len(raw), 1), _STORED_MAX):
        block = view[start:start + _STORED_MAX]
        final = 1 if start + _STORED_MAX >= len(raw) else 0
        out += struct.pack("<BHH", final, len(block), len(block) ^ 0xFFFF) + block
    return bytes(out + struct.pack(">I", zlib.adler32(raw) & 0xFFFFFFFF))


def _row(width: int, mode: str, seed: int, y: int) -> bytes:
    """One scanline (filter byte 0): a pattern that changes with x, y and the seed."""
    if mode == "1":
        stride = (width + 7) // 8
        return b"\x00" + bytes(((x * 37 + y * 11 + seed) * 151) % 256 for x in range(stride))
    channels = _CHANNELS[mode]
    return b"\x00" + bytes((x * 7 + y * 13 + c * 61 + seed * 29) % 256
                           for x in range(width) for c in range(channels))


def _exif(orientation: int) -> bytes:
    """A minimal big-endian TIFF header with one IFD entry: Orientation (SHORT)."""
    return (b"MM\x00\x2a\x00\x00\x00\x08" + struct.pack(">H", 1)
            + struct.pack(">HHIHH", 0x0112, 3, 1, orientation, 0) + struct.pack(">I", 0))


def png(width: int, height: int, mode: str = "RGB", seed: int = 0,
        exif: int | None = None) -> bytes:
    """A PNG of the spec's pattern (rows repeat with period 16, so big images stay fast)."""
    kind, depth = _TYPES[mode]
    rows = [_row(width, mode, seed, y) for y in range(min(height, 16))]
    raw = b"".join(rows[y % 16] for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, depth, kind, 0, 0, 0)
    chunks = [_chunk(b"IHDR", header)]
    if exif is not None:
        chunks.append(_chunk(b"eXIf", _exif(exif)))
    chunks += [_chunk(b"IDAT", _stored_zlib(raw)), _chunk(b"IEND", b"")]
    return _SIGNATURE + b"".join(chunks)


def image_bytes(spec: dict[str, Any]) -> bytes:
    """The bytes a spec names."""
    raw = spec.get("raw")
    if raw == "garbage":
        return b"this is not an image at all"
    if raw == "truncated":
        return png(64, 64)[:200]
    return png(spec["w"], spec["h"], spec.get("mode", "RGB"), spec.get("seed", 0),
               spec.get("exif"))


def loaded_sizes(body: dict[str, Any]) -> list[tuple[int, int]]:
    """Each generated image's (width, height) as vLLM loads it (EXIF orientation
    applied), in the body's order."""
    from prefixkey.multimodal import MMHasher

    sizes = []
    for message in body["messages"]:
        if isinstance(message["content"], list):
            for part in message["content"]:
                if part.get("type") == "image_url":
                    size = MMHasher(model="m").loaded_image(image_bytes(
                        part["image_url"]["gen"])).size
                    assert size is not None
                    sizes.append(size)
    return sizes


def _file_name(spec: dict[str, Any]) -> str:
    return "img-" + "-".join(f"{k}{spec[k]}" for k in sorted(spec)) + ".png"


def materialize(body: dict[str, Any], image_dir: Path | None = None) -> dict[str, Any]:
    """The body vLLM is sent: each generated image as a data: URL or a file:// URL."""
    out = copy.deepcopy(body)
    for message in out.get("messages", []):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            url = part.get("image_url") if isinstance(part, dict) else None
            if isinstance(url, dict) and "gen" in url:
                data = image_bytes(url["gen"])
                if url.get("as") == "file":
                    if image_dir is None:
                        raise ValueError("a file:// image needs a directory")
                    path = image_dir / _file_name(url["gen"])
                    path.write_bytes(data)
                    part["image_url"] = {"url": path.as_uri()}
                else:
                    part["image_url"] = {
                        "url": "data:image/png;base64," + base64.b64encode(data).decode()}
    return out
