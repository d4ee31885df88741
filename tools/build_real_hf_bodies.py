"""Build ``tests/render/real_hf_bodies.jsonl``: chat and completions bodies over real HF folders.

Maintainer tool. Every body names a real folder (``"model_dir": "real:<name>"``,
tests/render/real/<name>/, its large files fetched by tests/real_models.py) and the
render server's flags; ``tools/harvest_render.py --bodies tests/render/real_hf_bodies.jsonl
--out tests/render/real_hf_vectors.jsonl --port 18400`` records vLLM 0.31's answers.
Each folder gets the same families of bodies: system / user / assistant turns, tools
and tool calls, multi-part text, ``continue_final_message`` and
``add_generation_prompt``, ``chat_template_kwargs`` (``enable_thinking``),
``truncate_prompt_tokens``, prompts just under and over the context length (each
server runs with ``--max-model-len 2048`` so that the bound is reachable), and
bodies vLLM refuses (an ``input_text`` part, an unknown model, an empty conversation).

Usage::

    python tools/build_real_hf_bodies.py [--out tests/render/real_hf_bodies.jsonl]
"""

from __future__ import annotations

from typing import Any

from corpus_io import RENDER_DIR, folder_lines, write_main

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
MAX_MODEL_LEN = 2048
# llama2: LlamaTokenizer's rebuild on Llama 2's files; mistral_hf_llama2tok: model_type
# mistral with LlamaTokenizer (loaded as is) on the same files, since no registry ships a
# real Mistral tokenizer.json. Neither has a chat template: their chat bodies are vLLM's 400.
FOLDERS = ("qwen3", "deepseek_v3", "gemma3", "llama3", "llama3_1", "llama2",
           "mistral_hf_llama2tok")

SYSTEM = {"role": "system", "content": "You are a concise assistant. Answer in one sentence."}
USER = {"role": "user", "content": "What is the capital of France?"}
ASSISTANT = {"role": "assistant", "content": "The capital of France is Paris."}
USER2 = {"role": "user", "content": "And of Italy? Answer with the city only."}
UNICODE = ("Übersetze: «Grüße aus Köln» — 日本語のテキスト、中文文本, emoji 😀🤖, "
           "math ∑x² ≤ ∞, tabs\tand\nnewlines\r\n  indented")
