"""Recordings that mix PUB messages and replay replies: each line's framing and sequencing.

The replay frames below are what vLLM's replay ROUTER sends, as a DEALER
receives them: ``[b"", seq, payload]`` before 0.26.0 (end ``[b"", END, b""]``),
``[b"", topic, seq, payload]`` from 0.26.0 (end ``[b"", b"", END, b""]``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from prefixkey import Hasher, Request
from prefixkey.analysis import DriftConfig, audit
from prefixkey.core import block_hash_to_int64
from prefixkey.events import (
    END_SEQ,
    BlockRemoved,
    BlockStored,
    EventBatch,
    EventDecoder,
    KVCacheEvent,
    RecordingFormatError,
    decode_recording,
    encode_batch,
    parse_recording_line,
    recording_line,
    seq_frame,
)

BS = 16
OLD, NEW = "0.25.1", "0.26.0"  # the last release whose replay omits the topic, the first with it


def payload(version: str, ts: float, *events: KVCacheEvent) -> bytes:
    return encode_batch(EventBatch(ts, events, 0), version)


def pub(topic: bytes, seq: int, data: bytes) -> list[bytes]:
    return [topic, seq_frame(seq), data]


def reply(version: str, topic: bytes, seq: int, data: bytes) -> list[bytes]:
    head = [topic] if version == NEW else []
    return [b"", *head, seq_frame(seq), data]


def reply_end(version: str) -> list[bytes]:
    return [b"", b"", END_SEQ, b""] if version == NEW else [b"", END_SEQ, b""]


def line(frames: list[bytes], t: float, via: str | None, source: str = "a") -> str:
    return recording_line(frames, recv_time=t, source=source, via=via)  # type: ignore[arg-type]


def untag(lines: list[str]) -> list[str]:
    out = []
    for raw in lines:
        obj = json.loads(raw)
        obj.pop("via", None)
        out.append(json.dumps(obj))
    return out


def summary(records: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [("error", r["error"]["type"]) if "error" in r else
            (r["via"], r["topic"], "end") if r.get("replay_end") else
            (r["via"], r["topic"], r["seq"]) for r in records]


def mixed(version: str, topic: bytes) -> list[str]:
    """A PUB stream with seq 1-2 recovered by replay, in the subscriber's recording order."""
    p = [payload(version, float(i)) for i in range(4)]
    return [line(pub(topic, 0, p[0]), 1.0, "pub"), line(pub(topic, 3, p[3]), 4.0, "pub"),
            line(reply(version, topic, 1, p[1]), 4.1, "replay"),
            line(reply(version, topic, 2, p[2]), 4.2, "replay"),
            line(reply(version, topic, 3, p[3]), 4.3, "replay"),
            line(reply_end(version), 4.4, "replay")]


# ----------------------------------------------------------------------------- lines


def test_via_round_trips_and_is_optional() -> None:
    frames = pub(b"kv", 5, b"\x92\x00\x90")
    rec = parse_recording_line(recording_line(frames, recv_time=1.5, source="a", via="replay"))
    assert (rec.via, rec.frames, rec.source) == ("replay", tuple(frames), "a")
    untagged = recording_line(frames, recv_time=1.5, source="a")
    assert "via" not in json.loads(untagged) and parse_recording_line(untagged).via is None


@pytest.mark.parametrize("via", ["sub", 1, ""])
def test_bad_via_is_a_typed_error(via: Any) -> None:
    raw = json.dumps({"recv_time": 1, "source": "a", "via": via, "frames_b64": []})
    with pytest.raises(RecordingFormatError) as info:
        parse_recording_line(raw)
    assert info.value.field == "via"
    with pytest.raises(RecordingFormatError):
        recording_line([], recv_time=None, source=None, via=via)


@pytest.mark.parametrize(("version", "frames", "expected"), [
    (NEW, [b"", b"kv", b"s", b"p"], "replay"),   # a DEALER's reply
    (NEW, [b"kv", b"s", b"p"], None),            # a PUB message, or a REQ's reply
    (NEW, [b"s", b"p"], None),                   # neither
    (NEW, [b"x", b"kv", b"s", b"p"], None),
    (OLD, [b"s", b"p"], "replay"),               # a REQ's reply
    (OLD, [b"", b"s", b"p"], None),              # a DEALER's reply, or PUB on topic ""
    (OLD, [b"kv", b"s", b"p"], "pub"),
    (OLD, [b"", b"kv", b"s", b"p"], None),
])
def test_framing_of_follows_the_era(version: str, frames: list[bytes],
                                    expected: str | None) -> None:
    assert EventDecoder(version).framing_of(frames) == expected


# ----------------------------------------------------------------------------- decode


@pytest.mark.parametrize("topic", [b"", b"kv"])
def test_mixed_recording_decodes_in_one_call(topic: bytes) -> None:
    lines = mixed(NEW, topic)
    expected = [("pub", topic.decode(), 0), ("pub", topic.decode(), 3),
                *(("replay", topic.decode(), s) for s in (1, 2, 3)), ("replay", "", "end")]
    decoder = EventDecoder(NEW)
    assert summary(list(decode_recording(lines, decoder))) == expected
    # Without "via", the shape decides: from 0.26.0 a DEALER's reply has 4 frames.
    assert summary(list(decode_recording(untag(lines), decoder))) == expected
    # "via" wins over the framing given for undecided lines.
    assert summary(list(decode_recording(lines, decoder, framing="replay"))) == expected


