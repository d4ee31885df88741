"""Build ``tests/render/real_whisper_bodies.jsonl``: Whisper's own config with its processor file.

Maintainer tool. ``whisper_pp`` (tests/render/real/) is conv_whisper's vocabulary files and
chat template under Whisper's config (WhisperForConditionalGeneration, an encoder-decoder
model whose render server loads WhisperFeatureExtractor at start-up) with the
``preprocessor_config.json`` WhisperFeatureExtractor's defaults write. The bodies: text
chats (a user turn, system, multi-turn, continued), completions as text and token ids,
chats with an audio part, an image part, a video part and both audio and image, and bad
bodies. ``tools/harvest_render.py
--bodies tests/render/real_whisper_bodies.jsonl`` records vLLM 0.31's answers; other
releases' are kept with ``--keep-release RELEASE DIR``.

Usage::

    python tools/build_real_whisper_bodies.py [--keep-release RELEASE DIR]
"""

from __future__ import annotations

import base64
import io
import json
import struct
import sys
import wave
from pathlib import Path
from typing import Any

from build_real_wu_bodies import CHAT, COMPLETIONS, TEXTS, _chat
from corpus_io import corpus_main, folder_lines

# The vision corpus's PNG encoder (the same bytes under any zlib).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "vision"))
from images import png

FOLDER = "whisper_pp"
RELEASES = Path(__file__).resolve().parent.parent / "tests" / "render" / "releases"
#: Whisper folders with a processor_config.json (tests/render/real/): the feature
#: extractor nested in it and no preprocessor_config.json; the legacy file (no feature
#: extractor) alone; and beside preprocessor_config.json, with a chat template.
PROCESSOR_FOLDERS = ("whisper_pc_nested", "whisper_pc_legacy", "whisper_pc_template")


def _samples(frames: int, channels: int, width: int) -> bytes:
    """A triangle wave (period 64 frames, integers only: the same bytes anywhere) as
    ``width``-byte PCM, each channel a different phase (8-bit WAV is unsigned)."""
    peak = (1 << (8 * width - 1)) - 1
    out = bytearray()
    for frame in range(frames):
        for channel in range(channels):
            phase = (frame + 16 * channel) % 64
            level = (abs(phase - 32) - 16) * peak // 32
            out += (level + 128 if width == 1 else level).to_bytes(
                width, "little", signed=width > 1)
    return bytes(out)


def _wav(seconds: float = 0.1, rate: int = 16000, channels: int = 1, width: int = 2, *,
         silent: bool = True) -> str:
    """A PCM WAV file as base64: by default a tenth of a second of 16 kHz mono silence."""
    frames = round(seconds * rate)
    out = io.BytesIO()
    with wave.open(out, "wb") as handle:
        handle.setnchannels(channels)
        handle.setsampwidth(width)
        handle.setframerate(rate)
        handle.writeframes(b"\0" * (frames * channels * width) if silent
                           else _samples(frames, channels, width))
    return base64.b64encode(out.getvalue()).decode()


def _float_wav(seconds: float, rate: int) -> str:
    """A 32-bit IEEE float WAV (format 3: the stdlib's wave module writes PCM only)."""
    frames = round(seconds * rate)
    data = struct.pack(f"<{frames}f", *((frame % 64 - 32) / 64 for frame in range(frames)))
    fmt = struct.pack("<HHIIHH", 3, 1, rate, rate * 4, 4, 32)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"data" + struct.pack("<I", len(data)) + data
    return base64.b64encode(b"RIFF" + struct.pack("<I", len(body)) + body).decode()


def _audio(data: str) -> dict[str, Any]:
    return {"type": "input_audio", "input_audio": {"data": data, "format": "wav"}}


#: ident -> the WAV of an audio chat (seconds, sample rate, channels, sample width):
#: durations under and over Whisper's 30 s window, its 16 kHz and rates it resamples.
AUDIO_CHATS: dict[str, str] = {
    "audio-1s": _wav(1, silent=False),
    "audio-31s-u8": _wav(31, width=1, silent=False),
    "audio-stereo": _wav(0.5, channels=2, silent=False),
    "audio-24bit": _wav(0.5, width=3, silent=False),
    "audio-float": _float_wav(0.5, 16000),
    "audio-empty": _wav(0),
    "audio-8k": _wav(1, 8000, silent=False),
    "audio-44k": _wav(0.5, 44100, silent=False),
}


def _user(*parts: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"type": "text", "text": "What is this?"}, *parts]}]


