"""The cache-hit audit: every miss reason, the sample, --json, the HTML in headless Chromium."""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import tempfile
import xml.etree.ElementTree as ET
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from prefixkey import Hasher, LoRA, Request, block_hash_to_int64, event_extra_keys
from prefixkey.analysis import (
    REASONS,
    AuditReport,
    audit,
    audit_html,
    audit_text,
    parse_replica_option,
)
from prefixkey.cli import main
from prefixkey.errors import InvalidRequestError
from prefixkey.events import (
    AllBlocksCleared,
    BlockRemoved,
    BlockStored,
    EventBatch,
    EventDecoder,
    encode_batch,
    recording_line,
    seq_frame,
)

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "audit"
#: The browser the HTML report is rendered in (Debian's package; .ci/run installs it).
CHROMIUM = os.environ.get("PREFIXKEY_TEST_CHROMIUM", "/usr/bin/chromium")
BS = 16


def toks(start: int, n: int) -> list[int]:
    return list(range(start, start + n))


def stored(tokens: list[int], *, salt: str | None = None, lora: LoRA | None = None,
           hasher: Hasher | None = None, first: int = 0) -> tuple[BlockStored, list[int]]:
    hasher = hasher or Hasher(block_size=BS)
    state = hasher.start(Request(tokens, cache_salt=salt, lora=lora))
    keys = [block_hash_to_int64(k) for k in state.block_hashes]  # type: ignore[arg-type]
    bs = hasher.block_size
    return BlockStored(
        tuple(keys[first:]), keys[first - 1] if first else None,
        tuple(tokens[first * bs : len(keys) * bs]), bs, medium="GPU",
        lora_name=None if lora is None else lora.name,
        extra_keys=tuple(event_extra_keys(k, hasher.era) for k in state.extra_keys[first:]),
        group_idx=0,
    ), keys


def recording(*messages: tuple[float, str, list[Any]], version: str = "0.31.0") -> list[str]:
    return [recording_line([b"kv", seq_frame(i), encode_batch(EventBatch(t, tuple(ev), 0),
                                                              version)],
                           recv_time=t, source=src)
            for i, (t, src, ev) in enumerate(messages)]


def req(tokens: list[int], t: float | None = 100.0, replica: str | None = "r",
        **extra: Any) -> str:
    line = {"block_size": BS, "token_ids": tokens, "replica": replica, **extra}
    if t is not None:
        line["arrival_time"] = t
    return json.dumps(line)


def one(rec: list[str], line: str, **kw: Any) -> Any:
    report = audit(rec, [line], **kw)
    assert len(report.requests) == 1
    return report.requests[0]


P = toks(1000, 64)


def test_full_hit_and_partial_hit() -> None:
    ev, _ = stored(P)
    rec = recording((1.0, "r", [ev]))
    full = one(rec, req([*P, 1, 2, 3], cached_tokens=64))
    assert (full.outcome, full.reason, full.predicted_hit_tokens, full.agreement) == (
        "full", None, 64, "match")
    part = one(rec, req(P[:32] + toks(5, 40), cached_tokens=48))
    assert (part.outcome, part.reason, part.predicted_hit_tokens) == ("partial", "never_stored",
                                                                      32)
    assert part.agreement == "under" and part.missed_tokens == 32


def test_short_prompt_and_last_block_cap() -> None:
    ev, _ = stored(P)
    rec = recording((1.0, "r", [ev]))
    short = one(rec, req(toks(1, 10)))
    assert (short.reason, short.missed_tokens) == ("short_prompt", 10)
    cap = one(rec, req(P))
    assert (cap.reason, cap.held_blocks, cap.predicted_hit_tokens) == ("last_block_cap", 4, 48)


def test_evicted_by_remove_and_by_clear() -> None:
    ev, keys = stored(P)
    removed = recording((1.0, "r", [ev]), (5.0, "r", [BlockRemoved((keys[2],), medium="GPU")]))
    row = one(removed, req([*P, 1]))
    assert (row.reason, row.predicted_hit_tokens) == ("evicted", 32)
    assert "BlockRemoved" in row.detail
    cleared = recording((1.0, "r", [ev]), (5.0, "r", [AllBlocksCleared()]))
    row = one(cleared, req([*P, 1]))
    assert row.reason == "evicted" and "AllBlocksCleared" in row.detail


