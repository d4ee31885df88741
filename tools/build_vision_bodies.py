"""Write a vision corpus: image chat bodies per family, over real folders and server flags.

Maintainer tool. ``python tools/build_vision_bodies.py qwen`` writes
``tests/vision/qwen_bodies.jsonl`` (Qwen2-VL, Qwen2.5-VL and Qwen3-VL over
tests/render/real/qwen2_vl, qwen2_5_vl and qwen3_vl), deterministically; ``qwen3_vl_moe``
and ``llama4`` write theirs (tests/render/real/qwen3_vl_moe, llama4). A line is
harvest_render's (``id``, ``model_dir``, ``endpoint``, ``body``, ``server``); images
are specs (tests/vision/images.py), and ``"{images}"`` in the flags is the directory
file:// images are written to. tools/harvest_vision.py records vLLM's answers and
tests/vision/test_vision_vectors.py replays them.

Each family's corpus is a function in :data:`CORPORA`; the generic cases (sizes, aspect
ratios, EXIF orientations, several images, images between texts, uuids, file URLs,
unloadable images, the item limit, request kwargs with and without trust, 'string'
content format) are shared, and a family adds its own.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "tests" / "vision"
CHAT = "/v1/chat/completions"

Body = dict[str, Any]
Case = tuple[str, Body]


def image(w: int, h: int, *, mode: str = "RGB", seed: int = 0, exif: int | None = None,
          kind: str = "data", **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"w": w, "h": h}
    if mode != "RGB":
        spec["mode"] = mode
    if seed:
        spec["seed"] = seed
    if exif is not None:
        spec["exif"] = exif
    return {"type": "image_url", "image_url": {"gen": spec, "as": kind}, **extra}


def raw_image(raw: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"gen": {"raw": raw}, "as": "data"}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def user(*parts: Any) -> list[dict[str, Any]]:
    return [{"role": "user", "content": list(parts)}]


def chat(messages: list[dict[str, Any]], **extra: Any) -> Body:
    return {"messages": messages, **extra}


def generic_cases() -> Iterator[Case]:
    """Cases every image family is asked (default flags, file URLs allowed)."""
    yield "text-then-image", chat(user(text("What is in this picture?"), image(64, 48)))
    yield "image-then-text", chat(user(image(640, 480, seed=1), text("Describe it.")))
    yield "image-only", chat(user(image(200, 150, seed=2)))
    yield "tiny-1x1", chat(user(image(1, 1, mode="L"), text("tiny")))
    yield "small-28", chat(user(image(28, 28), text("a")))
    yield "small-32", chat(user(image(32, 32), text("b")))
    yield "odd-333x777", chat(user(image(333, 777, seed=3), text("odd size")))
    yield "wide-1000x20", chat(user(image(1000, 20), text("wide")))
    yield "tall-20x1000", chat(user(image(20, 1000), text("tall")))
    yield "ratio-200", chat(user(image(2000, 10), text("ratio 200")))
    yield "ratio-201", chat(user(image(2010, 10), text("ratio 201")))
    yield "large-1920x1080", chat(user(image(1920, 1080, mode="1"), text("hd")))
    yield "over-max-4000x3600", chat(user(image(4000, 3600, mode="1"), text("big")))
    yield "over-max-5000x4000", chat(user(image(5000, 4000, mode="1", seed=4), text("bigger")))
    for orientation in (3, 5, 6, 7, 8):
        yield f"exif-{orientation}", chat(user(image(300, 100, seed=5, exif=orientation),
                                               text("rotated?")))
    yield "rgba", chat(user(image(120, 90, mode="RGBA"), text("alpha")))
    yield "two-images-between-text", chat(user(
        text("First:"), image(64, 64), text("Second:"), image(128, 96, seed=6),
        text("Which is bigger?")))
    yield "three-images", chat(user(image(50, 50), image(60, 40, seed=7),
                                    image(100, 300, seed=8), text("three")))
    yield "multi-turn", chat([
        {"role": "user", "content": [image(80, 60), text("What colour?")]},
        {"role": "assistant", "content": "Mostly grey."},
        {"role": "user", "content": [text("And this one?"), image(90, 70, seed=9)]}])
    yield "system-and-image", chat([
        {"role": "system", "content": "You are a careful captioner."},
        {"role": "user", "content": [text("caption:"), image(256, 256, seed=10)]}])
    yield "uuid", chat(user(text("again"), image(64, 48, uuid="my-image-7")))
    yield "file-url", chat(user(text("from disk"), image(300, 200, seed=11, kind="file")))
    yield "extra-part-field", chat(user(image(64, 48, detail="high"), text("detail")))
    yield "no-generation-prompt", chat(user(image(64, 48), text("x")),
                                       add_generation_prompt=False)
    yield "undecodable", chat(user(text("broken"), raw_image("garbage")))
    yield "truncated-png", chat(user(text("cut"), raw_image("truncated")))
    yield "request-kwargs-untrusted", chat(user(image(64, 48), text("kw")),
                                           mm_processor_kwargs={"max_pixels": 50176})


def qwen_marker_cases() -> Iterator[Case]:
    """Qwen's marker is one special token: a literal one in the text is matched too."""
    yield "literal-marker-before", chat(user(text("a <|image_pad|> b"), image(64, 48)))
    yield "literal-marker-after", chat(user(image(64, 48), text("a <|image_pad|> b")))
    yield "add-vision-id", chat(user(image(64, 48), image(56, 56, seed=1), text("two")),
                                chat_template_kwargs={"add_vision_id": True})


