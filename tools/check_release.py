"""Does a vLLM release belong to a known scheme era? One command for the next maintainer.

    python tools/check_release.py --vllm-version 0.34.0      # harvest, then check
    python tools/check_release.py tests/vectors/0.34.0.jsonl # check harvested vectors

Harvests the release's vectors with ``tools/harvest_vectors.py`` (into a
temporary directory unless ``--out`` is given), then replays every record
under each era of ``prefixkey.core.ERAS`` (as its newest known release) and
reports how many records each era reproduces. An era that reproduces them all
is the release's era: add the release to ``KNOWN_RELEASES``. If none does, the
release changed the scheme: see CONTRIBUTING.md, "Adding a release".
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from packaging.version import Version

from prefixkey.core import ERAS, KNOWN_RELEASES, Era, resolve_release
from prefixkey.testing import replay

HERE = Path(__file__).resolve().parent


def representative(era: Era) -> str:
    """The era's newest known release (it offers every algorithm the era has)."""
    members = [v for v in KNOWN_RELEASES if resolve_release(v).era is era]
    return str(max(members, key=Version)) if members else era.since


def check(vectors: Path) -> int:
    records = [json.loads(line) for line in vectors.read_text().splitlines() if line.strip()]
    if not records:
        print(f"{vectors}: no records", file=sys.stderr)
        return 2
    print(f"{vectors}: {len(records)} records of vLLM {records[0]['version']}")
    matching = []
    for era in ERAS:
        release = representative(era)
        failures = [(r["id"], problems) for r in records
                    if (problems := replay(r, vllm_version=release))]
        reproduced = len(records) - len(failures)
        print(f"  era {era.name:<3} (as {release:<9}) reproduces {reproduced}/{len(records)}")
        if failures:
            first_id, problems = failures[0]
            print(f"      first miss: {first_id}: {'; '.join(problems)[:160]}")
        else:
            matching.append(era.name)
    if matching:
        print(f"=> keys match era {', '.join(matching)}: add the release to KNOWN_RELEASES")
        return 0
    print("=> no known era reproduces this release: its scheme changed")
    return 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vectors", nargs="?", type=Path, help="a harvested vectors file")
    parser.add_argument("--vllm-version", help="harvest this release first")
    parser.add_argument("--out", type=Path, help="where to harvest (default: a temp dir)")
    args = parser.parse_args()
    if args.vllm_version is None:
        if args.vectors is None:
            parser.error("give a vectors file or --vllm-version")
        return check(args.vectors)
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        subprocess.run(
            [sys.executable, str(HERE / "harvest_vectors.py"), "--vllm-version",
             args.vllm_version, "--out", str(out)],
            check=True,
        )
        return check(out / f"{args.vllm_version}.jsonl")


if __name__ == "__main__":
    sys.exit(main())
