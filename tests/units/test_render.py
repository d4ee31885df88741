"""prefixkey.render on folders built here: each behaviour of vLLM 0.31's rendering, one test.

No expected token id here comes from prefixkey itself: ids are compared with
an independent path (``tokenizers`` encoding the rendered text, the raw
``tokenizer.json``, or the ids of another body that must render the same),
and texts with what the template must produce. vLLM's own ids are replayed
in tests/render/test_render_vectors.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from render_folders import CHATML, STRING_TEMPLATE, build_folder
from tokenizers import Tokenizer

from prefixkey import Hasher, LoRA
from prefixkey.render import (
    LoRAModule,
    ModelFolderError,
    Renderer,
    RenderRequestError,
    RenderUnsupportedError,
    ServerOptions,
    parse_lora_module,
)

USER = {"role": "user", "content": "Hello, world!"}


def renderer(folder: Path, **options: Any) -> Renderer:
    return Renderer(ServerOptions(model=str(folder), **options))


def raw(folder: Path) -> Tokenizer:
    return Tokenizer.from_file(str(folder / "tokenizer.json"))


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("models")
    return {kind: build_folder(root, kind) for kind in ("generic", "qwen2", "llama")}


# ------------------------------------------------------------------ tokenizer and template


def test_chat_ids_are_the_rendered_text_encoded_without_special_tokens(
        folders: dict[str, Path]) -> None:
    rendered = renderer(folders["generic"]).render_chat({"messages": [USER]})
    assert rendered.prompt == "<|im_start|>user\nHello, world!<|im_end|>\n<|im_start|>assistant\n"
    assert list(rendered.token_ids) == raw(folders["generic"]).encode(
        rendered.prompt, add_special_tokens=False).ids


def test_qwen2_is_encoded_with_qwen2s_pre_tokenizer_not_the_files(
        folders: dict[str, Path]) -> None:
    # tokenizer.json declares a whitespace split; transformers 5 rebuilds Qwen2's byte level.
    r = renderer(folders["qwen2"])
    text = "Hello, world! don't"
    ids = r.tokenizer.encode(text, add_special_tokens=False)
    assert ids != raw(folders["qwen2"]).encode(text, add_special_tokens=False).ids
    vocab = raw(folders["qwen2"]).get_vocab()
    pieces = [next(k for k, v in vocab.items() if v == i) for i in ids]
    assert "".join(pieces) == "Hello,Ġworld!Ġdon't"  # byte level keeps the spaces


def test_completions_add_the_bos_the_post_processor_adds(folders: dict[str, Path]) -> None:
    r = renderer(folders["llama"])
    bos = raw(folders["llama"]).token_to_id("<s>")
    (with_bos,) = r.render_completion({"prompt": "Hello"})
    (without,) = r.render_completion({"prompt": "Hello", "add_special_tokens": False})
    assert list(with_bos.token_ids) == [bos, *without.token_ids]
    # A prompt that starts with the BOS text gets a second one (vLLM does not strip it).
    (double,) = r.render_completion({"prompt": "<s>Hello"})
    assert list(double.token_ids[:2]) == [bos, bos]


def test_chat_add_special_tokens_true_adds_a_second_bos(folders: dict[str, Path]) -> None:
    folder = build_folder(folders["llama"].parent / "bos", "llama", chat_template=STRING_TEMPLATE)
    r = renderer(folder)
    bos = raw(folder).token_to_id("<s>")
    plain = r.render_chat({"messages": [USER]})
    doubled = r.render_chat({"messages": [USER], "add_special_tokens": True})
    assert plain.prompt is not None and plain.prompt.startswith("<s>")
    assert list(doubled.token_ids) == [bos, *plain.token_ids]


def test_token_id_prompts_are_used_verbatim(folders: dict[str, Path]) -> None:
    r = renderer(folders["llama"])
    (one,) = r.render_completion({"prompt": [5, 6, 7]})
    two = r.render_completion({"prompt": [[5, 6], [7]]})
    assert list(one.token_ids) == [5, 6, 7]
    assert [list(x.token_ids) for x in two] == [[5, 6], [7]]


def test_a_list_of_prompts_renders_each_as_its_own_request(folders: dict[str, Path]) -> None:
    r = renderer(folders["generic"])
    both = r.render_completion({"prompt": ["Hello", "world"]})
    assert [list(x.token_ids) for x in both] == [
        list(r.render_completion({"prompt": p})[0].token_ids) for p in ("Hello", "world")]


def test_truncation_keeps_the_side_the_body_asks(folders: dict[str, Path]) -> None:
    r = renderer(folders["generic"])
    text = "The quick brown fox jumps over the lazy dog."
    (full,) = r.render_completion({"prompt": text})
    assert len(full.token_ids) > 4
    (default,) = r.render_completion({"prompt": text, "truncate_prompt_tokens": 4})
    (left,) = r.render_completion({"prompt": text, "truncate_prompt_tokens": 4,
                                   "truncation_side": "left"})
    (right,) = r.render_completion({"prompt": text, "truncate_prompt_tokens": 4,
                                    "truncation_side": "right"})
    assert list(default.token_ids) == list(left.token_ids) == list(full.token_ids[-4:])
    assert list(right.token_ids) == list(full.token_ids[:4])


def test_prompts_over_the_context_length_are_refused(folders: dict[str, Path]) -> None:
    r = renderer(folders["generic"], max_model_len=40)
    with pytest.raises(RenderRequestError) as info:
        r.render_completion({"prompt": "Hello, world! " * 20})
    assert info.value.field == "input_tokens" and info.value.status == 400
    with pytest.raises(RenderRequestError) as info:
        r.render_completion({"prompt": "x", "max_tokens": 41})
    assert info.value.field == "max_tokens"


def test_the_longest_token_is_looked_up_only_for_a_text_past_the_context_length(
        folders: dict[str, Path]) -> None:
    """Listing the vocabulary costs a quarter of a build: a text within the context
    length in characters is within vLLM's character bound whatever the longest token."""
    r = renderer(folders["generic"], max_model_len=200)
    r.render_completion({"prompt": "Hello"})
    r.render_chat({"messages": [USER]})
    assert r.tokenizer._max_chars == []
    longest = max(map(len, raw(folders["generic"]).get_vocab(with_added_tokens=True)))
    with pytest.raises(RenderRequestError) as info:
        r.render_completion({"prompt": "x" * (200 * longest + 1)})
    assert info.value.field == "input_text"
    assert r.tokenizer.max_chars_per_token == longest


