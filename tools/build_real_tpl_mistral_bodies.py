"""Build ``tests/render/real_tpl_mistral_bodies.jsonl``: the start-up probe in mistral mode.

Maintainer tool. Mistral 7B v0.3's folder (``real:mistral7b_v03``) served with
``--tokenizer-mode mistral`` and each ``--chat-template`` file of
tools/build_real_tpl_bodies.py: one raising a Python error on the start-up probe's
``[system, user, system, user]`` conversation only (``cli_probe``), one that does not
compile (``cli_syntax``). In mistral mode the probe renders ``--chat-template``'s text
alone at every release (render/_startup_probe.py); the chat itself is mistral_common's,
which no template reaches. ``tools/harvest_render.py --record-start-failures --bodies
tests/render/real_tpl_mistral_bodies.jsonl --out
tests/render/real_tpl_mistral_vectors.jsonl --port 19210`` records vLLM 0.31's answers
(status null, the exception, for a server that does not start).

``--keep-release RELEASE DIR`` keeps another release's answers under
tests/render/releases/RELEASE/.

Usage::

    python tools/build_real_tpl_mistral_bodies.py [--keep-release RELEASE DIR]
"""

from __future__ import annotations

from typing import Any, Final

from build_real_tpl_bodies import CHAT, CLI_TEMPLATES, COMPLETIONS
from corpus_io import corpus_main, folder_lines

FOLDER: Final = "mistral7b_v03"
_USER: Final = {"role": "user", "content": "Grüße aus Köln, 日本語"}
_PROBE: Final = [{"role": r, "content": "t"} for r in ("system", "user", "system", "user")]


def build() -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for ident, (path, _) in CLI_TEMPLATES.items():
        name = f"real-mistral-{ident}"
        server = {"--served-model-name": name, "--tokenizer-mode": "mistral",
                  "--max-model-len": 2048, "--chat-template": path}
        lines += [{**line, "id": f"mistral_{ident}/{line['id'].split('/', 1)[1]}"}
                  for line in folder_lines(FOLDER, server, (
                      (CHAT, [("chat-user", {"model": name, "messages": [_USER]}),
                              ("chat-probe-conversation", {"model": name,
                                                           "messages": _PROBE}),
                              ("chat-bad-role", {"model": name, "messages": [
                                  {"role": "narrator", "content": "x"}]})]),
                      (COMPLETIONS, [("completion-text", {"model": name,
                                                          "prompt": "Grüße aus Köln"})])))]
    return lines


def main(argv: list[str] | None = None) -> int:
    return corpus_main(__doc__.splitlines()[0], "real_tpl_mistral_", build, argv)


if __name__ == "__main__":
    raise SystemExit(main())
