"""Build ``tests/render/real_dsv4_bodies.jsonl``: chat bodies over DeepSeek-V4/V4.1 folders.

Maintainer tool. Each folder of :data:`FOLDERS` (tests/render/real/<name>/) holds
DeepSeek-V3's real tokenizer files (the ``lenml-deepseek_v3`` source: no registry ships
V4's own) under a ``config.json`` naming a V4 architecture, so vLLM switches to its
tokenizer mode ``deepseek_v4`` (DeepseekV4ForCausalLM, DeepseekV4ForConditionalGeneration)
or ``deepseek_v41`` (DeepseekV41ForCausalLM) and renders chat with its Python encoder
(render/_deepseek_v4.py, _deepseek_v41.py). The chat bodies are a cross-section of the
string-level corpus (tools/build_deepseek_prompt_bodies.py: roles, history with reasoning,
tools, tool calls and results, thinking on/off, efforts, content parts, bad inputs), plus
completions, and image bodies over V4.1 (:data:`IMAGES`: data URLs of the vision corpus's
PNGs, images by uuid alone among them) for the folders that hold the image token
(:data:`IMAGE_FOLDERS`), the one that does not and the one holding it at another id
(``deepseek_v41_otherid``: 129265), and ``mm_processor_kwargs`` bodies (:data:`MM_KWARGS`)
over ``deepseek_v41_image`` served as it is, with ``--trust-request-mm-kwargs`` (0.31 on;
0.30 has no such flag and takes a body's own kwargs always: its answers were harvested
from a server without it) and with ``--mm-processor-kwargs``. ``tools/harvest_render.py
--bodies tests/render/real_dsv4_bodies.jsonl --out tests/render/real_dsv4_vectors.jsonl
--port 19210`` records vLLM 0.31's answers.

``--keep-release RELEASE DIR`` keeps, compactly, another release's answers harvested into
``DIR/real_dsv4_vectors.jsonl`` (tests/render/releases/RELEASE/).

Usage::

    python tools/build_real_dsv4_bodies.py [--out tests/render/real_dsv4_bodies.jsonl]
    python tools/build_real_dsv4_bodies.py --keep-release 0.32.0 /tmp/r/032
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Any

from build_deepseek_prompt_bodies import CLOCK, CONVERSATIONS, TC, U2, WEATHER, U
from build_real_dsv32_bodies import MEDIA
from corpus_io import corpus_main, folder_lines

# The vision corpus's PNG encoder: the same bytes under any zlib (identifiers hash them).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "vision"))
from images import png

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
FOLDERS = ("deepseek_v4", "deepseek_v41")
#: V4.1 folders whose tokenizer holds ``<\uff5cdeepseek_image\uff5c>`` at id 129264 (the V4.1
#: processor's image token; DeepSeek-V3's has no such token, so over ``deepseek_v41`` every
#: image is vLLM's 400 "Token not found in tokenizer"): the image bodies only. The
#: ``_vision`` folder's config.json sets a ``vision_config`` (patch 14, downsample 2, at
#: most 64 tokens, min_pixels 10000, max_wh_ratio 2.5); ``_image``'s has none (vLLM's
#: defaults: 14, 3, 1024, 295936, no ratio).
IMAGE_FOLDERS = ("deepseek_v41_image", "deepseek_v41_vision")
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


_PLAIN = [U]
#: Chat-template kwargs that name apply_chat_template's own parameters, and message fields
#: vLLM's request parse may drop (the encoders read ``response_format``, ``wo_eos``).
EDGES: dict[str, dict[str, Any]] = {
    "kwarg-tools": {"messages": _PLAIN, "chat_template_kwargs": {"tools": [WEATHER]}},
    "kwarg-tools-and-tools": {"messages": _PLAIN, "tools": [CLOCK], "tool_choice": "none",
                              "chat_template_kwargs": {"tools": [WEATHER]}},
    "kwarg-conversation": {"messages": _PLAIN, "chat_template_kwargs": {
        "conversation": [{"role": "user", "content": "Other"}]}},
    "kwarg-messages": {"messages": _PLAIN, "chat_template_kwargs": {
        "messages": [{"role": "user", "content": "Other"}]}},
    "field-response-format": {"messages": [
        {"role": "system", "content": "Be terse.",
         "response_format": {"type": "json_object"}}, U]},
    "field-response-format-user": {"messages": [
        {"role": "user", "content": "Hi", "response_format": {"type": "json_object"}}]},
    "field-wo-eos": {"messages": [U, {"role": "assistant", "content": "Hel", "wo_eos": True},
                                  U2]},
    "field-wo-eos-last": {"messages": [U, {"role": "assistant", "content": "Hel",
                                           "wo_eos": True}]},
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
    bodies += [(f"chat-{ident}", {"model": name, **extra}) for ident, extra in EDGES.items()]
    return bodies


def _image(width: int, height: int, mode: str = "RGB", seed: int = 0,
           **extra: Any) -> dict[str, Any]:
    data = base64.b64encode(png(width, height, mode, seed)).decode()
    return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"},
            **extra}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(parts)}


_AUDIO = {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
_BAD = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
_UUID_ONLY = {"type": "image_url", "image_url": None, "uuid": "never-sent"}
_UUID_ONLY_URL = {"type": "image_url", "image_url": {"url": None}, "uuid": "never-sent-2"}
#: Image conversations over the V4.1 folders: sizes below min_pixels (upscaled), above the
#: token budget (resized), tall and wide ones, several images per message and per turn,
#: images in system, assistant and tool messages (tool results sorted by call id), the
#: placeholder text beside an image, uuids, undecodable images and audio beside images.
IMAGES: dict[str, list[Any]] = {
    "small": [_user(_text("What is this?"), _image(32, 24))],
    "first": [_user(_image(64, 64, seed=1), _text("Describe it."))],
    "medium": [_user(_image(700, 500, "1"), _text("And this?"))],
    "wide": [_user(_image(2400, 60, "1"), _text("Wide."))],
    "tall": [_user(_image(40, 1500, "1"))],
    "rgba": [_user(_image(50, 70, "RGBA"), _text("Alpha."))],
    "two": [_user(_image(64, 64, seed=2), _text("versus"), _image(300, 200, "1", seed=3))],
    "turns": [_user(_image(48, 48, seed=4), _text("First.")),
              {"role": "assistant", "content": "A square."},
              _user(_text("Second:"), _image(90, 30, seed=5))],
    "system": [{"role": "system", "content": [_text("Logo:"), _image(20, 20, seed=6)]},
               _user(_text("Hi"))],
    "assistant": [U, {"role": "assistant", "content": [_image(30, 30, seed=7)]}, U2],
    "tools": [U, TC,
              {"role": "tool", "tool_call_id": "c2", "content": [_image(40, 40, seed=8)]},
              {"role": "tool", "tool_call_id": "c1", "content": [_text("Sunny"),
                                                                 _image(60, 20, seed=9)]}],
    "placeholder-text": [_user(_text("See <\uff5cdeepseek_image\uff5c> here"),
                               _image(32, 32, seed=10))],
    "uuid": [_user(_image(32, 32, seed=11, uuid="my-image"), _text("Named."))],
    # By uuid alone: the render server answers from its processor cache, so an unseen
    # uuid is its 400 and one an earlier body of the same server sent renders.
    "uuid-only": [_user(_UUID_ONLY, _text("Cached?"))],
    "uuid-only-second": [_user(_image(32, 32, seed=15), _UUID_ONLY_URL)],
    "uuid-only-seen": [_user({**_UUID_ONLY, "uuid": "my-image"}, _text("Again."))],
    "undecodable": [_user(_text("Broken:"), _BAD)],
    "image-then-audio": [_user(_image(32, 32, seed=12), _AUDIO)],
    "bad-image-then-audio": [_user(_BAD, _AUDIO)],
    "developer-dropped": [{"role": "developer", "content": [_text("Look:"),
                                                            _image(36, 36, seed=14)]},
                          U, {"role": "assistant", "content": "Hello."}, U2],
    "history-drop": [_user(_image(32, 32, seed=13)),
                     {"role": "assistant", "content": "It is a pattern.",
                      "reasoning": "Looks striped."}, U2],
}
#: Options an image conversation is also sent with.
IMAGE_OPTIONS: dict[str, dict[str, Any]] = {
    "chat": {"chat_template_kwargs": {"thinking": False}},
    "keep": {"chat_template_kwargs": {"drop_thinking": False}},
}


#: What the folder without the image token is sent (each image is the same 400).
NO_TOKEN = ("small", "two", "tools", "placeholder-text", "undecodable", "image-then-audio",
            "bad-image-then-audio")
#: What the folder whose image token sits at another id than 129264 is sent.
OTHER_ID = ("small", "two", "uuid-only", "undecodable", "developer-dropped")
#: ``mm_processor_kwargs`` sent with an image, and without one (vLLM's V4.1 processor takes
#: no kwarg: get_hf_processor raises for any, which only an image reaches), to a server
#: that trusts them (0.31 on; 0.30 takes a body's own always) and to one that does not.
MM_KWARGS: dict[str, tuple[str, dict[str, Any]]] = {
    "budget": ("small", {"max_image_tokens": 64}),
    "two-keys": ("two", {"patch_size": 28, "downsample_ratio": 2}),
    "unknown": ("small", {"do_resize": False}),
    "empty": ("small", {}),
    "text-only": ("", {"max_image_tokens": 64}),
    "uuid-only": ("uuid-only", {"max_image_tokens": 64}),
}
#: The server-side ``--mm-processor-kwargs`` the image folder is also served with: merged
#: into the processor's call, whose ``**kwargs`` ignores them.
SERVER_MM_KWARGS = {"max_image_tokens": 64, "downsample_ratio": 2}


def _image_chats(name: str, kinds: tuple[str, ...] | None = None
                 ) -> list[tuple[str, dict[str, Any]]]:
    bodies = [(f"chat-image-{kind}", {"model": name, "messages": messages})
              for kind, messages in IMAGES.items() if kinds is None or kind in kinds]
    if kinds is not None:
        return bodies
    for opt, extra in IMAGE_OPTIONS.items():
        for kind in ("two", "history-drop", "developer-dropped"):
            bodies.append((f"chat-image-{kind}-{opt}",
                           {"model": name, "messages": IMAGES[kind], **extra}))
    bodies.append(("chat-image-tools-declared", {"model": name, "messages": IMAGES["tools"],
                                                 "tools": [WEATHER, CLOCK]}))
    return bodies


def _mm_kwargs_chats(name: str, kinds: tuple[str, ...] | None = None
                     ) -> list[tuple[str, dict[str, Any]]]:
    return [(f"chat-mm-kwargs-{kind}",
             {"model": name, "messages": IMAGES[conv] if conv else [U],
              "mm_processor_kwargs": kwargs})
            for kind, (conv, kwargs) in MM_KWARGS.items() if kinds is None or kind in kinds]


def _completions(name: str) -> list[tuple[str, dict[str, Any]]]:
    return [("completion-plain", {"model": name, "prompt": "Hello <\uff5cUser\uff5c> world"}),
            ("completion-no-specials", {"model": name, "prompt": "Hello world",
                                        "add_special_tokens": False})]


def build() -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for folder in FOLDERS:
        name = f"real-{folder}"
        server = {"--max-model-len": 8192, "--served-model-name": name}
        chats = _chats(name) + (_image_chats(name, NO_TOKEN) if folder == "deepseek_v41" else [])
        lines += folder_lines(folder, server, [(CHAT, chats),
                                               (COMPLETIONS, _completions(name))])
    for folder in IMAGE_FOLDERS:
        name = f"real-{folder}"
        server = {"--max-model-len": 8192, "--served-model-name": name}
        chats = [(f"chat-{c}-default", {"model": name, "messages": CONVERSATIONS[c]})
                 for c in ("user", "placeholder_text")]
        chats += [(f"chat-media-{kind}", {"model": name, "messages": messages})
                  for kind, messages in MEDIA.items() if not kind.startswith("image")]
        lines += folder_lines(folder, server, [(CHAT, chats + _image_chats(name))])
    name = "real-deepseek_v41_otherid"
    server = {"--max-model-len": 8192, "--served-model-name": name}
    chats = [("chat-user-default", {"model": name, "messages": CONVERSATIONS["user"]})]
    lines += folder_lines("deepseek_v41_otherid", server,
                          [(CHAT, chats + _image_chats(name, OTHER_ID))])
    folder = "deepseek_v41_image"
    name = f"real-{folder}"
    server = {"--max-model-len": 8192, "--served-model-name": name}
    untrusted = _mm_kwargs_chats(name, ("budget", "text-only"))
    lines += folder_lines(folder, server, [(CHAT, untrusted)])
    trusted = [(f"trusted-{ident}", body) for ident, body in _mm_kwargs_chats(name)]
    lines += folder_lines(folder, {**server, "--trust-request-mm-kwargs": True},
                          [(CHAT, trusted)])
    served = [(f"server-kwargs-{ident}", body) for ident, body in _image_chats(
        name, ("small", "medium", "two"))]
    lines += folder_lines(folder, {**server, "--mm-processor-kwargs": SERVER_MM_KWARGS},
                          [(CHAT, served)])
    return lines


def main(argv: list[str] | None = None) -> int:
    return corpus_main(__doc__.splitlines()[0], "real_dsv4_", build, argv)


if __name__ == "__main__":
    raise SystemExit(main())
