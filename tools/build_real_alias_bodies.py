"""Build ``tests/render/real_alias_bodies.jsonl``: chat bodies whose (request) chat templates
alias ``messages`` through Jinja namespaces, over the Qwen3 folder.

Maintainer tool. vLLM detects the ``auto`` content format from the template's syntax tree:
'openai' when a loop iterates a message's content. From 0.33 on it follows ``messages``
into namespaces (``namespace(rest=messages)``, ``{% set ns.rest = messages[1:] %}``) and
names bound to such an attribute; 0.29-0.32 do not (``namespace(...)`` is no alias there,
and a namespace attribute assigned from messages fails their reading, which then takes
'string'). Each template of :data:`TEMPLATES` is sent in the body (the server runs with
``--trust-request-chat-template``) with content given as text parts, which 'openai' keeps
as parts and 'string' joins, and as a string. No real model's template found aliases so
(the real folders' templates and a code search), hence these. ``tools/harvest_render.py
--bodies tests/render/real_alias_bodies.jsonl`` records vLLM 0.31's answers; other
releases' are kept with ``--keep-release RELEASE DIR``.

Usage::

    python tools/build_real_alias_bodies.py [--keep-release RELEASE DIR]
"""

from __future__ import annotations

from typing import Any

from corpus_io import corpus_main, folder_lines

FOLDER = "qwen3"
_TURN = ("<|im_start|>{{ m.role }}\n{% if m.content is string %}{{ m.content }}{% else %}"
         "{% for part in m.content %}[{{ part.type }}]{{ part.text }}{% endfor %}{% endif %}"
         "<|im_end|>\n")
_END = "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
#: name -> template: what 0.33 follows and the forms around it.
TEMPLATES = {
    # A namespace's keyword argument holds messages.
    "ns-kwarg": "{%- set ns = namespace(rest=messages) -%}{%- for m in ns.rest -%}"
                + _TURN + "{%- endfor -%}" + _END,
    # A namespace attribute set from a slice of messages (0.29-0.32: their reading fails).
    "ns-set-slice": "{%- set ns = namespace(rest=[]) -%}{%- set ns.rest = messages[1:] -%}"
                    "{{ messages[0].role }}|{%- for m in ns.rest -%}" + _TURN
                    + "{%- endfor -%}" + _END,
    # A name bound to the namespace attribute.
    "ns-then-name": "{%- set ns = namespace(rest=messages) -%}{%- set msgs = ns.rest -%}"
                    "{%- for m in msgs -%}" + _TURN + "{%- endfor -%}" + _END,
    # Through a filter, then a nested namespace attribute path.
    "ns-filter": "{%- set ns = namespace(rest=messages|list) -%}"
                 "{%- for m in ns.rest|reverse -%}" + _TURN + "{%- endfor -%}" + _END,
    # An alias whose loop never iterates content: 'string' everywhere.
    "ns-no-content-loop": "{%- set ns = namespace(rest=messages) -%}{%- for m in ns.rest -%}"
                          "<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
                          "{%- endfor -%}" + _END,
    # A plain name alias: every release follows it.
    "name-alias": "{%- set rest = messages -%}{%- for m in rest -%}" + _TURN
                  + "{%- endfor -%}" + _END,
}
_PARTS = [{"type": "text", "text": "first part"}, {"type": "text", "text": "second part"}]


def _chat(name: str) -> list[tuple[str, dict[str, Any]]]:
    bodies: list[tuple[str, dict[str, Any]]] = []
    for key, template in TEMPLATES.items():
        for content_key, content in (("parts", _PARTS), ("string", "one string")):
            messages = [{"role": "system", "content": "sys"},
                        {"role": "user", "content": content}]
            bodies.append((f"chat-{key}-{content_key}",
                           {"model": name, "messages": messages, "chat_template": template}))
    return bodies


def build() -> list[dict[str, Any]]:
    name = f"real-{FOLDER}-alias"
    server = {"--served-model-name": name, "--max-model-len": 2048,
              "--trust-request-chat-template": True}
    return folder_lines(FOLDER, server, (("/v1/chat/completions", _chat(name)),))


if __name__ == "__main__":
    raise SystemExit(corpus_main(__doc__.splitlines()[0], "real_alias_", build))
