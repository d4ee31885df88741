"""Recordings across a gap that replay filled: ``listen --record`` keeps the replayed
batches, ``events decode`` reads PUB messages and replay replies in one call, and
``audit`` of the recording sees what the live index held.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

zmq = pytest.importorskip("zmq", reason="needs pyzmq: pip install -e '.[test]' (or the zmq extra)")

from fake_publisher import FakePublisher  # noqa: E402
from test_subscriber import (  # noqa: E402
    BLOCK,
    encode_batch,
    hasher,
    hello,
    stored,
    wait,
)

from prefixkey import Request  # noqa: E402
from prefixkey.analysis import audit  # noqa: E402
from prefixkey.cli import main  # noqa: E402
from prefixkey.events import BlockRemoved, EventDecoder, decode_recording  # noqa: E402
from prefixkey.fleet import PrefixIndex, ReplicaEndpoint, ReplicaScheme, Router, Subscriber  # noqa: E402

VERSION = "0.31.0"


def _record_a_replayed_gap(ctx: Any, path: Path) -> tuple[dict[str, int], list[Request]]:
    """seq 1-2 never reach the SUB socket; seq 3 reveals the gap and replay fills it.

    seq 3 removes blocks that seq 1 stored, so the live result depends on the
    replayed batches being applied, and before seq 3.
    """
    pub = FakePublisher(ctx, VERSION, topic="kv", replay=True)
    scheme = ReplicaScheme(hasher(VERSION))
    index = PrefixIndex()
    endpoint = ReplicaEndpoint("a", pub.endpoint, VERSION, replay_endpoint=pub.replay_endpoint,
                               topic="kv", scheme=scheme)
    r1, r2 = Request(list(range(300, 300 + 4 * BLOCK))), Request(list(range(900, 900 + 3 * BLOCK)))
    first = stored(scheme, r1)
    try:
        with path.open("w", encoding="utf-8") as record, Subscriber(
                [endpoint], index=index, context=ctx, record=record) as sub:
            hello(sub, [(pub, "a", pub.publish(encode_batch(VERSION, 1.0, []), send=False))])
            pub.publish(encode_batch(VERSION, 2.0, [first]), send=False)
            pub.publish(encode_batch(VERSION, 3.0, [stored(scheme, r2)]), send=False)
            pub.publish(encode_batch(VERSION, 4.0, [BlockRemoved(
                first.block_hashes[2:], medium="GPU", group_idx=0)]))
            wait(sub, lambda s: s["replicas"]["a"]["batches"] == 4
                 and s["replicas"]["a"]["replay_completed"] == 1, "the replayed gap")
            assert sub.stats()["replicas"]["a"]["replayed_batches"] == 2
            probes = [Request([*r.token_ids, 7]) for r in (r1, r2)]
            with sub.lock:
                live = {f"r{i}": Router(index).route(p)[0].hit_tokens
                        for i, p in enumerate(probes, start=1)}
    finally:
        pub.close()
    assert live == {"r1": 2 * BLOCK, "r2": 3 * BLOCK}
    return live, probes


def _audited(recording: list[str], probes: list[Request]) -> dict[str, int]:
    log = [json.dumps({"id": f"r{i}", "vllm_version": VERSION, "python_hash_seed": "0",
                       "block_size": BLOCK, "token_ids": list(p.token_ids), "replica": "a"})
           for i, p in enumerate(probes, start=1)]
    return {r.id: r.predicted_hit_tokens for r in audit(recording, log).requests}


def test_a_recording_across_a_replayed_gap_audits_as_the_live_index(
    ctx: Any, tmp_path: Path
) -> None:
    path = tmp_path / "rec.jsonl"
    live, probes = _record_a_replayed_gap(ctx, path)
    lines = path.read_text().splitlines()
    decoded = list(decode_recording(lines, EventDecoder(VERSION)))
    assert all("error" not in d for d in decoded)
    replayed = [d.get("seq", "end") for d in decoded if d["via"] == "replay"]
    assert replayed == [1, 2, 3, "end"]  # vLLM replays everything from the start seq
    assert {d["seq"] for d in decoded if d["via"] == "pub"} == {0, 3}
    assert all(json.loads(x)["via"] in ("pub", "replay") for x in lines)

    assert _audited(lines, probes) == live
    # The recording as it was before: PUB messages only. It misses what replay recovered.
    pub_only = [x for x in lines if json.loads(x)["via"] == "pub"]
    assert _audited(pub_only, probes) == {"r1": 0, "r2": 0}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[Any], str]:
    status = main(list(argv))
    out = capsys.readouterr()
    return status, [json.loads(x) for x in out.out.splitlines()], out.err


def test_events_decode_reads_a_mixed_recording_in_one_call(
    ctx: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "rec.jsonl"
    _record_a_replayed_gap(ctx, path)
    untagged = tmp_path / "untagged.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    untagged.write_text("".join(json.dumps({k: v for k, v in row.items() if k != "via"}) + "\n"
                                for row in rows))
    for recording in (path, untagged):  # 0.31's replay carries the topic: the shape decides
        status, records, err = _run(capsys, "events", "decode", str(recording),
                                    "--vllm-version", VERSION)
        assert status == 0 and err == ""
        assert [r["via"] for r in records] == [row["via"] for row in rows]
        assert [r.get("seq") for r in records if r["via"] == "replay"] == [1, 2, 3, None]


def test_cli_audit_takes_the_framing_of_undecided_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from prefixkey.events import END_SEQ, EventBatch, recording_line, seq_frame
    from prefixkey.events import encode_batch as encode

    old = "0.24.0"  # a DEALER's replay reply [b"", seq, payload] looks like PUB on topic ""
    data = encode(EventBatch(1.0, (), 0), old)
    lines = [recording_line([b"kv", seq_frame(1), data], recv_time=1.0, source="a"),
             recording_line([b"", seq_frame(0), data], recv_time=1.1, source="a"),
             recording_line([b"", END_SEQ, b""], recv_time=1.2, source="a")]
    rec, log = tmp_path / "rec.jsonl", tmp_path / "log.jsonl"
    rec.write_text("\n".join(lines) + "\n")
    log.write_text(json.dumps({"vllm_version": old, "python_hash_seed": "0",
                               "block_size": BLOCK, "token_ids": list(range(40)),
                               "replica": "a"}) + "\n")
    status, [report], _ = _run(capsys, "audit", str(rec), str(log), "--json")
    assert status == 0 and [e["type"] for e in report["recording"]["errors"]] == [
        "MalformedPayloadError"]
    status, [report], _ = _run(capsys, "audit", str(rec), str(log), "--json",
                               "--framing", "replay")
    assert status == 0 and report["recording"]["errors"] == []
    assert (report["recording"]["messages"], report["recording"]["replayed"]) == (2, 1)
