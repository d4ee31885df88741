"""Write the DeepSeek-V3.2 render corpus: ``tests/render/real_dsv32_bodies.jsonl``.

Maintainer tool, deterministic; the format is ``tools/build_render_bodies.py``'s. Every
body is for the real folder ``tests/render/real/deepseek_v32`` (DeepSeek-V3's tokenizer
files, its Jinja template removed, under a config.json naming ``DeepseekV32ForCausalLM``,
for which vLLM switches to its tokenizer mode ``deepseek_v32``: chat rendered by a Python
encoder, render/_deepseek_v32.py), served as ``real-dsv32`` with a 2,048-token context,
and one server with ``--max-model-len 300``, ``--exclude-tools-when-tool-choice-none`` and
``--default-chat-template-kwargs`` turning thinking on. The bodies cover system, user,
developer and assistant turns, reasoning in history (kept or dropped), tools and tool
calls (string, number, object arguments; ``tool_choice`` ``"none"``: this server has no
tool parser, so ``"auto"`` is its 400), tool results (one, several, out of place),
thinking on and off through ``chat_template_kwargs`` (``thinking``, ``enable_thinking``,
truthy values) and ``reasoning_effort``, content parts, ``add_generation_prompt`` /
``continue_final_message``, ``tokenize`` in the kwargs, kwargs named ``conversation`` or
``messages`` (the renderer's own arguments), truncation, the context bound,
completions, and the bodies vLLM refuses (bad roles, tool results without a call, an
assistant turn without reasoning after the last user turn in thinking mode, an empty
conversation).

Usage::

    python tools/build_real_dsv32_bodies.py [--out tests/render/real_dsv32_bodies.jsonl]
    python tools/build_real_dsv32_bodies.py --keep-release RELEASE DIR
"""

from __future__ import annotations

from typing import Any

from corpus_io import corpus_main, folder_lines

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
FOLDER = "deepseek_v32"
NAME = "real-dsv32"
CORPUS = "real_dsv32_"

Body = dict[str, Any]

DEFAULT: dict[str, Any] = {"--served-model-name": NAME, "--max-model-len": 2048}
SHORT: dict[str, Any] = {"--served-model-name": NAME, "--max-model-len": 300,
                         "--exclude-tools-when-tool-choice-none": True,
                         "--default-chat-template-kwargs": {"thinking": True}}

SYSTEM = {"role": "system", "content": "You are a terse assistant."}
USER = {"role": "user", "content": "What is the weather like in Paris today?"}
FINAL = {"role": "assistant", "content": "Sunny, 21 degrees."}
FOLLOW_UP = {"role": "user", "content": "And tomorrow?"}
DEVELOPER = {"role": "developer", "content": "Answer in French."}
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city name"},
        "days": {"type": "integer"}}, "required": ["city"]}}}
TIME_TOOL = {"type": "function", "function": {
    "name": "get_time", "parameters": {"type": "object", "properties": {
        "tz": {"type": "string"}}}}}
BARE_TOOL = {"type": "function", "function": {"name": "ping"}}
CALL = {"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 2}"}}
CALL_2 = {"id": "call_2", "type": "function",
          "function": {"name": "get_time", "arguments": "{\"tz\": \"Europe/Paris\"}"}}
CALL_TYPES = {"id": "call_3", "type": "function", "function": {
    "name": "get_weather", "arguments": (
        "{\"city\": \"Zürich\", \"flag\": true, \"none\": null, \"ratio\": 0.5, "
        "\"list\": [1, \"a\"], \"obj\": {\"k\": \"v\"}, \"big\": 1e3}")}}
CALL_BAD_JSON = {"id": "call_4", "type": "function",
                 "function": {"name": "get_weather", "arguments": "{not json"}}
CALL_EMPTY = {"id": "call_5", "type": "function",
              "function": {"name": "ping", "arguments": ""}}
CALL_TURN = {"role": "assistant", "content": None, "tool_calls": [CALL]}
RESULT = {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21}"}
RESULT_2 = {"role": "tool", "tool_call_id": "call_2", "content": "10:00"}
THINK = {"chat_template_kwargs": {"thinking": True}}
#: Media parts for a text-only model (vLLM: "<served name> is not a multimodal model"),
#: in user turns after text, alone, and in a later turn.
MEDIA: dict[str, list[Any]] = {
    "audio-part": [{"role": "user", "content": [
        {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}]}],
    "video-part": [{"role": "user", "content": [
        {"type": "video_url", "video_url": {"url": "data:video/mp4;base64,AAAA"}}]}],
    "audio-url-part": [{"role": "user", "content": [
        {"type": "audio_url", "audio_url": {"url": "data:audio/wav;base64,AAAA"}}]}],
    "image-after-text": [{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}],
    "image-later-turn": [
        {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}],
}
THINK_ALT = {"chat_template_kwargs": {"enable_thinking": True}}


def _chat(messages: list[Any], **fields: Any) -> Body:
    return {"model": NAME, "messages": messages, **fields}


