"""Write a CTRLTokenizer folder whose merges are out of training order, and transformers'
ids for words over it: ``tests/render/python_models/ctrl_merges/`` and
``tests/render/python_bpe_vectors.json``.

Maintainer tool, run by a scratch vLLM venv's interpreter (its transformers is what vLLM
runs)::

    /work/venvs/vllm031/bin/python tools/build_python_bpe_merges.py

The merges (seeded) join random symbols of a three-letter alphabet, each rank drawn at
random, so a merge of a merged symbol can rank before the merge that makes it (a trained
merges file never does): the order in which ``bpe`` applies them matters, which the real
folders' corpora do not exercise. The vocabulary holds every symbol in CTRL's form
(``@@`` continuations, the ``</w>`` ones bare) so each piece has an id.
``CTRLTokenizer.encode(word, add_special_tokens=False)`` is recorded for each word;
tests/render/test_real_py_bpe_wp_vectors.py replays it.
"""

from __future__ import annotations

import json
import random
import sys
from importlib import import_module
from pathlib import Path

RENDER_DIR = Path(__file__).resolve().parent.parent / "tests" / "render"
FOLDER = RENDER_DIR / "python_models" / "ctrl_merges"
VECTORS = RENDER_DIR / "python_bpe_vectors.json"


def main() -> int:
    transformers = import_module("transformers")  # the scratch venv's, not the project's

    rng = random.Random(5)
    symbols = ["a", "b", "c", "a</w>", "b</w>", "c</w>"]
    merges: list[tuple[str, str]] = []
    while len(merges) < 300:
        pair = (rng.choice([s for s in symbols if not s.endswith("</w>")]), rng.choice(symbols))
        if pair not in merges:
            merges.append(pair)
            symbols.append("".join(pair))
    rng.shuffle(merges)
    vocab: dict[str, int] = {"<unk>": 0}
    for symbol in symbols:
        vocab.setdefault(symbol[:-4] if symbol.endswith("</w>") else symbol + "@@", len(vocab))
    FOLDER.mkdir(parents=True, exist_ok=True)
    (FOLDER / "merges.txt").write_text(
        "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges), "utf-8")
    (FOLDER / "vocab.json").write_text(json.dumps(vocab), "utf-8")
    (FOLDER / "config.json").write_text(json.dumps(
        {"architectures": ["CTRLLMHeadModel"], "model_type": "ctrl"}), "utf-8")
    words = ["".join(rng.choice("abc") for _ in range(rng.randint(1, 30))) for _ in range(2000)]
    words += ["a" * k for k in range(1, 40)] + ["ab" * k for k in range(1, 20)]
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(FOLDER))
    assert type(tokenizer).__name__ == "CTRLTokenizer", type(tokenizer)
    VECTORS.write_text(json.dumps({
        "transformers": transformers.__version__, "folder": "python_models/ctrl_merges",
        "ids": {w: tokenizer.encode(w, add_special_tokens=False) for w in words}},
        sort_keys=True), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
