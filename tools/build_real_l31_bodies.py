"""Build ``tests/render/real_l31_bodies.jsonl``: bodies over Meta's Llama 3.1 Instruct template.

Maintainer tool. Every body names the real folder ``real:llama3_1_meta``
(tests/render/real/llama3_1_meta/: Llama 3.1's tokenizer files with its special-token
names and Meta's chat template, fetched by tests/real_models.py) and the render server's
flags; ``tools/harvest_render.py --bodies tests/render/real_l31_bodies.jsonl --out
tests/render/real_l31_vectors.jsonl --port 18800`` records vLLM's answers. The bodies
exercise what that template does: the system block (``Cutting Knowledge Date``, the
``date_string`` default or kwarg), tools in the first user message (the
``tools_in_user_message`` default) or in the system block (the kwarg false, per request
or as the server's ``--default-chat-template-kwargs``), ``custom_tools``, JSON tool calls
and ``tool`` / ``ipython`` results, ``builtin_tools`` (``Environment: ipython``,
``<|python_tag|>`` calls, ``<|eom_id|>``), the template's own refusals
(``raise_exception``), the generation prompt and ``continue_final_message``, special
tokens written as text, and bodies vLLM refuses.

Usage::

    python tools/build_real_l31_bodies.py [--out tests/render/real_l31_bodies.jsonl]
"""

from __future__ import annotations

from typing import Any

from corpus_io import RENDER_DIR, write_main

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
FOLDER = "llama3_1_meta"
MAX_MODEL_LEN = 2048

SYSTEM = {"role": "system", "content": "  You are a helpful assistant.\n"}
USER = {"role": "user", "content": "What is the weather in Paris?"}
ASSISTANT = {"role": "assistant", "content": "It is sunny in Paris."}
USER2 = {"role": "user", "content": "And in Rome?"}
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city.",
    "parameters": {"type": "object",
                   "properties": {"city": {"type": "string", "description": "City name"},
                                  "unit": {"type": "string",
                                           "enum": ["celsius", "fahrenheit"]}},
                   "required": ["city"]}}}
SEARCH = {"type": "function", "function": {
    "name": "search", "description": "Suche im Netz — «Grüße», 日本語",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}},
                   "required": ["query"]}}}
TOOLS = [WEATHER, SEARCH]


def _call(name: str, arguments: str, ident: str = "call_0001") -> dict[str, Any]:
    return {"id": ident, "type": "function",
            "function": {"name": name, "arguments": arguments}}


CALL = {"role": "assistant", "content": None,
        "tool_calls": [_call("get_weather", "{\"city\": \"Paris\", \"unit\": \"celsius\"}")]}
RESULT = {"role": "tool", "tool_call_id": "call_0001",
          "content": "{\"temperature\": 21, \"unit\": \"celsius\"}"}
BRAVE_CALL = {"role": "assistant", "content": None,
              "tool_calls": [_call("brave_search", "{\"query\": \"weather in Paris\"}")]}
IPYTHON = {"role": "ipython", "content": "Sunny, 21 degrees."}
BUILTIN = {"builtin_tools": ["brave_search", "wolfram_alpha"]}
ALL_BUILTIN = {"builtin_tools": ["brave_search", "wolfram_alpha", "code_interpreter"]}
SYSTEM_TOOLS = {"tools_in_user_message": False}