def limit_cases() -> Iterator[Case]:
    """Under ``--limit-mm-per-prompt {"image": 2}``."""
    yield "two-images", chat(user(image(640, 480), image(64, 48), text("two")))
    yield "three-images-over-limit", chat(user(image(64, 48), image(64, 48, seed=1),
                                               image(64, 48, seed=2), text("three")))


def string_format_cases() -> Iterator[Case]:
    """'string' content format, with a server min/max_pixels pair."""
    yield "text-then-image", chat(user(text("What is this?"), image(640, 480)))
    yield "image-only", chat(user(image(640, 480, seed=1)))
    yield "two-images-between-text", chat(user(text("A:"), image(64, 64), text("B:"),
                                               image(1000, 700, seed=2), text("compare")))
    yield "tiny", chat(user(image(1, 1, mode="L"), text("tiny")))
    yield "large", chat(user(image(4000, 3600, mode="1"), text("big")))
    yield "placeholder-in-text", chat(user(
        text("look: <|vision_start|><|image_pad|><|vision_end|> here"), image(64, 48)))
    yield "more-placeholders-than-images", chat(user(
        text("<|vision_start|><|image_pad|><|vision_end|> and "
             "<|vision_start|><|image_pad|><|vision_end|>"), image(64, 48)))


def trusted_kwargs_cases() -> Iterator[Case]:
    """``--trust-request-mm-kwargs`` with a server ``max_pixels`` alone: the body's own
    processor kwargs, merged over the server's (the body's win). (A body ``min_pixels``
    above the server's ``max_pixels`` is left out: vLLM 0.31's render server did not
    answer it within 5 minutes.)"""
    base = user(image(640, 480, seed=1), text("kw"))
    yield "server-max-pixels-alone", chat(base)
    yield "max-pixels-alone", chat(base, mm_processor_kwargs={"max_pixels": 100352})
    yield "min-pixels-alone", chat(base, mm_processor_kwargs={"min_pixels": 3136})
    yield "min-max-pair", chat(base, mm_processor_kwargs={"min_pixels": 3136,
                                                          "max_pixels": 100352})
    yield "min-max-pair-up", chat(base, mm_processor_kwargs={"min_pixels": 1003520,
                                                             "max_pixels": 2007040})
    yield "size-both", chat(base, mm_processor_kwargs={
        "size": {"shortest_edge": 3136, "longest_edge": 100352}})
    yield "size-longest", chat(base, mm_processor_kwargs={"size": {"longest_edge": 100352}})
    yield "pair-two-images", chat(user(image(640, 480), image(2000, 1000, mode="1"),
                                       text("two")),
                                  mm_processor_kwargs={"min_pixels": 3136,
                                                       "max_pixels": 200704})
    yield "pair-and-uuid", chat(user(image(640, 480, uuid="u-1"), text("uuid")),
                                mm_processor_kwargs={"min_pixels": 3136,
                                                     "max_pixels": 100352})
    yield "uuid-no-kwargs", chat(user(image(640, 480, uuid="u-1"), text("uuid")))


def _qwen() -> Iterator[tuple[str, str, dict[str, Any], Case]]:
    folders = (("qwen2_vl", "qwen2-vl"), ("qwen2_5_vl", "qwen2.5-vl"), ("qwen3_vl", "qwen3-vl"))
    for folder, name in folders:
        default = {"--served-model-name": name, "--allowed-local-media-path": "{images}"}
        for case in (*generic_cases(), *qwen_marker_cases()):
            yield folder, "default", default, case
        string = {"--served-model-name": name, "--chat-template-content-format": "string",
                  "--mm-processor-kwargs": {"min_pixels": 100352, "max_pixels": 401408}}
        for case in string_format_cases():
            yield folder, "string-pair", string, case
        trusted = {"--served-model-name": name, "--trust-request-mm-kwargs": True,
                   "--limit-mm-per-prompt": {"image": 2},
                   "--mm-processor-kwargs": {"max_pixels": 50176}}
        for case in (*trusted_kwargs_cases(), *limit_cases()):
            yield folder, "trusted-limit2", trusted, case


