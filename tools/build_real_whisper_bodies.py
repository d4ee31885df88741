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


def _wav() -> str:
    """A tenth of a second of 16 kHz mono silence as a base64 WAV file."""
    out = io.BytesIO()
    with wave.open(out, "wb") as handle:
        handle.setnchannels(1)
        handle.setsampwidth(2)
        handle.setframerate(16000)
        handle.writeframes(b"\0\0" * 1600)
    return base64.b64encode(out.getvalue()).decode()


def _user(*parts: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"type": "text", "text": "What is this?"}, *parts]}]


def build() -> list[dict[str, Any]]:
    name = f"real-{FOLDER}"
    server = {"--served-model-name": name, "--max-model-len": 448}
    audio = {"type": "input_audio", "input_audio": {"data": _wav(), "format": "wav"}}
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
    return folder_lines(FOLDER, server, ((CHAT, chats), (COMPLETIONS, completions)))


if __name__ == "__main__":
    raise SystemExit(corpus_main(__doc__.splitlines()[0], "real_whisper_", build))