def test_events_after_arrival_are_not_applied_and_clock_offset() -> None:
    ev, _ = stored(P)
    rec = recording((150.0, "r", [ev]))
    assert one(rec, req([*P, 1])).reason == "never_stored"
    assert one(rec, req([*P, 1]), clock_offset=60.0).outcome == "full"
    assert one(rec, req([*P, 1], t=None)).outcome == "full"  # no arrival_time: after all


def test_salt_differs() -> None:
    ev, _ = stored(P, salt="tenant-1")
    row = one(recording((1.0, "r", [ev])), req([*P, 1], cache_salt="tenant-2"))
    assert row.reason == "salt_or_lora" and "tenant-1" in row.detail


def test_lora_differs() -> None:
    ev, _ = stored(P, lora=LoRA("sql", "/adapters/sql"))
    row = one(recording((1.0, "r", [ev])), req([*P, 1]))
    assert row.reason == "salt_or_lora" and "LoRA differs" in row.detail


def test_seed_or_release_differs() -> None:
    ev, _ = stored(P, hasher=Hasher(block_size=BS, hash_algo="sha256_cbor"))
    rec = recording((1.0, "r", [ev]))
    row = one(rec, req([*P, 1]))
    assert row.reason == "seed_or_release" and row.predicted_hit_tokens == 0
    # Telling the audit the replica's real scheme makes the keys match.
    name, config = parse_replica_option("r=0.31.0:algo=sha256_cbor")
    assert one(rec, req([*P, 1]), replicas={name: config}).outcome == "full"


def test_block_size_mismatch() -> None:
    ev, _ = stored(P, hasher=Hasher(block_size=32))
    row = one(recording((1.0, "r", [ev])), req([*P, 1]))
    assert row.reason == "block_size_mismatch" and "32" in row.detail


def test_other_replica_and_no_events() -> None:
    ev, _ = stored(P)
    other, _ = stored(toks(7000, 32))
    rec = recording((1.0, "a", [ev]), (2.0, "r", [other]))
    assert one(rec, req([*P, 1])).reason == "other_replica"
    assert one(rec, req([*P, 1], replica="ghost")).reason == "no_events"


def test_partial_stores_chain_by_parent() -> None:
    """A run stored after a hit (parent set) is compared by its whole token prefix."""
    head, _ = stored(P[:32], salt="s1")
    tail, _ = stored(P, salt="s1", first=2)
    rec = recording((1.0, "r", [head]), (2.0, "r", [tail]))
    assert one(rec, req([*P, 1], cache_salt="s1")).outcome == "full"
    assert one(rec, req([*P, 1], cache_salt="s2")).reason == "salt_or_lora"


def test_request_errors_and_replica_option_errors() -> None:
    ev, _ = stored(P)
    report = audit(recording((1.0, "r", [ev]), (1.0, "b", [])),
                   ["{not json", req(P, replica=None), json.dumps({"token_ids": [1]})])
    assert [r.outcome for r in report.requests] == ["error"] * 3
    assert report.totals()["errors"] == 3
    with pytest.raises(InvalidRequestError):
        parse_replica_option("no-version")


def test_encoder_round_trips_array_and_map_eras() -> None:
    ev, _ = stored(P)
    for version in ("0.14.0", "0.22.0", "0.31.0"):
        batch = EventBatch(1.5, (ev, BlockRemoved((1, 2), medium="GPU"), AllBlocksCleared()), 0)
        back = EventDecoder(version).decode_batch(encode_batch(batch, version))
        assert back.events[0].block_hashes == ev.block_hashes  # type: ignore[union-attr]
        assert len(back.events) == 3 and back.ts == 1.5


def _sample() -> AuditReport:
    with open(SAMPLE / "recording.jsonl", "rb") as rec, \
            open(SAMPLE / "requests.jsonl", "rb") as log:
        return audit(rec, log)


