"""Build ``tests/render/real_name_bodies.jsonl``: bodies over a tokenizer folder given to vLLM
under a name that matches a TokenizersBackend name pattern of some releases only.

Maintainer tool. transformers' ``AutoTokenizer`` loads TokenizersBackend (tokenizer.json as
it is) for a config whose ``_name_or_path`` (the string vLLM was given as ``--tokenizer``
or ``--model``) matches one of its ``MODEL_IDS_TO_TOKENIZERS_BACKEND`` patterns;
``naver-clova-ix/donut-*`` is one at transformers 5.24 and 5.19 (vLLM 0.29, 0.30, 0.32,
0.33) and not at 5.17 (0.31), whose class rules then decide. The folder name_gpt2 is a real
Qwen3 vocabulary under a hub GPT2Tokenizer (rebuilt by those rules), served from the Qwen3
model folder with ``--tokenizer naver-clova-ix/donut-base``, a name relative to the
server's working directory (tools/harvest_render.py ``link:``). The bodies are
tools/build_real_rebuild_bodies.py's. ``tools/harvest_render.py --bodies
tests/render/real_name_bodies.jsonl`` records vLLM 0.31's answers; other releases' are kept
with ``--keep-release RELEASE DIR``.

Usage::

    python tools/build_real_name_bodies.py [--keep-release RELEASE DIR]
"""

from __future__ import annotations

from typing import Any

from build_real_rebuild_bodies import CHAT, COMPLETIONS, _chat, _completions
from corpus_io import corpus_main, folder_lines

#: The name vLLM is given, and the folder it names.
NAME = "naver-clova-ix/donut-base"
FOLDER = "name_gpt2"


def build() -> list[dict[str, Any]]:
    name = f"real-{FOLDER}"
    server = {"--served-model-name": name, "--max-model-len": 2048, "--tokenizer": NAME,
              f"link:{NAME}": f"real:{FOLDER}"}
    return folder_lines(FOLDER, server, ((CHAT, _chat(name)), (COMPLETIONS, _completions(name))),
                        model_dir="real:qwen3")


if __name__ == "__main__":
    raise SystemExit(corpus_main(__doc__.splitlines()[0], "real_name_", build))
