"""Whisper's audio content parts: what vLLM's render server answers for them.

vLLM's Whisper processor (``model_executor/models/whisper.py``) runs the model as an
encoder-decoder: the chat's text is the decoder prompt, and each audio clip, decoded
(soundfile, then PyAV), down-mixed to mono and resampled to the feature extractor's
``sampling_rate``, becomes log-mel features padded or truncated to its ``chunk_length``
(30 s: 3000 frames, halved by the encoder's strided convolution) under an encoder prompt
of ``max_source_positions`` (config.json; 1500) placeholder zeros, whatever the clip's
length. The render endpoint answers the decoder prompt's ids (``extract_target_prompt``
of a flattened multimodal input) and the audio's placeholder range (offset 0, length
``max_source_positions``), and its answer model (``GenerateRequest``) requires every
range to lie within those ids from 0.30 on (render/_eras.py ``mm_placeholder_bounds``):
a decoder prompt shorter than the range, which every chat under Whisper's context
length (448) is, is then vLLM's 400 "mm_placeholders must remain within the token_ids
sequence" (tests/render/real_whisper_vectors.jsonl: clips of 0 to 31 s, mono and
stereo, 8-, 16- and 24-bit PCM and 32-bit float, as ``input_audio`` and as an
``audio_url`` data URL; 0.30.0 to 0.33.0 alike). 0.29.0 answers the same chats 200 with
the decoder ids and the audio's identifier, the hash of its decoded waveform, as does a
later release for a decoder prompt as long as the range: prefixkey does not compute
that hash, so those are refused.

What is reproduced is therefore which clips vLLM decodes: a RIFF WAV file whose format
chunk is PCM or IEEE float (read here from its header), at the feature extractor's rate.
Other containers (MP3, FLAC, …) are decoded by libraries prefixkey does not run, and a
clip at another rate is resampled with torchaudio, which the scratch installs could not
run (PyPI has no torchaudio build for their torch; their servers answered 500): both
refused, naming the part.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any, Final, NamedTuple

from ._errors import RenderRequestError, RenderUnsupportedError

__all__ = ["AUDIO_ARCHITECTURES", "AUDIO_LIMIT", "AudioChat", "read_wav"]

#: release -> the architectures whose audio parts are answered here (the module
#: docstring): their render servers' answers harvested at that release.
AUDIO_ARCHITECTURES: Final[Mapping[str, frozenset[str]]] = {
    release: frozenset({"WhisperForConditionalGeneration"})
    for release in ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
}
#: WhisperFeatureExtractor's default ``sampling_rate`` (no preprocessor_config.json key).
_DEFAULT_RATE: Final = 16000
#: WhisperConfig's default ``max_source_positions``.
_DEFAULT_POSITIONS: Final = 1500
#: The model's own per-prompt audio limit (``get_supported_mm_limits``).
AUDIO_LIMIT: Final = 1
#: WAVE format tags libsndfile reads as PCM or float, and WAVE_FORMAT_EXTENSIBLE.
_PCM, _FLOAT, _EXTENSIBLE = 1, 3, 0xFFFE
_WIDTHS: Final = {_PCM: frozenset({8, 16, 24, 32}), _FLOAT: frozenset({32, 64})}


class WavInfo(NamedTuple):
    """A WAV file's header: sample rate, channels and whole frames."""

    rate: int
    channels: int
    frames: int


def read_wav(data: bytes) -> WavInfo | None:
    """The header of a well-formed RIFF WAV file of PCM or float samples, else None."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return None
    fmt: tuple[int, int, int, int] | None = None
    at = 12
    while at + 8 <= len(data):
        chunk, size = data[at:at + 4], int.from_bytes(data[at + 4:at + 8], "little")
        body = data[at + 8:at + 8 + size]
        if chunk == b"fmt " and len(body) >= 16:
            tag = int.from_bytes(body[0:2], "little")
            if tag == _EXTENSIBLE and len(body) >= 26:
                tag = int.from_bytes(body[24:26], "little")  # the sub-format GUID's tag
            fmt = (tag, int.from_bytes(body[2:4], "little"), int.from_bytes(body[4:8], "little"),
                   int.from_bytes(body[14:16], "little"))
        elif chunk == b"data":
            if fmt is None or len(body) != size:
                return None
            tag, channels, rate, bits = fmt
            if bits not in _WIDTHS.get(tag, ()) or not channels or not rate:
                return None
            return WavInfo(rate, channels, size // (channels * bits // 8))
        at += 8 + size + (size & 1)
    return None


class AudioChat:
    """One replica's audio rule: the feature extractor's rate and the placeholder count."""

    __slots__ = ("bounds", "positions", "rate")

    def __init__(self, config: Mapping[str, Any], preprocessor: Mapping[str, Any],
                 bounds: bool) -> None:
        """``preprocessor``: the feature extractor's settings; ``bounds``: the release's
        render answer checks placeholder ranges (render/_eras.py)."""
        self.bounds = bounds
        positions = config.get("max_source_positions", _DEFAULT_POSITIONS)
        self.positions = positions if isinstance(positions, int) else _DEFAULT_POSITIONS
        rate = preprocessor.get("sampling_rate", _DEFAULT_RATE)
        self.rate = rate if isinstance(rate, int) else _DEFAULT_RATE

    def check_clip(self, part_type: str, part: Mapping[str, Any], field: str,
                   wrap: bool) -> None:
        """A clip vLLM decodes at the feature extractor's rate, else refused (naming it)."""
        if wrap:
            raise RenderUnsupportedError(field, "an audio part in the 'openai' content "
                                         "format is not verified here")
        data = _clip_bytes(part_type, part, field)
        info = None if data is None else read_wav(data)
        if info is None:
            raise RenderUnsupportedError(
                field, "only a base64 WAV file of PCM or float samples is decoded here (vLLM "
                "decodes other audio with soundfile or PyAV, which prefixkey does not run)")
        if info.rate != self.rate:
            raise RenderUnsupportedError(
                field, f"a {info.rate} Hz clip is resampled to the feature extractor's "
                f"{self.rate} Hz with torchaudio, which was not verified here")

    def answer(self, field: str, ids_count: int) -> None:
        """The render endpoint's answer for a prompt with audio (``field``: the first
        clip's part) and a decoder prompt of ``ids_count`` ids: its 400 (the module
        docstring), or refused."""
        if self.bounds and ids_count < self.positions:
            raise RenderRequestError(
                "messages", "1 validation error for GenerateRequest: mm_placeholders must "
                "remain within the token_ids sequence (vLLM's render answer checks the "
                f"audio's {self.positions} encoder placeholders against the decoder "
                f"prompt's {ids_count} ids)")
        raise RenderUnsupportedError(
            field, "vLLM answers this audio with its identifier, the hash of its decoded "
            "waveform, which prefixkey does not compute")


def _clip_bytes(part_type: str, part: Mapping[str, Any], field: str) -> bytes | None:
    """The part's audio bytes as vLLM's MediaConnector gets them, when given inline."""
    if part_type == "input_audio":
        inner = part.get("input_audio")
        encoded = inner.get("data") if isinstance(inner, dict) else None
    else:
        inner = part.get("audio_url")
        url = inner.get("url") if isinstance(inner, dict) else inner
        if not isinstance(url, str) or not url.startswith("data:"):
            raise RenderUnsupportedError(
                field, "only an audio data: URL is read here (vLLM fetches other URLs)")
        header, _, encoded = url.partition(",")
        if not header.endswith(";base64"):
            return None
    if not isinstance(encoded, str):
        return None
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return None
