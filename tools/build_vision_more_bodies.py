"""Build the image chat corpora of Gemma 3 and the LLaVA family: ``tests/render/vision_<family>_bodies.jsonl``.

Maintainer tool. Every body names a real folder (``"model_dir": "real:<name>"``:
tests/render/real/<name>/, config and processor files with the real model's values,
the tokenizer fetched by tests/real_models.py) and the render server's flags. An
image URL is written ``{"fixture": NAME, "as": "data"|"file"}`` (the harvest and the
replay build the URL again, so the files stay small and the paths portable); NAME is
a file of ``tests/render/vision_more/images/`` (made by its ``make_images.py``) or, as
``mm/<file>``, of ``tests/multimodal/images/``. Per family the bodies cover image
sizes from 1×1 to far over the model's native size, odd aspect ratios, EXIF
rotation, several images, images between text parts, multi-turn conversations,
'string' content format, uuids, every processor kwarg that changes the count, at
server level (``--mm-processor-kwargs``) and per request (under
``--trust-request-mm-kwargs``, and vLLM's 400 without it), ``--limit-mm-per-prompt``
and unloadable images.

Usage::

    python tools/build_vision_more_bodies.py            # every family
    python tools/harvest_render.py --bodies tests/render/vision_gemma3_bodies.jsonl \\
        --out tests/render/vision_gemma3_vectors.jsonl --port 18650 \\
        --vllm-python /work/venvs/vllm031v/bin/python
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

RENDER_DIR = Path(__file__).resolve().parent.parent / "tests" / "render"
CHAT = "/v1/chat/completions"
MAX_MODEL_LEN = 8192

Body = dict[str, Any]


def image(name: str, kind: str = "data", **extra: Any) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"fixture": name, "as": kind}, **extra}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(parts)}


#: Sizes every family sees: (case name, fixture).
SIZES: tuple[tuple[str, str], ...] = (
    ("tiny-1x1", "mm/tiny.png"),
    ("small-16x12", "mm/rgb.png"),
    ("sq-336", "sq_336.png"),
    ("sq-448", "sq_448.png"),
    ("sq-896", "sq_896.png"),
    ("large-1024x768", "mm/large.png"),
    ("odd-337x211", "odd_337x211.png"),
    ("odd-1023x767", "odd_1023x767.png"),
    ("wide-1200x400", "wide_1200x400.png"),
    ("land-900x600", "land_900x600.png"),
    ("near-1000x900", "near_1000x900.png"),
    ("short-500x200", "short_500x200.png"),
    ("tall-300x1000", "tall_300x1000.png"),
    ("portrait-720x1280", "portrait_720x1280.png"),
    ("pin-672x336", "pin_672x336.png"),
    ("pin-336x1344", "pin_336x1344.png"),
    ("big-2048x1536", "big_2048x1536.png"),
    ("huge-4000x1000", "huge_4000x1000.png"),
    ("exif-rotated-1200x400", "exif6_1200x400.jpg"),
    ("exif-rotated-small", "mm/exif_rotated.jpg"),
    ("rgba", "mm/rgba.png"),
)
#: Extreme strips: an image processor that resizes the short side up makes them huge
#: (LLaVA's CLIP processor: 1×500 becomes 336×168000), so only Gemma 3 gets them.
STRIPS: tuple[tuple[str, str], ...] = (
    ("strip-2000x10", "strip_2000x10.png"),
    ("line-1x500", "line_1x500.png"),
)


def common_bodies(name: str) -> list[tuple[str, list[dict[str, Any]], Body]]:
    """(case, messages, other body fields) every family gets."""
    cases: list[tuple[str, list[dict[str, Any]], Body]] = []
    for case, fixture in SIZES:
        cases.append((f"size-{case}", [user(text("What is in this picture?"),
                                           image(fixture))], {}))
    cases += [
        ("image-first", [user(image("land_900x600.png"), text("Describe it."))], {}),
        ("image-only", [user(image("sq_448.png"))], {}),
        ("two-images", [user(image("wide_1200x400.png"), image("tall_300x1000.png"),
                             text("Compare the two."))], {}),
        ("images-between-text", [user(text("First:"), image("mm/rgb.png"), text("then:"),
                                      image("odd_337x211.png"), text("and last:"),
                                      image("mm/large.png"), text("Which is largest?"))],
         {}),
        ("same-image-twice", [user(image("land_900x600.png"), text("and again"),
                                   image("land_900x600.png"))], {}),
        ("multi-turn", [user(image("wide_1200x400.png"), text("What colour is it?")),
                        {"role": "assistant", "content": "It is a flat colour."},
                        user(text("And this one?"), image("portrait_720x1280.png"))], {}),
        ("system-and-image", [{"role": "system", "content": "Answer in French."},
                              user(text("Caption:"), image("sq_336.png"))], {}),
        ("uuid", [user(text("again"), image("land_900x600.png", uuid="img-7"))], {}),
        ("file-url", [user(text("from disk"), image("wide_1200x400.png", "file"))], {}),
        ("no-generation-prompt", [user(image("sq_336.png"), text("x"))],
         {"add_generation_prompt": False}),
        ("newlines-around-image", [user(text("Look:\n"), image("sq_336.png"),
                                        text("\nWhat is it?\n\n"))], {}),
        ("undecodable", [user(text("broken"), image("mm/undecodable.png"))], {}),
        ("truncated", [user(text("broken"), image("mm/truncated.png"))], {}),
        ("per-request-kwargs-refused", [user(text("x"), image("wide_1200x400.png"))],
         {"mm_processor_kwargs": {"do_pan_and_scan": True}}),
    ]
    return cases


def gemma3_kwarg_bodies() -> list[tuple[str, list[dict[str, Any]], Body]]:
    """Per-request pan-and-scan kwargs (the server trusts them)."""
    pas = {"do_pan_and_scan": True}
    cases: list[tuple[str, list[dict[str, Any]], Body]] = []
    for case, fixture in SIZES + STRIPS:
        cases.append((f"pas-{case}", [user(text("Look closely."), image(fixture))],
                      {"mm_processor_kwargs": pas}))
    cases += [
        ("pas-two-images", [user(image("wide_1200x400.png"), text("and"),
                                 image("huge_4000x1000.png"), text("compare"))],
         {"mm_processor_kwargs": pas}),
        ("pas-newlines", [user(text("Look:\n\n"), image("wide_1200x400.png"),
                               text("\n\nWhat?"))], {"mm_processor_kwargs": pas}),
        ("pas-max-crops-2", [user(image("huge_4000x1000.png"), text("x"))],
         {"mm_processor_kwargs": {**pas, "pan_and_scan_max_num_crops": 2}}),
        ("pas-max-crops-8", [user(image("huge_4000x1000.png"), text("x"))],
         {"mm_processor_kwargs": {**pas, "pan_and_scan_max_num_crops": 8}}),
        ("pas-min-crop-100", [user(image("short_500x200.png"), text("x"))],
         {"mm_processor_kwargs": {**pas, "pan_and_scan_min_crop_size": 100}}),
        ("pas-min-ratio-1.05", [user(image("near_1000x900.png"), text("x"))],
         {"mm_processor_kwargs": {**pas, "pan_and_scan_min_ratio_to_activate": 1.05}}),
        ("pas-off", [user(image("wide_1200x400.png"), text("x"))],
         {"mm_processor_kwargs": {"do_pan_and_scan": False}}),
        ("pas-nested-images-kwargs", [user(image("wide_1200x400.png"), text("x"))],
         {"mm_processor_kwargs": {"images_kwargs": {"do_pan_and_scan": True}}}),
        ("pas-unknown-kwarg", [user(image("wide_1200x400.png"), text("x"))],
         {"mm_processor_kwargs": {"not_a_kwarg": 3}}),
        ("pas-bad-type", [user(image("wide_1200x400.png"), text("x"))],
         {"mm_processor_kwargs": {"do_pan_and_scan": "yes"}}),
    ]
    for case, fixture in SIZES[:1] + SIZES[7:9]:
        cases.append((f"no-kwargs-{case}", [user(image(fixture), text("x"))], {}))
    return cases


def lines_for(family: str, folder: str, served: str, server: dict[str, Any],
              cases: list[tuple[str, list[dict[str, Any]], Body]], tag: str) -> list[Body]:
    out = []
    for case, messages, extra in cases:
        out.append({"id": f"{family}/{tag}/{case}", "model_dir": f"real:{folder}",
                    "server": {"--served-model-name": served, "--max-model-len": MAX_MODEL_LEN,
                               "--allowed-local-media-path": "/", **server},
                    "endpoint": CHAT,
                    "body": {"model": served, "messages": messages, **extra}})
    return out


def gemma3() -> list[Body]:
    served = "gemma-3-4b-it"
    lines = lines_for("gemma3", "gemma3_vl", served, {}, common_bodies("gemma3"), "default")
    lines += lines_for("gemma3", "gemma3_vl", served, {"--trust-request-mm-kwargs": True},
                       gemma3_kwarg_bodies(), "trusted")
    lines += lines_for("gemma3", "gemma3_vl", served,
                       {"--mm-processor-kwargs": {"do_pan_and_scan": True}},
                       [(f"server-pas-{case}", [user(text("x"), image(fixture))], {})
                        for case, fixture in SIZES[3:] + STRIPS], "server-pas")
    lines += lines_for("gemma3", "gemma3_vl", served,
                       {"--chat-template-content-format": "string",
                        "--limit-mm-per-prompt": {"image": 2}},
                       [("string-format", [user(text("a"), image("sq_336.png"),
                                                text("b"))], {}),
                        ("limit-two-ok", [user(image("sq_336.png"), image("mm/rgb.png"))],
                         {}),
                        ("limit-three-refused", [user(image("sq_336.png"),
                                                      image("mm/rgb.png"),
                                                      image("mm/large.png"))], {})],
                       "string-limit")
    return lines


def llava(family: str, folder: str, served: str) -> list[Body]:
    lines = lines_for(family, folder, served, {}, common_bodies(family), "default")
    lines += lines_for(family, folder, served,
                       {"--chat-template-content-format": "string",
                        "--limit-mm-per-prompt": {"image": 2}},
                       [("string-format", [user(text("a"), image("sq_336.png"),
                                                text("b"))], {}),
                        ("string-format-two", [user(image("sq_336.png"), text("b"),
                                                    image("wide_1200x400.png"))], {}),
                        ("limit-two-ok", [user(image("sq_336.png"), image("mm/rgb.png"))],
                         {}),
                        ("limit-three-refused", [user(image("sq_336.png"),
                                                      image("mm/rgb.png"),
                                                      image("mm/large.png"))], {})],
                       "string-limit")
    return lines


FAMILIES = {
    "gemma3": gemma3,
    "llava15": lambda: llava("llava15", "llava15", "llava-1.5-7b-hf"),
    "llava_next": lambda: llava("llava_next", "llava_next", "llava-v1.6-vicuna-7b-hf"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("families", nargs="*", default=sorted(FAMILIES))
    args = parser.parse_args(argv)
    for family in args.families:
        out = RENDER_DIR / f"vision_{family}_bodies.jsonl"
        with out.open("w", encoding="utf-8") as fh:
            for line in FAMILIES[family]():
                fh.write(json.dumps(line, sort_keys=True, ensure_ascii=False) + "\n")
        print(f"{out}: {sum(1 for _ in out.open())} bodies")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