def _qwen3_vl_moe() -> Iterator[tuple[str, str, dict[str, Any], Case]]:
    """Qwen3-VL MoE (tests/render/real/qwen3_vl_moe): Qwen3-VL's processor under the MoE
    config, asked the generic and marker cases and the trusted kwargs under a limit."""
    name = "qwen3-vl-moe"
    default = {"--served-model-name": name, "--allowed-local-media-path": "{images}"}
    for case in (*generic_cases(), *qwen_marker_cases()):
        yield "qwen3_vl_moe", "default", default, case
    trusted = {"--served-model-name": name, "--trust-request-mm-kwargs": True,
               "--limit-mm-per-prompt": {"image": 2},
               "--mm-processor-kwargs": {"max_pixels": 50176}}
    for case in (*trusted_kwargs_cases(), *limit_cases()):
        yield "qwen3_vl_moe", "trusted-limit2", trusted, case


#: Llama 4's canvases (336 px tiles, up to 16): on and beside them, and aspect ratios
#: up to 16:1 and past it.
LLAMA4_SIZES: tuple[tuple[int, int, str], ...] = (
    (336, 336, "RGB"), (337, 336, "RGB"), (335, 335, "L"), (672, 336, "RGB"),
    (336, 672, "L"), (1344, 1344, "1"), (1345, 1344, "1"), (336, 5376, "L"),
    (5376, 336, "1"), (100, 3000, "L"), (3000, 100, "L"), (700, 500, "RGB"),
    (2000, 1500, "1"), (1000, 1000, "L"), (14, 14, "RGB"), (1008, 1009, "L"),
)


def _llama4() -> Iterator[tuple[str, str, dict[str, Any], Case]]:
    """Llama 4 (tests/render/real/llama4): the generic cases, sizes around its canvases,
    the literal marker, several images under a limit, and 'string' content format."""
    name = "llama4"
    default = {"--served-model-name": name, "--allowed-local-media-path": "{images}"}
    sized = ((f"size-{w}x{h}", chat(user(text("Look."), image(w, h, mode=mode, seed=i))))
             for i, (w, h, mode) in enumerate(LLAMA4_SIZES))
    marker = (("literal-marker-before", chat(user(text("a <|image|> b"), image(64, 48)))),
              ("literal-marker-after", chat(user(image(64, 48), text("a <|image|> b")))))
    for case in (*generic_cases(), *sized, *marker):
        yield "llama4", "default", default, case
    limited = {"--served-model-name": name, "--limit-mm-per-prompt": {"image": 2},
               "--chat-template-content-format": "string"}
    for case in (*limit_cases(), ("string-text-then-image", chat(user(
            text("What is this?"), image(640, 480)))), ("string-two-images-between-text",
            chat(user(text("A:"), image(64, 64), text("B:"), image(1000, 700, seed=2),
                      text("compare")))), ("string-placeholder-in-text", chat(user(
                          text("look: <|image|> here"), image(64, 48))))):
        yield "llama4", "string-limit2", limited, case


#: Family corpus name → its (folder, server label, flags, case) items.
CORPORA: dict[str, Callable[[], Iterator[tuple[str, str, dict[str, Any], Case]]]] = {
    "qwen": _qwen,
    "qwen3_vl_moe": _qwen3_vl_moe,
    "llama4": _llama4,
}


def build(corpus: str) -> Path:
    return write_bodies(corpus, CORPORA[corpus]())


def write_bodies(corpus: str, items: Iterable[tuple[str, str, dict[str, Any], Case]]) -> Path:
    """Write ``tests/vision/<corpus>_bodies.jsonl``: one harvest line per (folder, server
    label, server flags, case); ids must be unique (tools/build_vision_more_bodies.py too)."""
    out = OUT_DIR / f"{corpus}_bodies.jsonl"
    lines = []
    for folder, label, server, (name, body) in items:
        served = server["--served-model-name"]
        lines.append({"id": f"{folder}-{label}-{name}", "model_dir": f"real:{folder}",
                      "endpoint": CHAT, "body": {"model": served, **body},
                      "server": server})
    ids = [line["id"] for line in lines]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    out.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", choices=sorted(CORPORA))
    out = build(parser.parse_args().corpus)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
