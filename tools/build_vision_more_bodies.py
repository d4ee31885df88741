"""Write the vision corpora of Gemma 3, the LLaVA family and InternVL (tests/vision/).

Maintainer tool, beside tools/build_vision_bodies.py (whose line format, image specs
and generic cases it reuses): ``python tools/build_vision_more_bodies.py [CORPUS...]``
writes ``tests/vision/<corpus>_bodies.jsonl``; tools/harvest_vision.py records vLLM's
answers and tests/vision/test_vision_vectors.py replays them (a corpus written again
after the generic cases changed must be harvested again). An unknown processor kwarg
is not asked: vLLM ignores it, prefixkey refuses kwargs it does not reproduce. The folders
(tests/render/real/<name>, weightless: config, processor configs, template, and a
tokenizer fetched by tests/real_models.py):

- ``gemma3``: gemma3_vl, google/gemma-3-4b-it's config.json, preprocessor_config.json
  and processor_config.json; the @lenml gemma3 tokenizer (Gemma 3's, image tokens
  included).
- ``llava``: llava15 (llava-hf/llava-1.5-7b-hf's config and processor files, its
  chat_template.json as chat_template.jinja) and llava_next (llava-hf/llava-v1.6-
  vicuna-7b-hf: the vision side and pinpoints of llava-v1.6-mistral-7b-hf's config with
  LLaVA-1.5's vicuna text config, the same template); both on the @lenml llama2
  package's tokenizer (its vocabulary is Mistral 7B's, not Llama 2's) with LLaVA's
  ``<image>`` 32000 and ``<pad>`` 32001 declared in tokenizer_config.json, as the
  llava-hf repos do.
- ``llava_onevision``: llava-hf/llava-onevision-qwen2-0.5b-ov-hf as transformers'
  conversion script builds it (LlavaOnevisionConfig's defaults, SigLIP 384/14, the
  processor's template); Qwen2's tokenizer (@lenml qwen3's base vocabulary) with
  ``<image>`` 151646 and ``<video>`` 151647 added, as that script adds them.
- ``internvl``: OpenGVLab/InternVL3-1B-hf as transformers' conversion script builds it
  (InternVLConfig, GotOcr2ImageProcessorFast 448 px, max_patches 12, its template);
  Qwen2.5's added tokens then ``<img>`` 151665 … ``</box>`` 151673 and ``<video>``.
- ``pixtral``: pixtral12b, Mistral's format (``--tokenizer-mode mistral
  --config-format mistral --load-format mistral``): Pixtral-12B-2409's published
  params.json (written from its values) and tekken.json (the mistral_common wheel's
  tekken_240911.json, whose image config is Pixtral's: 16 px patches, 1024 px).
  And mistral_small31: Mistral-Small-3.1-24B-Instruct-2503's published params.json,
  and tekken_240911.json with that model's published image config (14 px patches merged
  2x2, 1540 px) in place of Pixtral's: its own tokenizer file is not a fetched source,
  and only the image config decides the grid (MistralCommonImageProcessor).

Besides the generic cases (sizes from 1x1 to 5000x4000, aspect ratios up to 201,
EXIF orientations, several images, images between texts, uuids, file URLs, unloadable
images, request kwargs without trust), Gemma 3 gets pan-and-scan: sizes on both sides
of its thresholds, per request (``--trust-request-mm-kwargs``) with every kwarg that
changes the crop count, at server level (``--mm-processor-kwargs``), and texts whose
newlines merge with the image's; LLaVA gets the any-resolution grid's pinpoints and
sizes between them. Both get a literal marker in the text, 'string' content format
and ``--limit-mm-per-prompt``. Pixtral gets sizes around its 16 px grid and its
1024 px scaling (round half to even), EXIF orientations that keep or change the grid,
images in system and assistant messages, and ``--limit-mm-per-prompt``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from build_vision_bodies import (
    Case,
    chat,
    generic_cases,
    image,
    limit_cases,
    text,
    user,
    write_bodies,
)

Item = tuple[str, str, dict[str, Any], Case]

#: Sizes around Gemma 3's pan-and-scan thresholds (min crop 256, ratio 1.2, max 4 crops)
#: and LLaVA-NeXT's pinpoints (336x672, 672x336, 672x672, 1008x336, 336x1008).
SIZES: tuple[tuple[int, int, str], ...] = (
    (896, 896, "L"), (336, 336, "RGB"), (1200, 400, "L"), (900, 600, "L"),
    (1000, 900, "L"), (500, 200, "RGB"), (300, 1000, "L"), (720, 1280, "1"),
    (4000, 1000, "1"), (672, 336, "RGB"), (336, 1344, "L"), (337, 211, "RGB"),
    (1023, 767, "1"), (2048, 1536, "1"), (600, 500, "L"), (512, 1024, "L"),
)


def sized_cases(prefix: str, **extra: Any) -> Iterator[Case]:
    for i, (w, h, mode) in enumerate(SIZES):
        yield f"{prefix}{w}x{h}", chat(user(text("Look."), image(w, h, mode=mode, seed=i)),
                                       **extra)


def marker_cases(marker: str) -> Iterator[Case]:
    yield "literal-marker-before", chat(user(text(f"a {marker} b"), image(64, 48)))
    yield "literal-marker-after", chat(user(image(64, 48), text(f"a {marker} b")))


def string_cases(marker: str) -> Iterator[Case]:
    yield "string-text-then-image", chat(user(text("What is this?"), image(640, 480)))
    yield "string-two-images-between-text", chat(user(
        text("A:"), image(64, 64), text("B:"), image(1000, 700, mode="L", seed=2),
        text("compare")))
    yield "string-placeholder-in-text", chat(user(text(f"look: {marker} here"),
                                                  image(64, 48)))
    yield "string-two-images", chat(user(image(640, 480), image(64, 48), text("two")))
    yield "string-three-images-over-limit", chat(user(image(64, 48), image(64, 48, seed=1),
                                                      image(64, 48, seed=2), text("three")))


def gemma3_pas_cases() -> Iterator[Case]:
    """``--trust-request-mm-kwargs``: pan-and-scan asked for by the body."""
    pas = {"do_pan_and_scan": True}
    yield from sized_cases("pas-", mm_processor_kwargs=pas)
    yield "pas-tiny", chat(user(image(1, 1, mode="L"), text("t")), mm_processor_kwargs=pas)
    yield "pas-strip-2000x10", chat(user(image(2000, 10), text("s")), mm_processor_kwargs=pas)
    yield "pas-exif-6", chat(user(image(1200, 400, mode="L", exif=6), text("r")),
                             mm_processor_kwargs=pas)
    yield "pas-exif-3", chat(user(image(1200, 400, mode="L", exif=3), text("r")),
                             mm_processor_kwargs=pas)
    yield "pas-two-images", chat(user(image(1200, 400, mode="L"), text("and"),
                                      image(4000, 1000, mode="1"), text("compare")),
                                 mm_processor_kwargs=pas)
    yield "pas-newlines-around", chat(user(text("Look:\n"), image(1200, 400, mode="L"),
                                           text("\nWhat?\n\n")), mm_processor_kwargs=pas)
    big = user(image(4000, 1000, mode="1"), text("x"))
    yield "pas-max-crops-2", chat(big, mm_processor_kwargs={**pas,
                                                            "pan_and_scan_max_num_crops": 2})
    yield "pas-max-crops-8", chat(big, mm_processor_kwargs={**pas,
                                                            "pan_and_scan_max_num_crops": 8})
    yield "pas-min-crop-100", chat(user(image(500, 200), text("x")), mm_processor_kwargs={
        **pas, "pan_and_scan_min_crop_size": 100})
    yield "pas-min-ratio-1.05", chat(user(image(1000, 900, mode="L"), text("x")),
                                     mm_processor_kwargs={
                                         **pas, "pan_and_scan_min_ratio_to_activate": 1.05})
    yield "pas-off", chat(user(image(1200, 400, mode="L"), text("x")),
                          mm_processor_kwargs={"do_pan_and_scan": False})
    yield "pas-images-kwargs", chat(user(image(1200, 400, mode="L"), text("x")),
                                    mm_processor_kwargs={"images_kwargs": pas})
    yield "pas-bad-type", chat(user(image(1200, 400, mode="L"), text("x")),
                               mm_processor_kwargs={"do_pan_and_scan": "yes"})
    yield "no-kwargs", chat(user(image(1200, 400, mode="L"), text("x")))


def gemma3_newline_cases() -> Iterator[Case]:
    """Texts whose newlines meet the ``\\n\\n`` around the image's tokens."""
    yield "newline-before", chat(user(text("Look:\n"), image(64, 48), text("What?")))
    yield "newlines-before", chat(user(text("Look:\n\n"), image(64, 48), text("What?")))
    yield "newline-after", chat(user(image(64, 48), text("\nWhat?")))
    yield "newlines-after", chat(user(image(64, 48), text("\n\nWhat?")))
    yield "newlines-both", chat(user(text("a\n\n\n"), image(64, 48), text("\n\n\nb")))
    yield "two-images-adjacent", chat(user(image(64, 48), image(64, 48, seed=1), text("x")))
    yield "trim", chat(user(text("  spaced  \n"), image(64, 48), text("  \n  end  ")))