def test_older_eras_need_via_or_framing() -> None:
    lines = mixed(OLD, b"")
    decoder = EventDecoder(OLD)
    tagged = [("pub", "", 0), ("pub", "", 3), ("replay", "", 1), ("replay", "", 2),
              ("replay", "", 3), ("replay", "", "end")]
    assert summary(list(decode_recording(lines, decoder))) == tagged
    # Untagged, a DEALER's reply looks like a PUB message on topic "": read as one,
    # its end marker is no batch.
    assert summary(list(decode_recording(untag(lines), decoder))) == [
        ("pub", "", 0), ("pub", "", 3), ("pub", "", 1), ("pub", "", 2), ("pub", "", 3),
        ("error", "MalformedPayloadError")]
    replayed = list(decode_recording(untag(lines[2:]), decoder, framing="replay"))
    assert summary(replayed) == tagged[2:]
    # A PUB message on another topic, or a REQ's 2-frame reply, has one possible framing.
    other = [line(pub(b"kv", 7, payload(OLD, 1.0)), 1.0, None),
             line([seq_frame(8), payload(OLD, 2.0)], 2.0, None)]
    assert summary(list(decode_recording(other, decoder, framing="replay"))) == [
        ("pub", "kv", 7), ("replay", "", 8)]


def test_via_that_contradicts_the_frames_is_a_framing_error() -> None:
    wrong = [line(reply(NEW, b"kv", 1, payload(NEW, 1.0)), 1.0, "pub")]
    [record] = decode_recording(wrong, EventDecoder(NEW))
    assert record["error"]["type"] == "EventFramingError" and record["error"]["line"] == 1


# ----------------------------------------------------------------------------- audit


def _stored(version: str, tokens: list[int]) -> tuple[BlockStored, list[int]]:
    hasher = Hasher(block_size=BS, vllm_version=version, python_hash_seed="0")
    keys = [block_hash_to_int64(k) for k in hasher.block_hashes(Request(tokens))]  # type: ignore[arg-type]
    return BlockStored(tuple(keys), None, tuple(tokens), BS, medium="GPU", group_idx=0), keys


R = list(range(500, 500 + 4 * BS))


def _gap_recording(version: str, topic: bytes) -> list[str]:
    """Seq 1 (store R) is lost and replayed after seq 2 (remove R's last two blocks)."""
    ev, keys = _stored(version, R)
    p0, p1 = payload(version, 1.0), payload(version, 2.0, ev)
    p2 = payload(version, 3.0, BlockRemoved(tuple(keys[2:]), medium="GPU", group_idx=0))
    return [line(pub(topic, 0, p0), 1.0, "pub"), line(pub(topic, 0, p0), 1.1, "pub"),
            line(pub(topic, 2, p2), 3.0, "pub"),
            line(reply(version, topic, 1, p1), 4.0, "replay"),
            line(reply(version, topic, 2, p2), 4.1, "replay"),
            line(reply_end(version), 4.2, "replay")]


def _hits(version: str, recording: list[str], **kw: Any) -> list[int]:
    requests = [json.dumps({"vllm_version": version, "python_hash_seed": "0", "block_size": BS,
                            "token_ids": [*R, 1],
                            "replica": "a", **({} if t is None else {"arrival_time": t})})
                for t in (2.0, 3.5, None)]
    report = audit(recording, requests, **kw)
    return [r.predicted_hit_tokens for r in report.requests]


@pytest.mark.parametrize(("version", "topic"), [(NEW, b"kv"), (NEW, b""), (OLD, b"kv")])
def test_audit_applies_a_replayed_batch_before_the_message_that_revealed_its_gap(
    version: str, topic: bytes
) -> None:
    # The live subscriber, on seq 2 at t=3.0, replays seq 1 and applies 1 then 2: from
    # then on R's first two blocks are held. Applied at its own recv_time (4.0), seq 1
    # would be missing at 3.5 and, stored after the removal, hold all four blocks.
    lines = _gap_recording(version, topic)
    expected = [0, 2 * BS, 2 * BS]
    assert _hits(version, lines) == expected
    info = audit(lines, [], replicas={"a": DriftConfig.parse(version)}).recording
    assert (info["messages"], info["replayed"], info["skipped"], info["errors"]) == (3, 1, 2, [])
    if version == NEW:  # untagged, the shape tells
        assert _hits(version, untag(lines)) == expected
    else:  # untagged, a reply reads as a PUB message on topic "" unless told otherwise
        assert _hits(version, untag(lines)) != expected
        assert _hits(version, untag(lines), framing="replay") == expected
    # Without the replayed batch, R was never stored.
    assert _hits(version, [x for x in lines if json.loads(x)["via"] == "pub"]) == [0, 0, 0]
