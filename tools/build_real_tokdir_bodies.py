"""Build ``tests/render/real_tokdir_bodies.jsonl``: bodies over a model folder served with a
separate ``--tokenizer`` folder whose ``config.json`` has a model type the release's
transformers config mapping and vLLM's config registry may not know.

Maintainer tool. vLLM checks the model folder's config.json at start-up (a type its config
reader does not load: no server); the tokenizer folder's is read only for the tokenizer
class: ``get_tokenizer`` loads it with vLLM's config reader and ignores a failure, and
transformers' ``AutoTokenizer`` then falls back to a generic config that keeps the file's
``model_type`` and ``tokenizer_class``, so the class rules run on the unknown type (no class
registered for it, unless transformers lists the type among those with an incorrect hub
class). The model folder is Qwen3's; each tokenizer folder of :data:`TOKENIZERS` is a real
Qwen3 vocabulary under a model type unknown at some release (drift_beam: a hub
GPT2Tokenizer under beam, unknown to 0.31 and 0.32; drift_gte: no tokenizer_class under
gte, unknown to 0.31) or at every release (tokdir_internlm2: InternLM2Tokenizer and an
``auto_map`` under internlm2, a type transformers lists with an incorrect hub class and
registers TokenizersBackend for). The bodies are
tools/build_real_rebuild_bodies.py's. ``tools/harvest_render.py --bodies
tests/render/real_tokdir_bodies.jsonl`` records vLLM 0.31's answers; other releases' are kept
with ``--keep-release RELEASE DIR``.

Usage::

    python tools/build_real_tokdir_bodies.py [--keep-release RELEASE DIR]
"""

from __future__ import annotations

from typing import Any

from build_real_rebuild_bodies import CHAT, COMPLETIONS, _chat, _completions
from corpus_io import corpus_main, folder_lines

#: The model folder every tokenizer folder is served with.
MODEL = "qwen3"
TOKENIZERS = ("drift_beam", "drift_gte", "tokdir_internlm2")


def build() -> list[dict[str, Any]]:
    lines = []
    for tokenizer in TOKENIZERS:
        name = f"real-{MODEL}-{tokenizer}"
        server = {"--served-model-name": name, "--max-model-len": 2048,
                  "--tokenizer": f"real:{tokenizer}"}
        lines += folder_lines(f"{MODEL}+{tokenizer}", server,
                              ((CHAT, _chat(name)), (COMPLETIONS, _completions(name))),
                              model_dir=f"real:{MODEL}")
    return lines


if __name__ == "__main__":
    raise SystemExit(corpus_main(__doc__.splitlines()[0], "real_tokdir_", build))
