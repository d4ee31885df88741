"""Build ``tests/render/real_dsv4_bodies.jsonl``: chat bodies over DeepSeek-V4/V4.1 folders.

Maintainer tool. Each folder of :data:`FOLDERS` (tests/render/real/<name>/) holds
DeepSeek-V3's real tokenizer files (the ``lenml-deepseek_v3`` source: no registry ships
V4's own) under a ``config.json`` naming a V4 architecture, so vLLM switches to its
tokenizer mode ``deepseek_v4`` (DeepseekV4ForCausalLM, DeepseekV4ForConditionalGeneration)
or ``deepseek_v41`` (DeepseekV41ForCausalLM) and renders chat with its Python encoder
(render/_deepseek_v4.py, _deepseek_v41.py). The chat bodies are a cross-section of the
string-level corpus (tools/build_deepseek_prompt_bodies.py: roles, history with reasoning,
tools, tool calls and results, thinking on/off, efforts, content parts, bad inputs), plus
completions. ``tools/harvest_render.py --bodies tests/render/real_dsv4_bodies.jsonl --out
tests/render/real_dsv4_vectors.jsonl --port 19210`` records vLLM 0.31's answers.

``--keep-release RELEASE DIR`` keeps, compactly, another release's answers harvested into
``DIR/real_dsv4_vectors.jsonl`` (tests/render/releases/RELEASE/).

Usage::

    python tools/build_real_dsv4_bodies.py [--out tests/render/real_dsv4_bodies.jsonl]
    python tools/build_real_dsv4_bodies.py --keep-release 0.32.0 /tmp/r/032
"""

from __future__ import annotations

from typing import Any

from build_deepseek_prompt_bodies import CLOCK, CONVERSATIONS, WEATHER
from build_real_dsv32_bodies import MEDIA
from corpus_io import corpus_main, folder_lines

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
FOLDERS = ("deepseek_v4", "deepseek_v41")
#: The conversations sent, by the string corpus's names.
CHATS = ("user", "system_user", "developer_user", "multi_turn", "multi_turn_dev_history",
         "reasoning_last", "tool_round", "tool_round_answered", "consecutive_users",
         "mid_system", "system_last", "args_nested", "args_bad_json", "parts_text",
         "tool_parts", "task_query", "task_action", "task_bad", "developer_empty",
         "unknown_role", "placeholder_text", "latest_reminder", "tool_only_last")
#: Request options beside the messages.
OPTIONS: dict[str, dict[str, Any]] = {
    "default": {},
    "chat": {"chat_template_kwargs": {"thinking": False}},
    "keep": {"chat_template_kwargs": {"drop_thinking": False}},
    "effort-max": {"reasoning_effort": "max"},
    "effort-none": {"reasoning_effort": "none"},
    "effort-medium": {"reasoning_effort": "medium"},
    "kwarg-effort-42": {"chat_template_kwargs": {"reasoning_effort": 42}},
}


def _chats(name: str) -> list[tuple[str, dict[str, Any]]]:
    bodies: list[tuple[str, dict[str, Any]]] = []
    for conv in CHATS:
        for opt, extra in OPTIONS.items():
            if opt != "default" and conv not in ("multi_turn", "tool_round_answered", "user"):
                continue
            bodies.append((f"chat-{conv}-{opt}",
                           {"model": name, "messages": CONVERSATIONS[conv], **extra}))
    bodies.append(("chat-tools", {"model": name, "messages": CONVERSATIONS["system_user"],
                                  "tools": [WEATHER, CLOCK]}))
    bodies.append(("chat-tools-no-system", {"model": name, "messages": CONVERSATIONS["user"],
                                            "tools": [WEATHER]}))
    bodies.append(("chat-tools-round", {"model": name,
                                        "messages": CONVERSATIONS["tool_round_answered"],
                                        "tools": [WEATHER, CLOCK]}))
    bodies += [(f"chat-media-{kind}", {"model": name, "messages": messages})
               for kind, messages in MEDIA.items()]
    return bodies


def _completions(name: str) -> list[tuple[str, dict[str, Any]]]:
    return [("completion-plain", {"model": name, "prompt": "Hello <\uff5cUser\uff5c> world"}),
            ("completion-no-specials", {"model": name, "prompt": "Hello world",
                                        "add_special_tokens": False})]


def build() -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for folder in FOLDERS:
        name = f"real-{folder}"
        server = {"--max-model-len": 8192, "--served-model-name": name}
        lines += folder_lines(folder, server, [(CHAT, _chats(name)),
                                               (COMPLETIONS, _completions(name))])
    return lines


def main(argv: list[str] | None = None) -> int:
    return corpus_main(__doc__.splitlines()[0], "real_dsv4_", build, argv)


if __name__ == "__main__":
    raise SystemExit(main())