def test_content_format_is_detected_from_the_templates_syntax_tree(
        folders: dict[str, Path]) -> None:
    parts = {"role": "user", "content": [{"type": "text", "text": "a"},
                                         {"type": "text", "text": "b"}]}
    # CHATML iterates message.content: 'openai', the template joins the parts itself.
    assert renderer(folders["generic"]).render_chat({"messages": [parts]}).prompt == (
        "<|im_start|>user\nab<|im_end|>\n<|im_start|>assistant\n")
    # STRING_TEMPLATE prints message.content: 'string', vLLM joins the parts with newlines.
    string = build_folder(folders["generic"].parent / "s", "generic",
                          chat_template=STRING_TEMPLATE)
    assert renderer(string).render_chat({"messages": [parts]}).prompt == (
        "<|endoftext|>[user] a\nb\n[assistant]")
    forced = renderer(folders["generic"], chat_template_content_format="string")
    assert forced.render_chat({"messages": [parts]}).prompt == (
        "<|im_start|>user\na\nb<|im_end|>\n<|im_start|>assistant\n")


def test_a_dict_of_named_templates_picks_tool_use_with_tools(tmp_path: Path) -> None:
    folder = build_folder(tmp_path, "generic", chat_template=None, tokenizer_config={
        "chat_template": [{"name": "default", "template": "D{{ messages[0].content }}"},
                          {"name": "tool_use", "template": "T{{ messages | length }}"}]})
    r = renderer(folder, enable_auto_tool_choice=True, tool_call_parser="hermes")
    tools = [{"type": "function", "function": {"name": "f"}}]
    assert r.render_chat({"messages": [USER]}).prompt == "DHello, world!"
    assert r.render_chat({"messages": [USER], "tools": tools}).prompt == "T1"
    # A trusted request may name one; the server flag cannot (vLLM reads it as a file).
    named = renderer(folder, trust_request_chat_template=True)
    assert named.render_chat({"messages": [USER], "chat_template": "tool_use"}).prompt == (
        "T1")
    with pytest.raises(RenderUnsupportedError):
        renderer(folder, chat_template="tool_use")