def _gemma3() -> Iterator[Item]:
    name = "gemma-3-4b-it"
    default = {"--served-model-name": name, "--allowed-local-media-path": "{images}"}
    for case in (*generic_cases(), *sized_cases("size-"), *marker_cases("<start_of_image>"),
                 *gemma3_newline_cases()):
        yield "gemma3_vl", "default", default, case
    trusted = {"--served-model-name": name, "--trust-request-mm-kwargs": True}
    for case in gemma3_pas_cases():
        yield "gemma3_vl", "trusted", trusted, case
    server_pas = {"--served-model-name": name,
                  "--mm-processor-kwargs": {"do_pan_and_scan": True,
                                            "pan_and_scan_max_num_crops": 3}}
    for case in (*sized_cases("server-pas-"), *gemma3_newline_cases()):
        yield "gemma3_vl", "server-pas", server_pas, case
    string = {"--served-model-name": name, "--chat-template-content-format": "string",
              "--limit-mm-per-prompt": {"image": 2}}
    for case in string_cases("<start_of_image>"):
        yield "gemma3_vl", "string-limit2", string, case


def _llava(folders: tuple[tuple[str, str], ...] = (
        ("llava15", "llava-1.5-7b-hf"), ("llava_next", "llava-v1.6-vicuna-7b-hf"))
           ) -> Iterator[Item]:
    for folder, name in folders:
        default = {"--served-model-name": name, "--allowed-local-media-path": "{images}"}
        for case in (*generic_cases(), *sized_cases("size-"), *marker_cases("<image>")):
            yield folder, "default", default, case
        string = {"--served-model-name": name, "--chat-template-content-format": "string",
                  "--limit-mm-per-prompt": {"image": 2}}
        for case in string_cases("<image>"):
            yield folder, "string-limit2", string, case