def _chat() -> list[tuple[str, dict[str, Any]]]:
    return [
        # Turns, the system block and the generation prompt.
        ("user", {"messages": [USER]}),
        ("system-user", {"messages": [SYSTEM, USER]}),
        ("multi-turn", {"messages": [SYSTEM, USER, ASSISTANT, USER2]}),
        ("no-system-multi-turn", {"messages": [USER, ASSISTANT, USER2]}),
        ("system-only", {"messages": [SYSTEM]}),
        ("assistant-first", {"messages": [ASSISTANT, USER]}),
        ("empty-user", {"messages": [{"role": "user", "content": "   "}]}),
        ("developer", {"messages": [{"role": "developer", "content": "Be terse."}, USER]}),
        ("second-system", {"messages": [SYSTEM, USER, {"role": "system", "content": "More."}]}),
        ("no-generation-prompt", {"messages": [SYSTEM, USER, ASSISTANT],
                                  "add_generation_prompt": False}),
        ("continue-final", {"messages": [USER, {"role": "assistant", "content": "It is "}],
                            "continue_final_message": True, "add_generation_prompt": False}),
        ("continue-final-with-generation-prompt", {
            "messages": [USER, {"role": "assistant", "content": "It is"}],
            "continue_final_message": True}),
        ("continue-final-after-user", {"messages": [USER], "continue_final_message": True,
                                       "add_generation_prompt": False}),
        ("date-string", {"messages": [SYSTEM, USER],
                         "chat_template_kwargs": {"date_string": "02 Dec 2026"}}),
        ("date-string-empty", {"messages": [USER], "chat_template_kwargs": {"date_string": ""}}),
        ("parts-text", {"messages": [{"role": "user", "content": [
            {"type": "text", "text": "First part."}, {"type": "text", "text": "Second."}]}]}),
        ("parts-system", {"messages": [{"role": "system", "content": [
            {"type": "text", "text": "Be brief."}]}, USER]}),
        ("parts-input-text", {"messages": [{"role": "user", "content": [
            {"type": "input_text", "text": "Responses API part"}]}]}),
        ("special-text", {"messages": [{"role": "user", "content":
            "<|python_tag|>x<|eom_id|><|finetune_right_pad_id|><|reserved_special_token_3|>"
            "<|reserved_special_token_6|><|eot_id|>"}]}),
        ("unicode", {"messages": [{"role": "user", "content":
            "Übersetze «Grüße» — 日本語 😀 ∑x² \t tab\r\n end  "}]}),
        ("empty-conversation", {"messages": []}),
        ("unknown-model", {"messages": [USER], "model": "no-such-model"}),
        ("add-special-tokens", {"messages": [USER], "add_special_tokens": True}),
        ("cache-salt", {"messages": [USER], "cache_salt": "tenant-31"}),
        ("truncate-16", {"messages": [SYSTEM, USER], "truncate_prompt_tokens": 16}),
        ("max-tokens-over-limit", {"messages": [USER], "max_tokens": 4000}),
        ("long-over-limit", {"messages": [{"role": "user", "content": "alpha beta " * 1100}]}),
        # Custom tools: in the first user message (the default) or the system block.
        ("tools", {"messages": [USER], "tools": TOOLS}),
        ("tools-system", {"messages": [SYSTEM, USER], "tools": TOOLS}),
        ("tools-multi-turn", {"messages": [SYSTEM, USER, ASSISTANT, USER2], "tools": [WEATHER]}),
        ("tools-in-system", {"messages": [SYSTEM, USER], "tools": TOOLS,
                             "chat_template_kwargs": SYSTEM_TOOLS}),
        ("tools-in-system-no-user", {"messages": [SYSTEM], "tools": TOOLS,
                                     "chat_template_kwargs": SYSTEM_TOOLS}),
        ("tools-no-user", {"messages": [SYSTEM], "tools": TOOLS}),
        ("tools-choice-none", {"messages": [USER], "tools": TOOLS, "tool_choice": "none"}),
        ("tools-choice-required", {"messages": [USER], "tools": TOOLS,
                                   "tool_choice": "required"}),
        ("tools-choice-named", {"messages": [USER], "tools": TOOLS, "tool_choice": {
            "type": "function", "function": {"name": "get_weather"}}}),
        ("tools-choice-unknown", {"messages": [USER], "tools": TOOLS, "tool_choice": {
            "type": "function", "function": {"name": "nope"}}}),
        ("tools-first-user-parts", {"messages": [{"role": "user", "content": [
            {"type": "text", "text": "  Weather?  "}]}], "tools": [WEATHER]}),
        ("custom-tools-kwarg", {"messages": [USER], "chat_template_kwargs": {
            "custom_tools": [WEATHER]}}),
        # JSON tool calls and their results (role tool or ipython).
        ("tool-call-round-trip", {"messages": [SYSTEM, USER, CALL, RESULT], "tools": TOOLS}),
        ("tool-call-round-trip-in-system", {"messages": [USER, CALL, RESULT, ASSISTANT, USER2],
                                            "tools": TOOLS,
                                            "chat_template_kwargs": SYSTEM_TOOLS}),
        ("tool-call-no-tools", {"messages": [USER, CALL, RESULT]}),
        ("tool-call-with-content", {"messages": [USER, {**CALL, "content": "Let me check."},
                                                 RESULT], "tools": TOOLS}),
        ("tool-call-unicode-args", {"messages": [USER, {"role": "assistant", "tool_calls": [
            _call("search", "{\"query\": \"Grüße aus Köln 日本\", \"n\": 3}")]}, RESULT],
            "tools": TOOLS}),
        ("tool-call-empty-args", {"messages": [USER, {"role": "assistant", "tool_calls": [
            _call("search", "{}")]}], "tools": TOOLS, "add_generation_prompt": False}),
        ("tool-calls-two", {"messages": [USER, {"role": "assistant", "tool_calls": [
            _call("get_weather", "{\"city\": \"Paris\"}"),
            _call("get_weather", "{\"city\": \"Rome\"}", "call_0002")]}], "tools": TOOLS}),
        ("tool-result-parts", {"messages": [USER, CALL, {
            "role": "tool", "tool_call_id": "call_0001",
            "content": [{"type": "text", "text": "21 degrees"}]}], "tools": TOOLS}),
        ("tool-result-plain", {"messages": [USER, CALL, {
            "role": "tool", "tool_call_id": "call_0001", "content": "21 degrees"}],
            "tools": TOOLS}),
        ("ipython-result", {"messages": [USER, CALL, IPYTHON], "tools": TOOLS}),
        ("tool-result-first", {"messages": [RESULT, USER]}),
        # Built-in tools: Environment: ipython, <|python_tag|> calls, <|eom_id|>.
        ("builtin", {"messages": [SYSTEM, USER], "chat_template_kwargs": BUILTIN}),
        ("builtin-code-interpreter", {"messages": [USER], "chat_template_kwargs": ALL_BUILTIN}),
        ("builtin-only-code-interpreter", {"messages": [USER], "chat_template_kwargs": {
            "builtin_tools": ["code_interpreter"]}}),
        ("builtin-call", {"messages": [SYSTEM, USER, BRAVE_CALL, IPYTHON],
                          "chat_template_kwargs": BUILTIN}),
        ("builtin-call-tool-role", {"messages": [USER, BRAVE_CALL, {
            "role": "tool", "tool_call_id": "call_0001", "content": "Sunny."}, ASSISTANT,
            USER2], "chat_template_kwargs": BUILTIN}),
        ("builtin-call-two-args", {"messages": [USER, {"role": "assistant", "tool_calls": [
            _call("wolfram_alpha", "{\"query\": \"2+2\", \"format\": \"plain\"}")]}],
            "chat_template_kwargs": BUILTIN, "add_generation_prompt": False}),
        ("builtin-call-number-arg", {"messages": [USER, {"role": "assistant", "tool_calls": [
            _call("brave_search", "{\"query\": \"x\", \"count\": 3}")]}],
            "chat_template_kwargs": BUILTIN}),
        ("builtin-with-custom-call", {"messages": [USER, CALL, RESULT], "tools": [WEATHER],
                                      "chat_template_kwargs": BUILTIN}),
        ("builtin-with-tools-in-system", {"messages": [SYSTEM, USER], "tools": TOOLS,
                                          "chat_template_kwargs": {**BUILTIN, **SYSTEM_TOOLS,
                                                                   "date_string": "1 Jan 2025"}}),
        ("builtin-code-call", {"messages": [USER, {"role": "assistant", "tool_calls": [
            _call("code_interpreter", "{\"code\": \"print(1)\"}")]}, IPYTHON],
            "chat_template_kwargs": ALL_BUILTIN}),
        # Edges where the request's shape meets the template's tests.
        ("tool-call-args-not-json", {"messages": [USER, {"role": "assistant", "tool_calls": [
            _call("get_weather", "Paris, please")]}], "tools": TOOLS}),
        ("tool-call-args-list", {"messages": [USER, {"role": "assistant", "tool_calls": [
            _call("get_weather", "[1, 2]")]}], "tools": TOOLS}),
        ("builtin-call-args-list", {"messages": [USER, {"role": "assistant", "tool_calls": [
            _call("brave_search", "[\"x\"]")]}], "chat_template_kwargs": BUILTIN}),
        ("tool-calls-empty", {"messages": [USER, {"role": "assistant", "content": "Hi.",
                                                  "tool_calls": []}, USER2]}),
        ("tool-calls-null", {"messages": [USER, {"role": "assistant", "content": "Hi.",
                                                 "tool_calls": None}, USER2]}),
        ("assistant-content-null", {"messages": [USER, {"role": "assistant", "content": None},
                                                 USER2]}),
        ("user-content-null", {"messages": [{"role": "user", "content": None}]}),
        ("tools-empty", {"messages": [USER], "tools": []}),
        ("tools-no-parameters", {"messages": [USER], "tools": [{"type": "function", "function": {
            "name": "ping", "strict": True}}]}),
        ("tools-kwarg", {"messages": [USER], "chat_template_kwargs": {"tools": [WEATHER]}}),
        ("tools-and-custom-tools", {"messages": [USER], "tools": [WEATHER],
                                    "chat_template_kwargs": {"custom_tools": [SEARCH]}}),
        ("builtin-string", {"messages": [USER, BRAVE_CALL, IPYTHON],
                            "chat_template_kwargs": {"builtin_tools": "brave_search"}}),
        ("builtin-empty", {"messages": [USER], "chat_template_kwargs": {"builtin_tools": []}}),
        ("date-string-number", {"messages": [USER], "chat_template_kwargs": {"date_string": 5}}),
        ("tools-in-user-string", {"messages": [USER], "tools": [WEATHER],
                                  "chat_template_kwargs": {"tools_in_user_message": "false"}}),
        ("ipython-parts", {"messages": [USER, BRAVE_CALL, {"role": "ipython", "content": [
            {"type": "text", "text": "Sunny."}, {"type": "text", "text": "Warm."}]}],
            "chat_template_kwargs": BUILTIN}),
        ("name-field", {"messages": [{"role": "user", "name": "alice", "content": "Hi"}]}),
        ("reasoning-field", {"messages": [USER, {"role": "assistant", "content": "Sunny.",
                                                 "reasoning": "Look it up."}, USER2]}),
        ("add-generation-prompt-kwarg", {"messages": [USER], "chat_template_kwargs": {
            "add_generation_prompt": False}}),
        ("system-parts-two", {"messages": [{"role": "system", "content": [
            {"type": "text", "text": "One."}, {"type": "text", "text": " Two. "}]}, USER],
            "tools": [WEATHER], "chat_template_kwargs": SYSTEM_TOOLS}),
    ]


