"""MediaSource: data: and file:// URLs as vLLM 0.31's MediaConnector loads them, nothing else."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from prefixkey.errors import InvalidRequestError, RemoteMediaError
from prefixkey.multimodal import MediaSource, MMHasher

HERE = Path(__file__).resolve().parent
RGB_PNG = HERE / "images" / "rgb.png"


def test_data_and_file_urls_of_the_same_bytes_give_one_identifier(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(RGB_PNG.read_bytes())
    source = MediaSource(allowed_local_media_path=tmp_path)
    encoded = base64.b64encode(RGB_PNG.read_bytes()).decode()
    from_data = source.image_bytes(f"data:image/png;base64,{encoded}")
    from_file = source.image_bytes(f"file://{tmp_path}/a.png")
    assert from_data == from_file == RGB_PNG.read_bytes()
    # A data URL's media type is not read (vLLM's load_base64 ignores it for images).
    assert source.image_bytes(f"DATA:text/plain;charset=x;base64,{encoded}") == from_data
    hasher = MMHasher(model="m")
    assert hasher.image(from_data) == hasher.image(from_file)


def test_only_files_under_the_allowed_path_are_read(tmp_path: Path) -> None:
    inside, outside = tmp_path / "media", tmp_path / "secret"
    inside.mkdir()
    outside.mkdir()
    (outside / "key.png").write_bytes(b"x")
    (inside / "link.png").symlink_to(outside / "key.png")
    source = MediaSource(allowed_local_media_path=inside)
    for url in (f"file://{outside}/key.png", f"file://{inside}/../secret/key.png",
                f"file://{inside}/link.png", f"file://{inside}", "file://relative/x.png"):
        with pytest.raises(InvalidRequestError) as info:
            source.image_bytes(url)
        assert info.value.field == "image_url.url"
    with pytest.raises(InvalidRequestError, match="allowed-local-media-path"):
        MediaSource().image_bytes(f"file://{inside}/a.png")
    with pytest.raises(InvalidRequestError, match="cannot be read"):
        source.image_bytes(f"file://{inside}/missing.png")
    with pytest.raises(InvalidRequestError):
        MediaSource(allowed_local_media_path=tmp_path / "nowhere")


def test_urls_python_cannot_parse_or_resolve_are_refused_typed(tmp_path: Path) -> None:
    """An unclosed IPv6 host, a NUL byte, a symlink loop, a FIFO: typed refusals, not
    tracebacks or a read that never returns."""
    inside = tmp_path / "media"
    inside.mkdir()
    (inside / "loop.png").symlink_to(inside / "loop.png")
    (inside / "a.png").symlink_to(inside / "b.png")
    (inside / "b.png").symlink_to(inside / "a.png")
    os.mkfifo(inside / "fifo.png")  # nobody writes: reading it would block forever
    source = MediaSource(allowed_local_media_path=inside)
    for url in ("http://[::1/x.png", "https://[::1", f"file://{inside}/ok%00.png",
                f"file://{inside}/loop.png", f"file://{inside}/a.png",
                f"file://{inside}/fifo.png"):
        with pytest.raises(InvalidRequestError) as info:
            source.image_bytes(url, field="messages[0].content[1].image_url.url")
        assert info.value.field == "messages[0].content[1].image_url.url", url


def test_remote_urls_are_left_to_the_caller() -> None:
    source = MediaSource(allowed_media_domains=("images.example.com",))
    with pytest.raises(RemoteMediaError) as info:
        source.image_bytes("https://images.example.com/cat.png")
    assert info.value.url == "https://images.example.com/cat.png"
    with pytest.raises(InvalidRequestError, match="allowed domains"):
        source.image_bytes("https://elsewhere.example.org/cat.png")
    with pytest.raises(InvalidRequestError, match="HTTP, data or file"):
        source.image_bytes("ftp://images.example.com/cat.png")


@pytest.mark.parametrize(("url", "match"), [
    ("data:image/png;base64", "separator"),
    ("data:image/png,abcd", "base64 data URLs"),
    ("data:image/png;base64,ab!d", "invalid base64"),
    ("data:image/png;base64,abc", "invalid base64"),
    ("data:image/png;base64," + "A" * 200, "more than"),
])
def test_bad_data_urls_are_refused(url: str, match: str) -> None:
    with pytest.raises(InvalidRequestError, match=match):
        MediaSource(max_bytes=100).image_bytes(url)