def internvl_kwarg_cases() -> Iterator[Case]:
    """``--trust-request-mm-kwargs``: the tiling kwargs asked for by the body."""
    wide = user(image(1200, 400, mode="L"), text("x"))
    yield "max-patches-6", chat(wide, mm_processor_kwargs={"max_patches": 6})
    yield "max-patches-1", chat(wide, mm_processor_kwargs={"max_patches": 1})
    yield "min-patches-4", chat(user(image(448, 448), text("x")),
                                mm_processor_kwargs={"min_patches": 4})
    yield "min-max-2-3", chat(wide, mm_processor_kwargs={"min_patches": 2, "max_patches": 3})
    yield "no-crop", chat(wide, mm_processor_kwargs={"crop_to_patches": False})
    yield "max-patches-24-huge", chat(user(image(4000, 1000, mode="1"), text("x")),
                                      mm_processor_kwargs={"max_patches": 24})
    yield "no-kwargs", chat(wide)


def _internvl() -> Iterator[Item]:
    name = "internvl3-1b-hf"
    default = {"--served-model-name": name, "--allowed-local-media-path": "{images}"}
    for case in (*generic_cases(), *sized_cases("size-"), *marker_cases("<IMG_CONTEXT>")):
        yield "internvl3", "default", default, case
    trusted = {"--served-model-name": name, "--trust-request-mm-kwargs": True}
    for case in internvl_kwarg_cases():
        yield "internvl3", "trusted", trusted, case
    server = {"--served-model-name": name, "--mm-processor-kwargs": {"max_patches": 4}}
    for case in sized_cases("server-max4-"):
        yield "internvl3", "server-max4", server, case
    string = {"--served-model-name": name, "--chat-template-content-format": "string",
              "--limit-mm-per-prompt": {"image": 2}}
    for case in string_cases("<IMG_CONTEXT>"):
        yield "internvl3", "string-limit2", string, case