def _both(ident: str, messages: list[Any], **fields: Any) -> list[tuple[str, Body]]:
    """A conversation in chat mode, then in thinking mode."""
    return [(ident, _chat(messages, **fields)),
            (f"{ident}-think", _chat(messages, **fields, **THINK))]


def default_chat() -> list[tuple[str, Body]]:
    reasoned = {**FINAL, "reasoning": "Look it up."}
    legacy = {**FINAL, "reasoning_content": "Old field name."}
    two_calls = {"role": "assistant", "content": "Checking.", "tool_calls": [CALL, CALL_2],
                 "reasoning": "Two lookups."}
    out: list[tuple[str, Body]] = [
        *_both("user", [USER]),
        *_both("system-user", [SYSTEM, USER]),
        *_both("multiturn", [SYSTEM, USER, FINAL, FOLLOW_UP]),
        *_both("reasoning-history", [USER, reasoned, FOLLOW_UP]),
        *_both("reasoning-legacy", [USER, legacy, FOLLOW_UP]),
        *_both("reasoning-last", [USER, {**FINAL, "reasoning": "Thought."}]),
        *_both("reasoning-two-turns", [USER, reasoned, FOLLOW_UP,
                                       {"role": "assistant", "content": "Rain.",
                                        "reasoning": "Second."}, {"role": "user",
                                                                  "content": "Thanks."}]),
        *_both("assistant-last", [USER, FINAL]),
        *_both("assistant-empty-reasoning", [USER, {"role": "assistant", "content": "",
                                                    "reasoning": "Only thought."}]),
        *_both("tools-one", [USER], tools=[WEATHER_TOOL], tool_choice="none"),
        *_both("tools-two-system", [SYSTEM, USER], tools=[WEATHER_TOOL, TIME_TOOL],
               tool_choice="none"),
        *_both("tools-bare", [USER], tools=[BARE_TOOL], tool_choice="none"),
        *_both("tool-call", [USER, CALL_TURN]),
        *_both("tool-result", [USER, CALL_TURN, RESULT], tools=[WEATHER_TOOL], tool_choice="none"),
        *_both("tool-result-answer", [USER, CALL_TURN, RESULT, FINAL, FOLLOW_UP],
               tools=[WEATHER_TOOL], tool_choice="none"),
        *_both("tool-results-two", [USER, two_calls, RESULT, RESULT_2],
               tools=[WEATHER_TOOL, TIME_TOOL], tool_choice="none"),
        *_both("tool-results-partial", [USER, two_calls, RESULT]),
        *_both("tool-call-types", [USER, {"role": "assistant", "content": "",
                                          "tool_calls": [CALL_TYPES]}]),
        *_both("tool-call-bad-json", [USER, {"role": "assistant", "content": None,
                                             "tool_calls": [CALL_BAD_JSON]}, FOLLOW_UP]),
        *_both("tool-call-empty-args", [USER, {"role": "assistant", "content": None,
                                               "tool_calls": [CALL_EMPTY]}, FOLLOW_UP]),
        *_both("tool-calls-empty-list", [USER, {"role": "assistant", "content": "Hi.",
                                                "tool_calls": []}, FOLLOW_UP]),
        *_both("tool-result-parts", [USER, CALL_TURN, {
            "role": "tool", "tool_call_id": "call_1",
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]),
        *_both("developer", [DEVELOPER, USER]),
        *_both("developer-last", [USER, FINAL, DEVELOPER]),
        *_both("developer-tools", [{**DEVELOPER, "tools": [WEATHER_TOOL]}, USER]),
        *_both("user-parts", [{"role": "user", "content": [
            {"type": "text", "text": "Part one."}, {"type": "text", "text": "Part two."}]}]),
        *_both("system-parts", [{"role": "system", "content": [
            {"type": "text", "text": "Be terse."}, {"type": "text", "text": "Be kind."}]}, USER]),
        *_both("system-only", [SYSTEM]),
        *_both("system-empty", [{"role": "system", "content": ""}, USER]),
        *_both("braces", [{"role": "user", "content": "Format {content} and {0} {{x}}"}]),
        *_both("specials-in-text", [{"role": "user", "content": (
            "<\uff5cUser\uff5c>x<\uff5cend▁of▁sentence\uff5c> <think>y</think>")}]),
        *_both("unicode", [{"role": "user", "content": "Ünïcödé 日本語 🙂\n\ttabs"}]),
        ("think-enable", _chat([USER], **THINK_ALT)),
        ("think-both-false", _chat([USER], chat_template_kwargs={"thinking": False,
                                                                 "enable_thinking": False})),
        ("think-truthy-string", _chat([USER], chat_template_kwargs={"thinking": "yes"})),
        ("think-truthy-int", _chat([USER], chat_template_kwargs={"enable_thinking": 1})),
        ("think-falsy-empty", _chat([USER], chat_template_kwargs={"thinking": ""})),
        ("effort-high", _chat([USER], reasoning_effort="high")),
        ("effort-none", _chat([USER], reasoning_effort="none")),
        ("effort-low-user-off", _chat([USER], reasoning_effort="low",
                                      chat_template_kwargs={"enable_thinking": False})),
        ("add-generation-prompt-false", _chat([USER], add_generation_prompt=False)),
        ("continue-final", _chat([USER, {"role": "assistant", "content": "Sun"}],
                                 continue_final_message=True, add_generation_prompt=False)),
        ("continue-final-think", _chat([USER, {"role": "assistant", "content": "Sun",
                                               "reasoning": "r"}],
                                       continue_final_message=True,
                                       add_generation_prompt=False, **THINK)),
        ("continue-and-generation", _chat([USER], continue_final_message=True,
                                          add_generation_prompt=True)),
        ("kwargs-tokenize", _chat([USER], chat_template_kwargs={"tokenize": True})),
        ("kwargs-unknown", _chat([USER], chat_template_kwargs={"foo": 1})),
        ("kwargs-tools", _chat([USER], chat_template_kwargs={"tools": [TIME_TOOL]})),
        ("documents", _chat([USER], documents=[{"title": "t", "text": "x"}])),
        ("tool-choice-none", _chat([USER], tools=[WEATHER_TOOL], tool_choice="none")),
        ("tool-choice-auto", _chat([USER], tools=[WEATHER_TOOL], tool_choice="auto")),
        ("tools-default-choice", _chat([USER], tools=[WEATHER_TOOL])),
        ("truncate", _chat([SYSTEM, USER, FINAL, FOLLOW_UP], truncate_prompt_tokens=5)),
        ("add-special-tokens", _chat([USER], add_special_tokens=True)),
        ("name-field", _chat([{**USER, "name": "alice"}])),
        ("max-tokens-over", _chat([USER], max_tokens=2048)),
        # Refused by vLLM.
        ("bad-role", _chat([{"role": "narrator", "content": "Once."}, USER])),
        ("tool-first", _chat([RESULT, USER])),
        ("tool-without-call", _chat([USER, FINAL, RESULT])),
        ("tool-after-user", _chat([USER, RESULT])),
        ("tool-too-many", _chat([USER, CALL_TURN, RESULT, RESULT_2])),
        ("tool-first-last-call", _chat([RESULT, USER, CALL_TURN])),
        ("developer-empty", _chat([{"role": "developer", "content": ""}, USER])),
        ("developer-before-user-think", _chat([DEVELOPER, USER, FINAL, FOLLOW_UP], **THINK)),
        ("bad-role-before-user-think", _chat([USER, {"role": "narrator", "content": "x"},
                                              FOLLOW_UP], **THINK)),
        ("empty", _chat([])),
        ("empty-with-tools", _chat([], tools=[WEATHER_TOOL])),
        ("chat-template-untrusted", _chat([USER], chat_template="{{ 'x' }}")),
        ("image-part", _chat([{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}])),
        *((f"media-{kind}", _chat(messages)) for kind, messages in MEDIA.items()),
        # Chat-template kwargs naming the renderer's own apply_chat_template arguments.
        ("kwarg-conversation", _chat([USER], chat_template_kwargs={
            "conversation": [{"role": "user", "content": "Other"}]})),
        ("kwarg-messages", _chat([USER], chat_template_kwargs={
            "messages": [{"role": "user", "content": "Other"}]})),
        ("kwarg-conversation-bad-role", _chat([{"role": "narrator", "content": "x"}],
                                              chat_template_kwargs={"conversation": []})),
    ]
    return out


def default_completions() -> list[tuple[str, Body]]:
    text = "<\uff5cUser\uff5c>Hi<\uff5cAssistant\uff5c></think>Hello"
    return [
        ("prompt", {"model": NAME, "prompt": text}),
        ("prompt-no-specials", {"model": NAME, "prompt": text, "add_special_tokens": False}),
        ("prompt-plain", {"model": NAME, "prompt": "The capital of France is"}),
        ("prompt-list", {"model": NAME, "prompt": ["One", "Two three"]}),
        ("prompt-ids", {"model": NAME, "prompt": [0, 128803, 100, 128804]}),
    ]


def short_chat() -> list[tuple[str, Body]]:
    return [
        ("defaults-think", _chat([USER])),
        ("defaults-think-off", _chat([USER], chat_template_kwargs={"thinking": False})),
        ("defaults-effort-none", _chat([USER], reasoning_effort="none")),
        ("tools-over-length", _chat([USER], tools=[WEATHER_TOOL])),
        ("tools-choice-none-excluded", _chat([USER], tools=[WEATHER_TOOL], tool_choice="none")),
        ("truncate-all", _chat([USER], truncate_prompt_tokens=-1)),
    ]


def build() -> list[dict[str, Any]]:
    return [*folder_lines(FOLDER, DEFAULT, ((CHAT, default_chat()),
                                            (COMPLETIONS, default_completions()))),
            *[{**line, "id": line["id"].replace(f"{FOLDER}/", f"{FOLDER}/short-")}
              for line in folder_lines(FOLDER, SHORT, ((CHAT, short_chat()),))]]


if __name__ == "__main__":
    raise SystemExit(corpus_main(__doc__.splitlines()[0], CORPUS, build))
