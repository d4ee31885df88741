"""render/_audio.py's WAV header reader: which files it takes as a decodable clip.

The clips vLLM decoded (tests/render/real_whisper_vectors.jsonl) are replayed by
tests/render/test_real_whisper_vectors.py; these are the header's edge cases, each read
back as the stdlib's ``wave`` writes it or broken one way."""

from __future__ import annotations

import io
import struct
import wave

import pytest

from prefixkey.render._audio import WavInfo, read_wav


def _pcm(rate: int, channels: int, width: int, frames: int) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as handle:
        handle.setnchannels(channels)
        handle.setsampwidth(width)
        handle.setframerate(rate)
        handle.writeframes(b"\1" * (frames * channels * width))
    return out.getvalue()


def _riff(fmt: bytes, data: bytes, *, extra: bytes = b"") -> bytes:
    body = b"WAVE" + extra + b"fmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


def _fmt(tag: int, channels: int, rate: int, bits: int) -> bytes:
    block = channels * bits // 8
    return struct.pack("<HHIIHH", tag, channels, rate, rate * block, block, bits)


_EXTENSIBLE = (_fmt(0xFFFE, 1, 16000, 32) + struct.pack("<HHI", 22, 32, 4)
               + struct.pack("<H", 3) + b"\0" * 14)

CASES = {
    "pcm16-mono": (_pcm(16000, 1, 2, 1600), WavInfo(16000, 1, 1600)),
    "pcm8-stereo": (_pcm(8000, 2, 1, 10), WavInfo(8000, 2, 10)),
    "pcm24": (_pcm(44100, 1, 3, 7), WavInfo(44100, 1, 7)),
    "empty": (_pcm(16000, 1, 2, 0), WavInfo(16000, 1, 0)),
    "float32": (_riff(_fmt(3, 1, 16000, 32), b"\0" * 40), WavInfo(16000, 1, 10)),
    "extensible-float": (_riff(_EXTENSIBLE, b"\0" * 8), WavInfo(16000, 1, 2)),
    "odd-chunk-first": (_riff(_fmt(1, 1, 16000, 16), b"\0" * 4, extra=b"LIST\3\0\0\0abc\0"),
                        WavInfo(16000, 1, 2)),
    "truncated-data": (_pcm(16000, 1, 2, 100)[:-2], None),
    "no-fmt": (b"RIFF\x0c\0\0\0WAVEdata\0\0\0\0", None),
    "not-riff": (b"ID3\x03" + b"\0" * 40, None),
    "short": (b"RIFF", None),
    "mu-law": (_riff(_fmt(7, 1, 8000, 8), b"\0" * 8), None),
    "pcm12": (_riff(_fmt(1, 1, 16000, 12), b"\0" * 8), None),
    "no-channels": (_riff(_fmt(1, 0, 16000, 16), b""), None),
}


@pytest.mark.parametrize(("data", "expected"), CASES.values(), ids=CASES.keys())
def test_read_wav(data: bytes, expected: WavInfo | None) -> None:
    assert read_wav(data) == expected