def _completions() -> list[tuple[str, dict[str, Any]]]:
    return [
        ("prompt", {"prompt": "The capital of France is"}),
        ("prompt-special-text", {"prompt": "<|python_tag|>brave_search.call(query=\"x\")"
                                           "<|eom_id|>"}),
        ("prompt-list", {"prompt": ["Once upon a time", "<|start_header_id|>user"]}),
        ("prompt-ids", {"prompt": [128000, 128010, 128008, 128004, 100]}),
        ("prompt-no-specials", {"prompt": "Hello", "add_special_tokens": False}),
    ]


SERVERS: dict[str, dict[str, Any]] = {
    "": {"--served-model-name": f"real-{FOLDER}", "--max-model-len": MAX_MODEL_LEN,
         "--enable-auto-tool-choice": True, "--tool-call-parser": "llama3_json"},
    # The server's own default: tools in the system block unless a request says otherwise.
    "system-tools/": {"--served-model-name": f"real-{FOLDER}-system-tools",
                      "--max-model-len": MAX_MODEL_LEN,
                      "--enable-auto-tool-choice": True, "--tool-call-parser": "llama3_json",
                      "--default-chat-template-kwargs": SYSTEM_TOOLS},
}
#: The bodies the second server answers too (its default kwargs change them).
SYSTEM_TOOLS_BODIES = ("user", "tools", "tools-no-user", "tool-call-round-trip",
                       "builtin-with-custom-call", "tools-choice-none")


def build() -> list[dict[str, Any]]:
    lines = []
    for tag, server in SERVERS.items():
        name = server["--served-model-name"]
        chat = _chat() if not tag else [b for b in _chat() if b[0] in SYSTEM_TOOLS_BODIES]
        completions = _completions() if not tag else []
        for endpoint, bodies in ((CHAT, chat), (COMPLETIONS, completions)):
            kind = "chat" if endpoint == CHAT else "completion"
            for ident, body in bodies:
                lines.append({"body": {"model": name, **body}, "endpoint": endpoint,
                              "id": f"{FOLDER}/{tag}{kind}-{ident}",
                              "model_dir": f"real:{FOLDER}", "server": server})
    return lines


def main(argv: list[str] | None = None) -> int:
    return write_main(__doc__.splitlines()[0], RENDER_DIR / "real_l31_bodies.jsonl", build, argv)


if __name__ == "__main__":
    raise SystemExit(main())