def test_tools_are_dumped_as_vllm_dumps_them(tmp_path: Path) -> None:
    # Guarded: vLLM 0.31's start-up probe renders it without tools, where jinja2's tojson
    # of an undefined value raises TypeError and stops the server.
    folder = build_folder(tmp_path, "generic",
                          chat_template="{% if tools %}{{ tools | tojson }}{% endif %}")
    r = renderer(folder, enable_auto_tool_choice=True, tool_call_parser="hermes")
    tools = [{"type": "function", "function": {"name": "f", "extra": 1}},
             {"type": "function", "defer_loading": True,
              "function": {"name": "g", "strict": True, "parameters": {"b": 1, "a": 2}}}]
    assert json.loads(r.render_chat({"messages": [USER], "tools": tools}).prompt or "") == [
        {"type": "function", "function": {"name": "f", "description": None, "parameters": None}},
        {"type": "function", "function": {"name": "g", "description": None,
                                          "parameters": {"b": 1, "a": 2}, "strict": True,
                                          "defer_loading": True},
         "defer_loading": True}]


def test_tool_call_arguments_become_objects(tmp_path: Path) -> None:
    folder = build_folder(tmp_path, "generic", chat_template=(
        "{% for m in messages %}{% for c in m.tool_calls or [] %}"
        "{{ c.function.arguments | tojson }};{% endfor %}{% endfor %}"))
    r = renderer(folder)
    calls = [{"id": str(i), "type": "function", "function": {"name": "f", "arguments": a}}
             for i, a in enumerate(['{"x": 1}', "not json", "[1]", ""])]
    body = {"messages": [USER, {"role": "assistant", "content": None, "tool_calls": calls}]}
    assert r.render_chat(body).prompt == '{"x": 1};{};{};{};'
    # The request model wants arguments as a JSON string (and an id).
    for call in ({"id": "a", "type": "function", "function": {"name": "f", "arguments": {}}},
                 {"type": "function", "function": {"name": "f", "arguments": "{}"}}):
        with pytest.raises(RenderRequestError):
            r.render_chat({"messages": [USER, {"role": "assistant", "tool_calls": [call]}]})


@pytest.mark.parametrize("arguments", ["[" * 1000 + "]" * 1000, '{"n": ' + "7" * 4301 + "}"])
def test_tool_call_arguments_python_cannot_parse_are_typed(tmp_path: Path,
                                                          arguments: str) -> None:
    """Nesting 1,000 deep or a 4,301-digit int: a typed refusal, not a traceback."""
    r = renderer(build_folder(tmp_path, "generic", chat_template="{{ messages }}"))
    call = {"id": "a", "type": "function", "function": {"name": "f", "arguments": arguments}}
    with pytest.raises(RenderUnsupportedError) as info:
        r.render_chat({"messages": [USER, {"role": "assistant", "tool_calls": [call]}]})
    assert info.value.field == "messages[1].tool_calls[0].function.arguments"


def test_developer_becomes_system_unless_the_template_names_it(tmp_path: Path) -> None:
    template = "{% for m in messages %}{{ m.role }}={{ m.content }}|{% endfor %}"
    r = renderer(build_folder(tmp_path / "a", "generic", chat_template=template))
    messages = [{"role": "system", "content": "s"}, USER,
                {"role": "developer", "content": "d"}]
    assert r.render_chat({"messages": messages, "add_generation_prompt": False}).prompt == (
        "system=s\n\nd|user=Hello, world!|")
    named = renderer(build_folder(tmp_path / "b", "generic",
                                  chat_template=template + "{# 'developer' #}"))
    assert named.render_chat({"messages": messages}).prompt == (
        "system=s|user=Hello, world!|developer=d|")


def test_template_kwargs_are_merged_and_filtered(tmp_path: Path) -> None:
    template = "{{ greeting }}/{{ enable_thinking }}/{{ extra is defined }}"
    folder = build_folder(tmp_path, "generic", chat_template=template)
    r = renderer(folder, default_chat_template_kwargs={"greeting": "hi", "extra": 1})
    assert r.render_chat({"messages": [USER]}).prompt == "hi//True"
    body = {"messages": [USER], "chat_template_kwargs": {"greeting": "yo", "extra": None,
                                                         "unused": 1}}
    assert r.render_chat(body).prompt == "yo//True"  # null means "use the default"
    assert r.render_chat({"messages": [USER], "reasoning_effort": "none"}).prompt == (
        "hi/False/True")
    both = {"messages": [USER], "reasoning_effort": "high",
            "chat_template_kwargs": {"enable_thinking": False}}
    assert r.render_chat(both).prompt == "hi/False/True"