def test_sample_explains_every_miss() -> None:
    report = _sample()
    rows = report.requests
    assert rows and all(r.error is None for r in rows)
    misses = [r for r in rows if r.outcome != "full"]
    assert misses and all(r.reason in REASONS and r.detail for r in misses)
    assert all(r.agreement == "match" for r in rows)
    wanted = {"short_prompt", "last_block_cap", "evicted", "salt_or_lora", "never_stored",
              "other_replica"}
    assert wanted <= set(report.per_reason())
    assert {r.outcome for r in rows} == {"full", "partial", "miss"}
    text = audit_text(report)
    assert "unknown" not in text and "misses by reason" in text


def test_cli_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["audit", str(SAMPLE / "recording.jsonl"), str(SAMPLE / "requests.jsonl"),
                 "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) >= {"totals", "per_replica", "per_reason", "timeline", "requests",
                        "recording"}
    assert doc["totals"]["requests"] == 14
    assert set(doc["per_replica"]) == {"replica-a", "replica-b"}
    assert {"start", "end", "replica", "predicted_hit_rate", "reported_hit_rate"} <= set(
        doc["timeline"][0])
    row = doc["requests"][0]
    assert {"line", "id", "replica", "arrival_time", "predicted_hit_tokens",
            "reported_hit_tokens", "outcome", "reason", "detail", "agreement"} <= set(row)


