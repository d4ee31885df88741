"""Build ``tests/render/real_encdec_bodies.jsonl``: an encoder-decoder config's folder.

Maintainer tool. The chat and completion bodies of tools/build_real_wu_bodies.py, and
prompts given as token ids, over ``mbart_encdec`` (tests/render/real/): mbart_cc25's
tokenizer files under mBART's own encoder-decoder config (MBartForConditionalGeneration,
``is_encoder_decoder``), and prompts as token ids over ``udop_rule`` (Udop's config
names no decoder start token and its tokenizer has no bos token). vLLM's render server
takes an encoder-decoder model's encoder prompt ids; ``tools/harvest_render.py --bodies
tests/render/real_encdec_bodies.jsonl --out tests/render/real_encdec_vectors.jsonl
--port 18506`` records what it answers; the ``real_encdec_032_`` and ``_030_`` copies
are harvested with ``--vllm-python /work/venvs/vllm0XY/bin/python``, the ``_033_`` one by
the 0.33 overlay (docs/render-releases.md). vLLM 0.29.0 starts for neither folder
(MBartForConditionalGeneration: "not supported in-tree anymore"; Udop neither), so its
copy ``real_encdec_029_`` holds ``detr_encdec`` instead: the same tokenizer files under
DETR's config (DetrForObjectDetection, an encoder-decoder model type whose transformers
class 0.29.0's Transformers modeling backend takes; the other encoder-decoder
architectures 0.29.0 starts, Whisper's, Parakeet's, load a processor).

Usage::

    python tools/build_real_encdec_bodies.py [--out tests/render/real_encdec_bodies.jsonl]
"""

from __future__ import annotations

from typing import Any

from build_real_wu_bodies import CHAT, COMPLETIONS, _chat, _completions
from corpus_io import RENDER_DIR, folder_lines, write_bodies, write_main

FOLDER = "mbart_encdec"
UDOP = "udop_rule"
DETR = "detr_encdec"
#: The releases whose own servers answer the same bodies (one copy each).
RELEASES = ("032", "030", "033")


def _udop() -> list[dict[str, Any]]:
    """Prompts as token ids over ``udop_rule`` (UdopForConditionalGeneration, whose
    config names no decoder start token and whose tokenizer has no bos token), a text
    (its call refuses it first) and ids past the context length."""
    name = f"real-{UDOP}"
    server = {"--served-model-name": name, "--max-model-len": 512}
    completions = [(f"completion-{key}", {"model": name, "prompt": prompt}) for key, prompt in (
        ("token-ids", [0, 35378, 2]), ("token-ids-list", [[0, 35378, 2], [5, 6]]),
        ("text", "Hello world"), ("token-ids-too-long", [5] * 600))]
    return folder_lines(UDOP, server, ((COMPLETIONS, completions),))


def _folder(folder: str) -> list[dict[str, Any]]:
    """The chat and completion bodies over an encoder-decoder config's folder."""
    name = f"real-{folder}"
    server = {"--served-model-name": name, "--max-model-len": 512}
    completions = [*_completions(name, False)[:8],
                   ("completion-token-ids", {"model": name, "prompt": [0, 35378, 2]})]
    return folder_lines(folder, server, ((CHAT, _chat(name, True)),
                                         (COMPLETIONS, completions)))


def build() -> list[dict[str, Any]]:
    return [*_folder(FOLDER), *_udop()]


def main(argv: list[str] | None = None) -> int:
    code = write_main(__doc__.splitlines()[0], RENDER_DIR / "real_encdec_bodies.jsonl", build,
                      argv)
    for release in RELEASES:
        write_bodies(RENDER_DIR / f"real_encdec_{release}_bodies.jsonl", build())
    write_bodies(RENDER_DIR / "real_encdec_029_bodies.jsonl", _folder(DETR))
    return code


if __name__ == "__main__":
    raise SystemExit(main())