def test_continue_final_message_leaves_the_last_turn_open(folders: dict[str, Path]) -> None:
    r = renderer(folders["generic"])
    body = {"messages": [USER, {"role": "assistant", "content": "The answer is"}],
            "add_generation_prompt": False, "continue_final_message": True}
    assert r.render_chat(body).prompt == (
        "<|im_start|>user\nHello, world!<|im_end|>\n<|im_start|>assistant\nThe answer is")
    with pytest.raises(RenderRequestError):
        r.render_chat({**body, "add_generation_prompt": True})


def test_strftime_now_reads_the_injected_clock(tmp_path: Path) -> None:
    folder = build_folder(tmp_path, "generic", chat_template="{{ strftime_now('%d %b %Y') }}")
    r = Renderer(ServerOptions(model=str(folder)), clock=lambda: datetime(2026, 7, 4))
    assert r.render_chat({"messages": [USER]}).prompt == "04 Jul 2026"


def test_raise_exception_is_a_typed_error(tmp_path: Path) -> None:
    folder = build_folder(tmp_path, "generic",
                          chat_template="{{ raise_exception('roles must alternate') }}")
    with pytest.raises(RenderRequestError, match="roles must alternate"):
        renderer(folder).render_chat({"messages": [USER]})


# ----------------------------------------------------------------- model, LoRA, salt, reuse


def test_model_names_pick_the_base_model_or_a_lora(folders: dict[str, Path]) -> None:
    r = renderer(folders["generic"], served_model_name=("base",),
                 lora_modules=(parse_lora_module("sql=/adapters/sql"),
                               parse_lora_module('{"name": "py", "path": "/adapters/py"}')))
    assert r.render_chat({"messages": [USER], "model": "base"}).request.lora is None
    assert r.render_chat({"messages": [USER], "model": "py"}).request.lora == LoRA(
        "py", "/adapters/py", 2)
    with pytest.raises(RenderRequestError) as info:
        r.render_chat({"messages": [USER], "model": str(folders["generic"])})
    assert info.value.status == 404 and info.value.field == "model"


def test_cache_salt_and_lora_reach_the_keys(folders: dict[str, Path]) -> None:
    r = renderer(folders["generic"], lora_modules=(LoRAModule("sql", "/a/sql"),))
    rendered = r.render_chat({"messages": [USER] * 20, "model": "sql", "cache_salt": "s"})
    assert rendered.request.cache_salt == "s"
    hasher = Hasher(block_size=4)
    assert hasher.block_hashes(rendered.request) != hasher.block_hashes(rendered.token_ids)
    with pytest.raises(RenderRequestError) as info:
        r.render_chat({"messages": [USER], "cache_salt": "a/b"})
    assert info.value.field == "cache_salt"


def test_kv_transfer_prompt_token_ids_are_used_verbatim(folders: dict[str, Path]) -> None:
    r = renderer(folders["generic"])
    body = {"messages": [USER], "kv_transfer_params": {"prompt_token_ids": [9, 8, 7]}}
    assert list(r.render_chat(body).token_ids) == [9, 8, 7]


# --------------------------------------------------------------------------- refusals


def test_tools_without_auto_tool_choice_are_refused_as_vllm_refuses(
        folders: dict[str, Path]) -> None:
    tools = [{"type": "function", "function": {"name": "f"}}]
    with pytest.raises(RenderRequestError) as info:
        renderer(folders["generic"]).render_chat({"messages": [USER], "tools": tools})
    assert info.value.field == "tool_choice"
    none = renderer(folders["generic"]).render_chat(
        {"messages": [USER], "tools": tools, "tool_choice": "none"})
    assert "Tools:" in (none.prompt or "")
    excluded = renderer(folders["generic"], exclude_tools_when_tool_choice_none=True)
    assert "Tools:" not in (excluded.render_chat(
        {"messages": [USER], "tools": tools, "tool_choice": "none"}).prompt or "")


def test_an_untrusted_request_template_is_refused(folders: dict[str, Path]) -> None:
    body = {"messages": [USER], "chat_template": "{{ 'x' }}"}
    with pytest.raises(RenderRequestError, match="trust-request-chat-template"):
        renderer(folders["generic"]).render_chat(body)
    trusted = renderer(folders["generic"], trust_request_chat_template=True)
    assert trusted.render_chat(body).prompt == "x"