def test_cli_html_is_written_and_named_by_the_text(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "audit.html"
    code = main(["audit", str(SAMPLE / "recording.jsonl"), str(SAMPLE / "requests.jsonl"),
                 "--html", str(page)])
    assert code == 0
    report = _sample()
    assert page.read_text("utf-8") == audit_html(report)
    assert capsys.readouterr().out == audit_text(report) + f"HTML report written to {page}\n"


def test_cli_bad_replica_option(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["audit", str(SAMPLE / "recording.jsonl"), str(SAMPLE / "requests.jsonl"),
                 "--replica", "replica-a=9.9.9"])
    assert code == 2 and "prefixkey audit" in capsys.readouterr().err


class _Tables(HTMLParser):
    """Every <table> of a page: rows of (the row's class, its cells' text, their titles)."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.tables: list[list[tuple[str | None, list[str], list[str | None]]]] = []
        self._cell: list[str] | None = None
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append((dict(attrs).get("class"), [], []))
        elif tag in ("td", "th"):
            self.tables[-1][-1][2].append(dict(attrs).get("title"))
            self._cell = []

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1][1].append("".join(self._cell))
            self._cell = None


SVG = "{http://www.w3.org/2000/svg}"


def _timeline(page: str) -> ET.Element:
    svg = re.findall(r"<svg.*?</svg>", page, re.S)[0]
    assert 'aria-label="hit rate over time per replica"' in svg
    return ET.fromstring(svg)


def test_html_draws_reported_on_top_of_predicted_distinguishably() -> None:
    """The sample's reported rates equal the predicted ones everywhere: both stay visible."""
    chart = _timeline(audit_html(_sample()))
    groups = [g for g in chart.iter(f"{SVG}g") if g.get("class") in ("predicted", "reported")]
    order = [g.get("class") for g in groups]
    assert order == ["predicted"] * 2 + ["reported"] * 2  # every dashed line on top
    lines = {(g.get("class"), g.get("data-replica")): g.find(f"{SVG}polyline") for g in groups}
    for replica in ("replica-a", "replica-b"):
        band, dashed = lines["predicted", replica], lines["reported", replica]
        assert band is not None and dashed is not None
        assert band.get("points") == dashed.get("points")  # coincident in the sample
        assert band.get("stroke-dasharray") is None and dashed.get("stroke-dasharray")
        assert float(band.get("stroke-width", 0)) > 2 * float(dashed.get("stroke-width", 0))
    note = " ".join(e.text or "" for e in chart.iter(f"{SVG}text")
                    if e.get("class") == "legend-note")
    assert note == "reported on top: where equal, its dashes lie on the predicted band"


def test_html_x_axis_has_one_label_in_utc() -> None:
    chart = _timeline(audit_html(_sample()))
    bottom = [e.text for e in chart.iter(f"{SVG}text")
              if float(e.get("y", 0)) > float(chart.get("height", 0)) - 20]  # below the 0% line
    assert bottom == ["arrival time (UTC): 2023-11-14 22:13:30 to 2023-11-14 22:15:00 (90 s)"]


def test_html_arrival_times_are_utc_like_the_chart() -> None:
    report = _sample()
    requests = _Tables(audit_html(report)).tables[-1]
    header, rows = requests[0][1], requests[1:]
    column = header.index("arrival (UTC)")
    assert rows[0][1][column] == "2023-11-14 22:13:30"  # arrival_time 1700000010.0
    assert rows[0][2][column] == "1700000010.0 (unix seconds)"  # on hover
    assert not [r for r in rows if re.fullmatch(r"[0-9.]+", r[1][column])]


def test_html_partial_hits_have_their_own_colour() -> None:
    report = _sample()
    page = audit_html(report)
    rows = _Tables(page).tables[-1][1:]
    classes = {r.outcome: cls for r, (cls, _, _) in zip(report.requests, rows, strict=True)}
    assert classes == {"full": "full", "partial": "partial", "miss": "miss"}
    colours = dict(re.findall(r"tr\.(\w+) td,\.\w+\{background:(#\w+)\}", page))
    assert set(colours) == {"full", "partial", "miss", "err"}
    assert len(set(colours.values())) == 4
    key = re.search(r'<p class="key">(.*?)</p>', page)
    assert key and re.findall(r'<span class="(\w+)">', key.group(1)) == [
        "full", "partial", "miss", "err"]


def test_html_per_replica_table_counts_agreement_as_the_terminal_does() -> None:
    lines = (SAMPLE / "requests.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    lines[0] = json.dumps({**first, "cached_tokens": 0})  # reported short of predicted: over
    with open(SAMPLE / "recording.jsonl", "rb") as rec:
        report = audit(rec, lines)
    table = _Tables(audit_html(report)).tables[0]
    assert table[0][1] == ["replica", "requests", "predicted", "reported", "match", "over",
                           "under"]
    counts = {row[1][0]: row[1][4:] for row in table[1:]}
    assert counts == {"replica-a": ["6", "1", "0"], "replica-b": ["7", "0", "0"]}
    assert "replica-a: 7 request(s), predicted 69.7%, reported 55.0% [match 6, over 1]" \
        in audit_text(report)


def _png_info(data: bytes) -> tuple[int, int, int]:
    """(width, height, distinct byte values of the decompressed image data)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    pos, idat = 8, b""
    while pos < len(data):
        length = struct.unpack(">I", data[pos : pos + 4])[0]
        if data[pos + 4 : pos + 8] == b"IDAT":
            idat += data[pos + 8 : pos + 8 + length]
        pos += 12 + length
    return width, height, len(set(zlib.decompress(idat)))


def _screenshot(page: Path, tmp: Path) -> bytes:
    shot = tmp / "shot.png"
    subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp / 'profile'}", f"--screenshot={shot}",
         "--window-size=1200,900", page.as_uri()],
        capture_output=True, timeout=60, check=False,
    )
    assert shot.exists(), "headless Chromium wrote no screenshot"
    return shot.read_bytes()


def test_html_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    # CI (.ci/run installs Debian's chromium) must run it; elsewhere a missing
    # browser is a visible skip, never a pass.
    if not os.path.exists(CHROMIUM):
        message = (f"{CHROMIUM} is missing (apt-get install -y chromium, or set "
                   "PREFIXKEY_TEST_CHROMIUM to a Chromium binary)")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    page = audit_html(_sample())
    assert "<script" not in page and "http://" not in page.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")
    assert page.count("<svg") == 2
    report = tmp_path / "report.html"
    report.write_text(page, encoding="utf-8")
    with tempfile.TemporaryDirectory() as blank_dir:
        blank = Path(blank_dir) / "blank.html"
        blank.write_text("<!DOCTYPE html><html><body></body></html>")
        blank_png = _screenshot(blank, Path(blank_dir))
    png = _screenshot(report, tmp_path)
    width, height, distinct = _png_info(png)
    assert (width, height) == (1200, 900)
    assert len(png) > 20_000 and len(png) > 5 * len(blank_png)
    assert distinct > 50  # text, charts and colours, not a blank page