def build() -> list[dict[str, Any]]:
    name = f"real-{FOLDER}"
    server = {"--served-model-name": name, "--max-model-len": 448}
    audio = _audio(_wav())
    one_second = _wav(1, silent=False)
    long_text = " ".join([TEXTS["ascii"]] * 800)
    image = {"type": "image_url", "image_url": {
        "url": "data:image/png;base64," + base64.b64encode(png(32, 24, "RGB", 0)).decode()}}
    chats = [*_chat(name, True), *[(f"chat-{ident}", {"model": name, **body}) for ident, body in (
        ("multi-turn", {"messages": [{"role": "user", "content": TEXTS["ascii"]},
                                     {"role": "assistant", "content": TEXTS["digits"]},
                                     {"role": "user", "content": TEXTS["code"]}]}),
        ("text-parts", {"messages": _user()}),
        ("audio", {"messages": _user(audio)}),
        ("audio-undecodable", {"messages": _user(
            {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}})}),
        ("image", {"messages": _user(image)}),
        ("video", {"messages": _user(
            {"type": "video_url", "video_url": {"url": "data:video/mp4;base64,AAAA"}})}),
        ("audio-image", {"messages": _user(audio, image)}),
        *((ident, {"messages": _user(_audio(data))}) for ident, data in AUDIO_CHATS.items()),
        ("audio-url", {"messages": _user({"type": "audio_url", "audio_url": {
            "url": "data:audio/wav;base64," + one_second}})}),
        ("audio-format-mp3", {"messages": _user(
            {"type": "input_audio", "input_audio": {"data": one_second, "format": "mp3"}})}),
        ("audio-only", {"messages": [{"role": "user", "content": [_audio(one_second)]}]}),
        ("audio-system", {"messages": [{"role": "system", "content": TEXTS["code"]},
                                       *_user(_audio(one_second))]}),
        ("audio-two", {"messages": _user(audio, _audio(one_second))}),
        ("audio-long-text", {"messages": [{"role": "user", "content": [
            {"type": "text", "text": long_text}, _audio(one_second)]}]}),
        ("long-text", {"messages": [{"role": "user", "content": long_text}]}),
        ("no-messages", {}),
        ("bad-content", {"messages": [{"role": "user", "content": 5}]}),
        ("bad-role", {"messages": [{"content": "hi"}]}),
    )]]
    completions = [(f"completion-{ident}", {"model": name, **body}) for ident, body in (
        ("text", {"prompt": TEXTS["ascii"]}),
        ("text-list", {"prompt": [TEXTS["ascii"], TEXTS["accents"]]}),
        ("token-ids", {"prompt": [50257, 18088, 25, 2421]}),
        ("token-ids-list", {"prompt": [[50257, 18088], [25, 2421]]}),
        ("no-prompt", {}),
    )]
    return [*folder_lines(FOLDER, server, ((CHAT, chats), (COMPLETIONS, completions))),
            *(line for folder in PROCESSOR_FOLDERS for line in _processor_lines(folder))]


def _processor_lines(folder: str) -> list[dict[str, Any]]:
    """A few bodies over a folder with a processor_config.json: text chats with and without
    tools (vLLM takes the processor's chat template only for a body without tools), an
    audio chat and a completion."""
    name = f"real-{folder}"
    server = {"--served-model-name": name, "--max-model-len": 448}
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    chats = [(f"chat-{ident}", {"model": name, **body}) for ident, body in (
        ("user", {"messages": [{"role": "user", "content": TEXTS["ascii"]}]}),
        ("system-user", {"messages": [{"role": "system", "content": TEXTS["code"]},
                                      {"role": "user", "content": TEXTS["accents"]}]}),
        ("tools", {"messages": [{"role": "user", "content": TEXTS["ascii"]}],
                   "tools": [tool]}),
        ("audio", {"messages": _user(_audio(_wav(1, silent=False)))}),
    )]
    completions = [("completion-text", {"model": name, "prompt": TEXTS["ascii"]})]
    return folder_lines(folder, server, ((CHAT, chats), (COMPLETIONS, completions)))


def keep_features(release: str, directory: Path) -> None:
    """Keep the ``features`` (identifiers and placeholder ranges) of ``release``'s audio
    answers beside its kept vectors, which hold ids and errors only:
    tests/render/releases/RELEASE/real_whisper_audio_features.json."""
    vectors = directory / "real_whisper_vectors.jsonl"
    features = {}
    for text in vectors.read_text("utf-8").splitlines():
        record = json.loads(text)
        found = (record.get("response") or {}).get("features") if record["status"] == 200 \
            else None
        if found:
            features[record["id"]] = found
    out = RELEASES / release / "real_whisper_audio_features.json"
    if features:
        out.write_text(json.dumps(features, indent=1, sort_keys=True) + "\n", "utf-8")
    else:
        out.unlink(missing_ok=True)


if __name__ == "__main__":
    code = corpus_main(__doc__.splitlines()[0], "real_whisper_", build)
    if not code and "--keep-release" in sys.argv:
        at = sys.argv.index("--keep-release")
        keep_features(sys.argv[at + 1], Path(sys.argv[at + 2]))
    raise SystemExit(code)