@pytest.mark.parametrize("source", [
    "{{ 10 ** 5000 }}",  # folded at compile time into a 5,001-digit literal
    "{{ " + "(" * 300 + "1" + ")" * 300 + " }}",
    "{% for x in y %}" * 200 + "{% endfor %}" * 200,
])
def test_a_trusted_template_that_does_not_compile_is_typed(folders: dict[str, Path],
                                                           source: str) -> None:
    trusted = renderer(folders["generic"], trust_request_chat_template=True)
    # 10 ** 5000: a request's template folds no operator (a bounded one, see
    # test_request_template_bounds.py): refused by that bound, on the same field.
    # The others: the compiler's own message, as vLLM answers it, and a hint saying so.
    with pytest.raises(RenderRequestError) as info:
        trusted.render_chat({"messages": [USER], "chat_template": source})
    assert info.value.field == "chat_template"
    assert "vLLM has none" in str(info.value) or \
        "does not compile" in (info.value.hint or ""), info.value


def test_images_are_refused_pointing_to_the_render_endpoint(folders: dict[str, Path]) -> None:
    image = {"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}
    with pytest.raises(RenderUnsupportedError, match="render endpoint") as info:
        renderer(folders["generic"]).render_chat({"messages": [image]})
    assert info.value.field == "messages[0].content[0]"


@pytest.mark.parametrize(("config", "tokenizer_config", "field"), [
    ({"architectures": ["InklingForCausalLM"]}, {}, "config.json"),
    ({"architectures": ["KimiK3ForConditionalGeneration"]}, {}, "config.json"),
    ({}, {"tokenizer_class": "TapasTokenizer"}, "tokenizer_config.json"),
    ({}, {"auto_map": {"AutoTokenizer": ["x.Tok", None]}}, "tokenizer_config.json"),
    ({"model_type": "paligemma"}, {"chat_template": None}, "chat_template"),
])
def test_folders_that_cannot_render_exactly_are_refused(
        tmp_path: Path, config: dict[str, Any], tokenizer_config: dict[str, Any],
        field: str) -> None:
    folder = build_folder(tmp_path, "generic", config=config,
                          tokenizer_config=tokenizer_config,
                          chat_template=None if "chat_template" in tokenizer_config else CHATML)
    if tokenizer_config.get("chat_template", "") is None:
        data = json.loads((folder / "tokenizer_config.json").read_text())
        data.pop("chat_template", None)
        (folder / "tokenizer_config.json").write_text(json.dumps(data))
    with pytest.raises(RenderUnsupportedError) as info:
        renderer(folder)
    assert info.value.field == field


def test_a_folder_without_any_vocabulary_file_is_refused(tmp_path: Path) -> None:
    """No tokenizer.json and nothing transformers converts one from (render/_hf_converted.py)."""
    folder = build_folder(tmp_path, "generic")
    (folder / "tokenizer.json").unlink()
    with pytest.raises(RenderUnsupportedError,
                       match=r"neither tokenizer.json nor tokenizer.model"):
        renderer(folder)


def test_unverified_releases_and_bad_flags_are_refused(folders: dict[str, Path]) -> None:
    with pytest.raises(RenderUnsupportedError):
        ServerOptions(model="m", vllm_version="0.28.0")
    with pytest.raises(RenderUnsupportedError):
        ServerOptions(model="m", tokenizer_mode="kimi_k3")
    with pytest.raises(ModelFolderError):
        ServerOptions(model="m", enable_auto_tool_choice=True)
    with pytest.raises(ModelFolderError):
        renderer(folders["generic"], max_model_len=10**6)
    with pytest.raises(ModelFolderError):
        parse_lora_module("{not json")


def test_a_missing_template_is_vllms_error(tmp_path: Path) -> None:
    folder = build_folder(tmp_path, "generic", chat_template=None)
    with pytest.raises(RenderRequestError, match="chat template"):
        renderer(folder).render_chat({"messages": [USER]})
    (rendered,) = renderer(folder).render_completion({"prompt": "Hello"})
    assert len(rendered.token_ids) > 0


def test_a_trusted_kwargs_template_renders_but_does_not_set_the_format(tmp_path: Path) -> None:
    # vLLM detects the content format from the folder's template (STRING_TEMPLATE: 'string',
    # parts joined), then renders with the template chat_template_kwargs carries.
    folder = build_folder(tmp_path, "generic", chat_template=STRING_TEMPLATE)
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"},
                                                      {"type": "text", "text": "b"}]}],
            "chat_template_kwargs": {"chat_template": "{{ messages[0].content }}"}}
    with pytest.raises(RenderRequestError, match="trust-request-chat-template"):
        renderer(folder).render_chat(body)
    assert renderer(folder, trust_request_chat_template=True).render_chat(body).prompt == "a\nb"
    with pytest.raises(RenderRequestError):
        renderer(folder).render_chat({"messages": [USER],
                                      "chat_template_kwargs": {"tools": "not a list"}})


