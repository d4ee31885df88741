"""Build ``tests/render/real_drift_bodies.jsonl``: bodies over folders of model types whose
tokenizer class transformers 5.24 (vLLM 0.29.0's and 0.30.0's) or 5.19 (0.32.0's and
0.33.0's) registers otherwise than 5.17 (0.31.0's, whose facts the rules were written for).

Maintainer tool. Each folder of :data:`FOLDERS` (tests/render/real/drift_*/) is a real
vocabulary (an existing real folder's files) under a ``config.json`` of the drifted model
type and an architecture the releases whose transformers or vLLM know the type start for
(its own, or Qwen3ForCausalLM where its own needs a processor or torchvision), with a hub
``tokenizer_class`` where the drift decides whether it is honoured: each release's answer
(or its server's start-up failure) is the ground truth of its own facts' decision
(render/_hf_decision.py ``release_facts``; the types verified are
``VerifiedRelease.hf_replayed``). The bodies are
tools/build_real_rebuild_bodies.py's. ``tools/harvest_render.py --bodies
tests/render/real_drift_bodies.jsonl`` records vLLM 0.31's answers; other releases' are kept
with ``--keep-release RELEASE DIR``.

Usage::

    python tools/build_real_drift_bodies.py [--keep-release RELEASE DIR]
"""

from __future__ import annotations

from typing import Any

from build_real_rebuild_bodies import build as rebuild_bodies
from corpus_io import corpus_main

#: folder -> the model type it stands for (its config.json's).
FOLDERS = {"drift_qwen3_5": "qwen3_5", "drift_modernbert_decoder": "modernbert-decoder",
           "drift_gte": "gte", "drift_beam": "beam", "drift_minicpmv4_7": "minicpmv4_7",
           "drift_omniasr_ctc": "omniasr_ctc", "drift_unlimited_ocr": "unlimited_ocr",
           "drift_siglip2": "siglip2", "drift_hyperclovax_vision_v2": "hyperclovax_vision_v2"}


def build() -> list[dict[str, Any]]:
    return rebuild_bodies(tuple(FOLDERS))


if __name__ == "__main__":
    raise SystemExit(corpus_main(__doc__.splitlines()[0], "real_drift_", build))