def pixtral_cases() -> Iterator[Case]:
    """Pixtral's grid: 16 px patches, images over 1024 px scaled down (Python's round)."""
    for w, h in ((16, 16), (17, 17), (15, 33), (1024, 1024), (1025, 1024), (1024, 1025),
                 (2048, 1025), (2048, 1023), (3000, 7), (7, 3000), (1040, 10)):
        yield f"grid-{w}x{h}", chat(user(text("g"), image(w, h, mode="L")))
    yield "same-image-twice", chat(user(image(64, 48), text("and"), image(64, 48)))
    yield "exif-6-square-grid", chat(user(image(40, 40, exif=6), text("r")))
    yield "exif-8-same-grid", chat(user(image(33, 31, exif=8), text("r")))
    yield "exif-6-second-image", chat(user(image(64, 48), image(300, 100, exif=6),
                                           text("r")))
    yield "assistant-image", chat([
        {"role": "user", "content": "Draw."},
        {"role": "assistant", "content": [image(32, 32)]},
        {"role": "user", "content": "Again?"}])
    yield "system-image", chat([
        {"role": "system", "content": [text("sys"), image(32, 32)]},
        {"role": "user", "content": "hi"}])
    yield "text-only", chat(user(text("No image here.")))


def merged_grid_cases() -> Iterator[Case]:
    """Mistral Small 3.1's grid: 14 px patches merged 2x2 (28 px), images over 1540 px
    scaled down."""
    for w, h in ((28, 28), (29, 29), (27, 57), (1540, 1540), (1541, 1540), (1540, 1541),
                 (3080, 1541), (3080, 1539), (5000, 7), (7, 5000), (1568, 10)):
        yield f"grid-{w}x{h}", chat(user(text("g"), image(w, h, mode="L")))
    yield "exif-6-square-grid", chat(user(image(40, 40, exif=6), text("r")))
    yield "exif-6-second-image", chat(user(image(64, 48), image(300, 100, exif=6),
                                           text("r")))


def _pixtral() -> Iterator[Item]:
    mistral = {"--tokenizer-mode": "mistral", "--config-format": "mistral",
               "--load-format": "mistral"}
    name = "pixtral-12b-2409"
    default = {"--served-model-name": name, **mistral, "--allowed-local-media-path": "{images}"}
    for case in (*generic_cases(), *sized_cases("size-"), *marker_cases("[IMG]"),
                 *pixtral_cases()):
        yield "pixtral12b", "default", default, case
    limit = {"--served-model-name": name, **mistral, "--limit-mm-per-prompt": {"image": 2}}
    for case in limit_cases():
        yield "pixtral12b", "limit2", limit, case
    small = {"--served-model-name": "mistral-small-3.1", **mistral,
             "--allowed-local-media-path": "{images}"}
    for case in (*generic_cases(), *merged_grid_cases()):
        yield "mistral_small31", "default", small, case


#: Corpus name → its (folder, server label, flags, case) items.
CORPORA: dict[str, Callable[[], Iterator[Item]]] = {
    "gemma3": _gemma3, "llava": _llava,
    "llava_onevision": lambda: _llava((("llava_onevision", "llava-onevision-qwen2-0.5b-ov-hf"),)),
    "internvl": _internvl, "pixtral": _pixtral,
}


def build(corpus: str) -> Path:
    return write_bodies(corpus, CORPORA[corpus]())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="*", help=f"one of {sorted(CORPORA)} (default: all)")
    for corpus in parser.parse_args().corpus or sorted(CORPORA):
        if corpus not in CORPORA:
            parser.error(f"unknown corpus {corpus!r}")
        out = build(corpus)
        print(f"wrote {out} ({sum(1 for _ in out.open())} bodies)")


if __name__ == "__main__":
    main()
