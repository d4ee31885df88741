"""Fuzz the commands over hostile files, in-process (issue 14, item 4).

Each input is a whole file of mutated lines (requests, recordings, decoded
events); the command must exit 0, 1 or 2 without an exception, and every line
it writes to stdout must be strict JSON (``--json`` for the reports).
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from fuzzing import Fuzz, NotJSON, batches, harvested_payloads, mutate_json
from test_fuzz_recordings import recorded_line
from test_fuzz_requests import CASES, CORPUS

from prefixkey.cli import main
from prefixkey.events import EventDecoder, decode_recording

pytestmark = pytest.mark.fuzz

EXAMPLES = Path(__file__).parent.parent.parent / "examples" / "audit"
RECORDING = (EXAMPLES / "recording.jsonl").read_bytes().splitlines()
REQUEST_LOG = [json.loads(line)
               for line in (EXAMPLES / "requests.jsonl").read_bytes().splitlines()]
#: BlockStored events as `events decode` writes them: fingerprint's input.
EVENTS = [event for record in decode_recording(RECORDING, EventDecoder("0.31.0"))
          for event in record.get("events", ()) if event["type"] == "BlockStored"]
PAYLOADS = harvested_payloads()
#: Separates an audit input's recording from its request log.
SPLIT = b"\n#request-log\n"


def _refuse(constant: str) -> None:
    raise NotJSON(f"{constant} in the output")


def _command(argv: Callable[[list[Path]], list[str]], tmp: Path) -> Callable[[bytes], None]:
    def check(data: bytes) -> None:
        paths = []
        for i, part in enumerate(data.split(SPLIT)):
            paths.append(tmp / f"input{i}.jsonl")
            paths[-1].write_bytes(part)
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            status = main(argv(paths))
        assert status in (0, 1, 2), f"exit status {status}: {err.getvalue()[-500:]}"
        for line in out.getvalue().splitlines():
            if line.strip():
                json.loads(line, parse_constant=_refuse)
    return check


def _requests(rng: random.Random) -> list[bytes]:
    return [mutate_json(rng, rng.choice(CASES), CORPUS)
            if rng.random() < 0.7 else json.dumps(rng.choice(CASES)).encode()
            for _ in range(rng.randint(1, 12))]


def _recording(rng: random.Random) -> list[bytes]:
    lines = []
    for _ in range(rng.randint(1, 12)):
        if rng.random() < 0.5:
            lines.append(rng.choice(RECORDING))
        else:
            version = rng.choice(sorted(PAYLOADS))
            lines.append(recorded_line(rng, version, rng.choice(PAYLOADS[version])))
    return lines


def _events(rng: random.Random) -> list[bytes]:
    return [mutate_json(rng, rng.choice(EVENTS), CORPUS)
            for _ in range(rng.randint(1, 6))]


def _log(rng: random.Random) -> list[bytes]:
    return [mutate_json(rng, rng.choice(REQUEST_LOG), CORPUS)
            if rng.random() < 0.5 else json.dumps(rng.choice(REQUEST_LOG)).encode()
            for _ in range(rng.randint(1, 8))]


COMMANDS: dict[str, tuple[Callable[[list[Path]], list[str]],
                          Callable[[random.Random], bytes]]] = {
    "hash": (lambda p: ["hash", str(p[0])], lambda rng: b"\n".join(_requests(rng))),
    "drift": (lambda p: ["drift", "0.31.0", "0.30.0:algo=sha256", str(p[0]), "--json"],
              lambda rng: b"\n".join(_requests(rng))),
    "events-decode": (lambda p: ["events", "decode", str(p[0]), "--vllm-version", "0.31.0"],
                      lambda rng: b"\n".join(_recording(rng))),
    "fingerprint": (lambda p: ["fingerprint", str(p[0]), "--json"],
                    lambda rng: b"\n".join(_events(rng))),
    "fingerprint-recording": (
        lambda p: ["fingerprint", str(p[0]), "--vllm-version", "0.31.0", "--json"],
        lambda rng: b"\n".join(_recording(rng))),
    "audit": (lambda p: ["audit", str(p[0]), str(p[-1]), "--json"],
              lambda rng: b"\n".join(_recording(rng)) + SPLIT + b"\n".join(_log(rng))),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_command_over_hostile_files(command: str, tmp_path: Path) -> None:
    argv, make = COMMANDS[command]
    fuzz = Fuzz(f"cli/{command}", _command(argv, tmp_path))
    if not fuzz.replaying():
        fuzz.run(batches(fuzz.rng, make))
    fuzz.finish()


def test_seeds_are_accepted(tmp_path: Path) -> None:
    """The unmutated seeds run cleanly, so a finding is the mutation's doing."""
    lines: dict[str, Any] = {
        "hash": b"\n".join(CORPUS[:5]),
        "events-decode": b"\n".join(RECORDING),
        "fingerprint": b"\n".join(json.dumps(e).encode() for e in EVENTS),
    }
    for command, data in lines.items():
        argv, _ = COMMANDS[command]
        path = tmp_path / f"{command}.jsonl"
        path.write_bytes(data)
        out = io.StringIO()
        with redirect_stdout(out), redirect_stderr(io.StringIO()):
            assert main(argv([path])) == 0, command
        assert out.getvalue()