CODE = "def f(x):\n    return {'a': [1, 2, 3], \"b\": x ** 2}  # comment\n\n\nprint(f(3))\n"
TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {"type": "object",
                       "properties": {"city": {"type": "string", "description": "City name"},
                                      "unit": {"type": "string",
                                               "enum": ["celsius", "fahrenheit"]}},
                       "required": ["city"]},
    },
}, {
    "type": "function",
    "function": {"name": "search", "description": "Search the web.",
                 "parameters": {"type": "object",
                                "properties": {"query": {"type": "string"}},
                                "required": ["query"]}},
}]
TOOL_CALL = {"role": "assistant", "content": None, "tool_calls": [{
    "id": "call_0001", "type": "function",
    "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]}
TOOL_RESULT = {"role": "tool", "tool_call_id": "call_0001",
               "content": "{\"temperature\": 21, \"unit\": \"celsius\"}"}


def _long_text(words: int) -> str:
    base = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota",
            "kappa", "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau",
            "upsilon", "phi", "chi", "psi", "omega"]
    return " ".join(base[i % len(base)] for i in range(words))


def _chat(name: str) -> list[tuple[str, dict[str, Any]]]:
    bodies: list[tuple[str, dict[str, Any]]] = [
        ("user", {"messages": [USER]}),
        ("system-user", {"messages": [SYSTEM, USER]}),
        ("multi-turn", {"messages": [SYSTEM, USER, ASSISTANT, USER2]}),
        ("no-system-multi-turn", {"messages": [USER, ASSISTANT, USER2]}),
        ("no-generation-prompt", {"messages": [SYSTEM, USER, ASSISTANT],
                                  "add_generation_prompt": False}),
        ("continue-final", {"messages": [USER, {"role": "assistant", "content": "The capital"}],
                            "continue_final_message": True, "add_generation_prompt": False}),
        ("continue-final-with-generation-prompt", {
            "messages": [USER, {"role": "assistant", "content": "The capital"}],
            "continue_final_message": True}),
        ("parts-text", {"messages": [{"role": "user", "content": [
            {"type": "text", "text": "First part."}, {"type": "text", "text": "Second part."}]}]}),
        ("parts-system", {"messages": [{"role": "system", "content": [
            {"type": "text", "text": "Be brief."}]}, USER]}),
        ("parts-input-text", {"messages": [{"role": "user", "content": [
            {"type": "input_text", "text": "Responses API part"}]}]}),
        ("parts-mixed-input-text", {"messages": [{"role": "user", "content": [
            {"type": "text", "text": "ok"}, {"type": "input_text", "text": "not ok"}]}]}),
        ("parts-output-text", {"messages": [{"role": "assistant", "content": [
            {"type": "output_text", "text": "alone"}]}, USER]}),
        ("parts-input-text-after-refusal", {"messages": [{"role": "user", "content": [
            {"type": "refusal", "refusal": "no"}, {"type": "input_text", "text": "yes"}]}]}),
        ("parts-input-text-after-string", {"messages": [{"role": "user", "content": [
            "a string part", {"type": "input_text", "text": "then input_text"}]}]}),
        ("parts-input-text-after-empty-text", {"messages": [{"role": "user", "content": [
            {"type": "text"}, {"type": "input_text", "text": "then input_text"}]}]}),
        ("unicode", {"messages": [{"role": "user", "content": UNICODE}]}),
        ("code", {"messages": [SYSTEM, {"role": "user", "content": CODE}]}),
        ("developer", {"messages": [{"role": "developer", "content": "Answer tersely."},
                                    USER]}),
        ("system-only", {"messages": [SYSTEM]}),
        ("assistant-first", {"messages": [ASSISTANT, USER]}),
        ("empty-user", {"messages": [{"role": "user", "content": ""}]}),
        ("empty-conversation", {"messages": []}),
        ("add-special-tokens", {"messages": [USER], "add_special_tokens": True}),
        ("thinking-off", {"messages": [USER], "chat_template_kwargs": {"enable_thinking": False}}),
        ("thinking-on", {"messages": [USER], "chat_template_kwargs": {"enable_thinking": True}}),
        ("reasoning-none", {"messages": [USER], "reasoning_effort": "none"}),
        ("reasoning-high", {"messages": [USER], "reasoning_effort": "high"}),
        ("thinking-multi-turn", {"messages": [USER, {
            "role": "assistant", "content": "<think>\nEasy.\n</think>\n\nParis."}, USER2],
            "chat_template_kwargs": {"enable_thinking": False}}),
        ("tools-auto", {"messages": [USER], "tools": TOOLS}),
        ("tools-none", {"messages": [USER], "tools": TOOLS, "tool_choice": "none"}),
        ("tools-named", {"messages": [USER], "tools": TOOLS, "tool_choice": {
            "type": "function", "function": {"name": "get_weather"}}}),
        ("tools-required", {"messages": [USER], "tools": TOOLS, "tool_choice": "required"}),
        ("tools-unknown-name", {"messages": [USER], "tools": TOOLS, "tool_choice": {
            "type": "function", "function": {"name": "nope"}}}),
        ("tool-call-round-trip", {"messages": [SYSTEM, USER, TOOL_CALL, TOOL_RESULT],
                                  "tools": TOOLS}),
        ("tool-call-no-tools", {"messages": [USER, TOOL_CALL, TOOL_RESULT]}),
        ("truncate-16", {"messages": [SYSTEM, USER], "truncate_prompt_tokens": 16}),
        ("truncate-minus-one", {"messages": [SYSTEM, USER], "truncate_prompt_tokens": -1}),
        ("truncate-over-limit", {"messages": [USER], "truncate_prompt_tokens": 4096}),
        ("long-under-limit", {"messages": [{"role": "user", "content": _long_text(1500)}]}),
        ("long-over-limit", {"messages": [{"role": "user", "content": _long_text(2300)}]}),
        ("long-truncated", {"messages": [{"role": "user", "content": _long_text(2300)}],
                            "truncate_prompt_tokens": 1000}),
        ("max-tokens-over-limit", {"messages": [USER], "max_tokens": 4000}),
        ("cache-salt", {"messages": [USER], "cache_salt": "tenant-a"}),
        ("unknown-model", {"messages": [USER], "model": "no-such-model"}),
        ("name-field", {"messages": [{"role": "user", "name": "alice", "content": "Hi"}]}),
    ]
    return [(f"chat-{i}", {"model": name, **b}) for i, b in bodies]


def _completions(name: str) -> list[tuple[str, dict[str, Any]]]:
    bodies: list[tuple[str, dict[str, Any]]] = [
        ("prompt", {"prompt": "The capital of France is"}),
        ("prompt-list", {"prompt": ["Once upon a time", "In a galaxy far away"]}),
        ("prompt-ids", {"prompt": [1, 2, 3, 4, 5, 100, 1000]}),
        ("prompt-no-specials", {"prompt": "Hello", "add_special_tokens": False}),
        ("prompt-unicode", {"prompt": UNICODE}),
        ("prompt-code", {"prompt": CODE}),
        ("prompt-special-text", {"prompt": "<|im_start|>user\n<bos><s>[INST] x"}),
        ("prompt-empty", {"prompt": ""}),
        ("prompt-truncate", {"prompt": _long_text(300), "truncate_prompt_tokens": 32}),
        ("prompt-long-under", {"prompt": _long_text(1500)}),
        ("prompt-long-over", {"prompt": _long_text(2300)}),
        ("prompt-echo", {"prompt": "Echo me", "echo": True}),
        ("prompt-cache-salt", {"prompt": "Salted", "cache_salt": "tenant-b"}),
    ]
    return [(f"completion-{i}", {"model": name, **b}) for i, b in bodies]


def build() -> list[dict[str, Any]]:
    lines = []
    for folder in FOLDERS:
        name = f"real-{folder}"
        server = {"--served-model-name": name, "--max-model-len": MAX_MODEL_LEN,
                  "--enable-auto-tool-choice": True, "--tool-call-parser": "hermes"}
        lines += folder_lines(folder, server,
                              ((CHAT, _chat(name)), (COMPLETIONS, _completions(name))))
    return lines


def main(argv: list[str] | None = None) -> int:
    return write_main(__doc__.splitlines()[0], RENDER_DIR / "real_hf_bodies.jsonl", build, argv)


if __name__ == "__main__":
    raise SystemExit(main())
