"""Expanding an image's placeholders, per vision family, against computing its identifier.

Run from the repository root (extras ``render`` and ``multimodal``; the Qwen folders
need the real-model cache, ``python tests/real_models.py fetch``)::

    python benchmarks/bench_vision.py            # writes its section of benchmarks/MM_CHAT.md
    python benchmarks/bench_vision.py --quick
    python benchmarks/bench_vision.py --only Pixtral   # re-measure one family's rows

Per family (its folder's Renderer builds the family once) and image size, on the same
PNG bytes, in one process:

* ``identifier``: ``MMHasher.loaded_image(data)``: the decode vLLM's loader does and
  the digest of every byte (what keying the image costs anyway);
* ``expansion``: the family's ``expansion(size, kwargs)`` for that image and its
  ``place`` into a prompt of text tokens around the image's marker (the folder's
  tokenizer's ids of a sentence before and after it): everything the family adds
  per image. Pixtral (Mistral's format) has no marker: mistral_common
  writes the tokens, from the size the bytes open at (the identifier's decode reads it),
  and vLLM's processor finds them again; its row times both expansions and the search
  in that prompt holding the image's tokens.

Issue 24's target: expansion at most 0.1 x identifier.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from report_sections import read_section, write_section  # noqa: E402
from timing import interleaved, png  # noqa: E402

from prefixkey.multimodal import MMHasher  # noqa: E402
from prefixkey.render import Renderer, ServerOptions  # noqa: E402
from prefixkey.render._vision import ImageSize, VisionFamily  # noqa: E402

OUT = ROOT / "benchmarks" / "MM_CHAT.md"
SECTION, SCRIPT = "vision-expansion", "bench_vision.py"
SIZES = ((64, 48), (640, 480), (1920, 1080))
#: (family label, folder: committed path or a real folder's name)
FAMILIES = (
    ("BLIP-2", str(ROOT / "tests" / "multimodal" / "models" / "blip2_tiny")),
    ("Qwen2-VL", "real:qwen2_vl"),
    ("Qwen2.5-VL", "real:qwen2_5_vl"),
    ("Qwen3-VL", "real:qwen3_vl"),
    ("Gemma 3", "real:gemma3_vl"),
    ("Gemma 3, pan-and-scan", "real:gemma3_vl"),
    ("Gemma 3, newline before the image", "real:gemma3_vl"),
    ("LLaVA-1.5", "real:llava15"),
    ("LLaVA-NeXT", "real:llava_next"),
    ("LLaVA-OneVision", "real:llava_onevision"),
    ("InternVL3", "real:internvl3"),
    ("Llama 4", "real:llama4"),
    ("Pixtral", "real:pixtral12b"),
)
#: The server options a row's folder needs (others: none).
OPTIONS: dict[str, dict[str, Any]] = {"Pixtral": {"tokenizer_mode": "mistral"}}
#: The processor kwargs a row measures with (others: none).
KWARGS: dict[str, dict[str, Any]] = {"Gemma 3, pan-and-scan": {"do_pan_and_scan": True}}
#: The text around the marker (others: TEXT): a newline before Gemma 3's image merges with
#: its leading "\n\n", which takes the placement's full newline passes.
TEXT = ("Please describe this picture in detail.", " What stands out the most?")
PROMPTS: dict[str, tuple[str, str]] = {
    "Gemma 3, newline before the image": ("Please describe this picture:\n", TEXT[1])}


def _folder(spec: str) -> str | None:
    if not spec.startswith("real:"):
        return spec
    import real_models

    try:
        return str(real_models.folder(spec.removeprefix("real:")))
    except Exception as exc:  # no cache: the row says so
        print(f"skipping {spec}: {exc}", file=sys.stderr)
        return None


def _family(renderer: Renderer) -> VisionFamily:
    # The Renderer's image path builds the family once (the mistral path has its own).
    images = renderer._images if renderer._mistral is None else renderer._mistral._images
    assert images is not None and images._family is not None
    return images._family


def _load(averages: tuple[float, float, float]) -> str:
    return ", ".join(f"{a:.2f}" for a in averages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", action="append", metavar="FAMILY",
                        help="measure only this family (repeatable): its rows replace or join "
                        "those of the section; the other rows and the prose are kept")
    args = parser.parse_args()
    rounds, n = (3, 20) if args.quick else (9, 40)
    load_before = os.getloadavg()
    rows = []
    for label, spec in FAMILIES:
        if args.only and label not in args.only:
            continue
        folder = _folder(spec)
        if folder is None:
            rows.append(f"| {label} | (not measured: the real-model cache is missing) "
                        "| | | |")
            continue
        renderer = Renderer(ServerOptions(model=folder, **OPTIONS.get(label, {})), folder)
        family = _family(renderer)
        hasher = MMHasher(model=folder, vllm_version="0.31.0")
        before, after = PROMPTS.get(label, TEXT)
        head, tail = family.folder.encode(before), family.folder.encode(after)
        prompt = head + list(family.marker) + tail
        for w, h in SIZES:
            data = png(w, h)
            size = ImageSize(w, h)

            def identifier(data: bytes = data, hasher: MMHasher = hasher) -> None:
                hasher.loaded_image(data)

            kwargs = KWARGS.get(label, {})

            def expansion(size: ImageSize = size, family: VisionFamily = family,
                          prompt: list[int] = prompt, kwargs: dict[str, Any] = kwargs) -> None:
                family.place(prompt, [family.expansion(size, kwargs)])

            written = [*head, *family.expansion(size, kwargs), *tail]

            def written_by_mistral(size: ImageSize = size, family: VisionFamily = family,
                                   prompt: list[int] = written,
                                   kwargs: dict[str, Any] = kwargs) -> None:
                family.expansion(size, kwargs)  # mistral_common's, from the opened size
                family.place(prompt, [family.expansion(size, kwargs)])

            # Pixtral has no marker: the prompt holds the tokens mistral_common wrote.
            measured = expansion if family.marker else written_by_mistral
            times = interleaved({"id": identifier, "ex": measured}, rounds, n)
            tokens = len(family.expansion(size, kwargs))
            rows.append(f"| {label} | PNG RGB {w}x{h} ({len(data)} B) | {tokens} | "
                        f"{times['id'] * 1e6:.0f} µs | {times['ex'] * 1e6:.1f} µs | "
                        f"{times['ex'] / times['id']:.3f} |")
    body = "\n".join([
        "## Placeholder expansion per image vs its identifier",
        "",
        f"Python {platform.python_version()}, {platform.machine()}; best of {rounds} rounds "
        f"x {n} calls, interleaved twice; a shared 2-core machine: noisy (load average "
        f"{_load(load_before)} at the start, {_load(os.getloadavg())} at the end). Target "
        "(issue 24): expansion ≤ 0.1 x identifier.",
        "",
        "| family | image | image tokens | identifier (decode + digest) | expansion + "
        "placement | ratio |",
        "|---|---|---|---|---|---|",
        *rows,
    ])
    if args.only:
        body = _merged(rows, rounds, n)
    print(body)
    if not args.quick:
        write_section(OUT, SECTION, SCRIPT, body)


def _merged(rows: list[str], rounds: int, n: int) -> str:
    """The section with the measured families' rows put in place of theirs. What is not
    generated (the prose under the table) is kept; a note under it says which families
    were measured alone, replacing the note of an earlier run of the same ``--only``."""
    lines = read_section(OUT, SECTION, SCRIPT).splitlines()
    first = next((i for i, line in enumerate(lines) if line.startswith("|")), None)
    if first is None:
        sys.exit(f"--only re-measures rows of the table in {OUT.name}, which has none: "
                 "run python benchmarks/bench_vision.py without --only first")
    last = next((i for i in range(first, len(lines)) if not lines[i].startswith("|")),
                len(lines))
    head, header, old_rows = lines[:first], lines[first:first + 2], lines[first + 2:last]
    measured = {row.split(" | ")[0] for row in rows}
    kept = [row for row in old_rows if row.split(" | ")[0] not in measured]
    order = {f"| {label}": i for i, (label, _) in enumerate(FAMILIES)}
    table = sorted([*kept, *rows], key=lambda row: order.get(row.split(" | ")[0], len(order)))
    alone = f"Re-measured alone: {', '.join(m.removeprefix('| ') for m in sorted(measured))} ("
    note = (f"{alone}best of {rounds} rounds x {n} calls, load average "
            f"{os.getloadavg()[0]:.1f} on 2 cores).")
    prose = [p for p in "\n".join(lines[last:]).strip().split("\n\n")
             if p and not p.startswith(alone)]
    return "\n\n".join(["\n".join([*head, *header, *table]), *prose, note])


if __name__ == "__main__":
    main()
