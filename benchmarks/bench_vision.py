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
  ``place`` into a 40-token prompt holding the image's marker: everything the
  family adds per image. Pixtral (Mistral's format) has no marker: mistral_common
  writes the tokens, from the size the bytes open at (the identifier's decode reads it),
  and vLLM's processor finds them again; its row times both expansions and the search
  in a 40-token prompt holding the image's tokens.

Issue 24's target: expansion at most 0.1 x identifier.
"""

from __future__ import annotations

import argparse
import io
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from report_sections import write_section  # noqa: E402

from prefixkey.multimodal import MMHasher  # noqa: E402
from prefixkey.render import Renderer, ServerOptions  # noqa: E402
from prefixkey.render._vision import ImageSize, VisionFamily  # noqa: E402

OUT = ROOT / "benchmarks" / "MM_CHAT.md"
SIZES = ((64, 48), (640, 480), (1920, 1080))
#: (family label, folder: committed path or a real folder's name)
FAMILIES = (
    ("BLIP-2", str(ROOT / "tests" / "multimodal" / "models" / "blip2_tiny")),
    ("Qwen2-VL", "real:qwen2_vl"),
    ("Qwen2.5-VL", "real:qwen2_5_vl"),
    ("Qwen3-VL", "real:qwen3_vl"),
    ("Gemma 3", "real:gemma3_vl"),
    ("Gemma 3, pan-and-scan", "real:gemma3_vl"),
    ("LLaVA-1.5", "real:llava15"),
    ("LLaVA-NeXT", "real:llava_next"),
    ("LLaVA-OneVision", "real:llava_onevision"),
    ("InternVL3", "real:internvl3"),
    ("Pixtral", "real:pixtral12b"),
)
#: The server options a row's folder needs (others: none).
OPTIONS: dict[str, dict[str, Any]] = {"Pixtral": {"tokenizer_mode": "mistral"}}
#: The processor kwargs a row measures with (others: none).
KWARGS: dict[str, dict[str, Any]] = {"Gemma 3, pan-and-scan": {"do_pan_and_scan": True}}


def _png(w: int, h: int) -> bytes:
    grad = Image.linear_gradient("L").resize((w, h))
    buf = io.BytesIO()
    Image.merge("RGB", (grad, grad.transpose(Image.Transpose.FLIP_LEFT_RIGHT), grad)).save(
        buf, "PNG")
    return buf.getvalue()


def _best(fn: Callable[[], Any], rounds: int, n: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - start) / n)
    return best


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", action="append", metavar="FAMILY",
                        help="measure only this family (repeatable): its rows replace or join "
                        "those of the section, the others are kept")
    args = parser.parse_args()
    rounds, n = (3, 20) if args.quick else (9, 40)
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
        prompt = [100 + i for i in range(20)] + list(family.marker) + [
            200 + i for i in range(20)]
        for w, h in SIZES:
            data = _png(w, h)
            size = ImageSize(w, h)

            def identifier(data: bytes = data, hasher: MMHasher = hasher) -> None:
                hasher.loaded_image(data)

            kwargs = KWARGS.get(label, {})

            def expansion(size: ImageSize = size, family: VisionFamily = family,
                          prompt: list[int] = prompt, kwargs: dict[str, Any] = kwargs) -> None:
                family.place(prompt, [family.expansion(size, kwargs)])

            written = [*prompt[:20], *family.expansion(size, kwargs), *prompt[20:]]

            def written_by_mistral(size: ImageSize = size, family: VisionFamily = family,
                                   prompt: list[int] = written,
                                   kwargs: dict[str, Any] = kwargs) -> None:
                family.expansion(size, kwargs)  # mistral_common's, from the opened size
                family.place(prompt, [family.expansion(size, kwargs)])

            # Pixtral has no marker: the prompt holds the tokens mistral_common wrote.
            measured = expansion if family.marker else written_by_mistral

            times: dict[str, float] = {}
            for _ in range(2):  # interleaved: the machine is shared
                times["id"] = min(times.get("id", 1e9), _best(identifier, rounds, n))
                times["ex"] = min(times.get("ex", 1e9), _best(measured, rounds, n))
            tokens = len(family.expansion(size, kwargs))
            rows.append(f"| {label} | PNG RGB {w}x{h} ({len(data)} B) | {tokens} | "
                        f"{times['id'] * 1e6:.0f} µs | {times['ex'] * 1e6:.1f} µs | "
                        f"{times['ex'] / times['id']:.3f} |")
    body = "\n".join([
        "## Placeholder expansion per image vs its identifier",
        "",
        f"Python {platform.python_version()}, {platform.machine()}; best of {rounds} rounds "
        f"x {n} calls, interleaved twice; a shared 2-core machine: noisy. Target "
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
        write_section(OUT, "vision-expansion", "bench_vision.py", body)


def _merged(rows: list[str], rounds: int, n: int) -> str:
    """The section with the measured families' rows put in place of theirs (a family
    measured alone says so under the table)."""
    import os

    text = OUT.read_text("utf-8")
    begin = "<!-- section: vision-expansion (generated by benchmarks/bench_vision.py) -->"
    old = text.split(begin, 1)[1].split("<!-- end section: vision-expansion -->", 1)[0]
    lines = old.strip().splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("|"))
    head, header = lines[:first], lines[first:first + 2]
    measured = {row.split(" | ")[0] for row in rows}
    table = [line for line in lines[first + 2:] if line.startswith("| ")
             and line.split(" | ")[0] not in measured]
    order = {f"| {label}": i for i, (label, _) in enumerate(FAMILIES)}
    table = sorted([*table, *rows], key=lambda row: order.get(row.split(" | ")[0], len(order)))
    note = (f"Re-measured alone: {', '.join(m.removeprefix('| ') for m in sorted(measured))} "
            f"(best of {rounds} rounds x {n} calls, load average "
            f"{os.getloadavg()[0]:.1f} on 2 cores).")
    return "\n".join([*head, *header, *table, "", note])


if __name__ == "__main__":
    main()