def test_json_values_are_read_as_vllms_request_models_read_them(
        folders: dict[str, Path]) -> None:
    r = renderer(folders["generic"])
    (lenient,) = r.render_completion({"prompt": [1, "2", 3.0, True], "max_tokens": "4"})
    assert list(lenient.token_ids) == [1, 2, 3, 1]
    assert [list(x.token_ids) for x in r.render_completion({"prompt": ["1", "2"]})] == [
        list(r.render_completion({"prompt": p})[0].token_ids) for p in ("1", "2")]
    for bad in ({"prompt": [1, 2.5]}, {"prompt": [1, "a"]}, {"prompt": ["a", [1]]}):
        with pytest.raises((RenderRequestError, RenderUnsupportedError)):
            r.render_completion(bad)
    with pytest.raises(RenderRequestError):
        r.render_chat({"messages": [{"role": "user", "content": None}]})
    assert r.render_chat({"messages": [{"role": "user"}]}).prompt == (
        "<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n")


def test_a_tokenizer_folder_brings_its_own_tokenizer_class(folders: dict[str, Path],
                                                           tmp_path: Path) -> None:
    body = {"prompt": "Hello, world! don't", "max_tokens": 1}
    split = renderer(folders["generic"], tokenizer=str(folders["qwen2"]))
    (ids,) = split.render_completion(body)
    assert list(ids.token_ids) == list(renderer(folders["qwen2"]).render_completion(body)[0]
                                       .token_ids)
    bare = build_folder(tmp_path, "qwen2")
    (bare / "config.json").unlink()
    with pytest.raises(RenderUnsupportedError):
        renderer(folders["generic"], tokenizer=str(bare))


def test_a_text_models_renderer_imports_no_pillow(folders: dict[str, Path]) -> None:
    # Pillow loads when an image is first decoded (multimodal/_image.py), not at build:
    # the build's image options are still checked then, without it.
    code = ("import sys\nfrom prefixkey.render import Renderer, ServerOptions\n"
            f"Renderer(ServerOptions(model={str(folders['generic'])!r}))\n"
            "assert 'prefixkey.multimodal' in sys.modules\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'PIL'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["[]"]


#: vLLM 0.32's bound on reused ids (renderers/base.py ``validate_token_ids``): config.json's
#: vocab_size, the tokenizer's largest id (None: not reproduced for it), the last id reused,
#: and the outcome: taken, vLLM's 400, or refused as not reproduced.
_REUSE_BOUNDS = [
    (100, 120, 99, "taken"), (100, 120, 120, "taken"), (100, 120, 121, "400"),
    (100, 50, 99, "taken"), (100, 50, 100, "400"),
    (100, None, 99, "taken"), (100, None, 100, "refused"),
    (None, 120, 120, "taken"), (None, 120, 121, "refused"),
]


@pytest.mark.parametrize(("vocab_size", "largest", "last", "outcome"), _REUSE_BOUNDS)
def test_reused_ids_take_the_larger_of_the_two_bounds(
        vocab_size: int | None, largest: int | None, last: int, outcome: str) -> None:
    from prefixkey.render import RenderRequestError, RenderUnsupportedError
    from prefixkey.render._reuse import reused_prompt_ids

    body = {"messages": [USER]}
    bound = None if largest is None else (lambda: largest)
    if outcome == "taken":
        assert reused_prompt_ids([5, last], "checked", body, vocab_size,
                                 max_token_id=bound) == [5, last]
        return
    error = RenderRequestError if outcome == "400" else RenderUnsupportedError
    with pytest.raises(error) as info:
        reused_prompt_ids([5, last], "checked", body, vocab_size, max_token_id=bound)
    assert info.value.field == "kv_transfer_params.prompt_token_ids"
    if outcome == "400":
        assert str(info.value).endswith(f"Token id {last} is out of vocabulary")
