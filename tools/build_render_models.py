"""Build the small model folders of the render corpus (``tests/render/models/``).

Maintainer tool. Each folder holds the files vLLM's renderer reads — ``config.json``,
``tokenizer.json``, ``tokenizer_config.json``, a chat template, the special-token map and
``generation_config.json`` — and no weights: vLLM's GPU-less render server
(``vllm launch render``) builds its model config and tokenizer from them alone. The
tokenizers are trained here with ``tokenizers`` on a fixed text, single-threaded, so the
same command always writes the same bytes (``--check`` verifies a checkout against it).

Usage::

    python tools/build_render_models.py [--out tests/render/models] [--check]

The folders cover the tokenizer models (byte-level BPE, WordLevel, Unigram/Metaspace,
byte-fallback BPE), the ``model_type``s whose tokenizer transformers 5 builds differently
(``qwen2`` is in its ``MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS``; ``llama`` with
``LlamaTokenizer`` and with ``PreTrainedTokenizerFast``), and template features: system
prompts, multi-turn, tools and tool calls, content-part lists, loop controls, whitespace
control, ``raise_exception``, a dict of named templates, template kwargs, ``documents``,
the ``developer`` role. The templates are written for this corpus (not copied).
"""

# The chat templates and texts are data: long template lines and look-alike characters
# (full-width, curly quotes) are on purpose.
# ruff: noqa: E501, RUF001

from __future__ import annotations

import os

# Rayon's thread pool is sized on first use: one thread keeps training order fixed.
os.environ["RAYON_NUM_THREADS"] = "1"

import argparse
import filecmp
import json
import math
import shutil
import sys
import tempfile
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenizers import (
    Regex,
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    processors,
    trainers,
)

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "tests" / "render" / "models"

# Training text: several scripts, digits, code, JSON and the chat markup words, so the
# vocabularies have real merges for what the bodies send (and gaps for the rest).
_PARAGRAPHS = [
    "The quick brown fox jumps over the lazy dog. A router receives requests and sends "
    "each one to the replica that already holds its prefix in the cache.",
    "You are a helpful assistant. Answer the question briefly and politely. What is the "
    "weather like in Paris today? It is sunny with a high of 21 degrees.",
    "system user assistant tool developer function name arguments description "
    "parameters properties required type object string integer boolean array null",
    'def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n{"city": "Paris", "unit": '
    '"celsius", "days": [1, 2, 3], "ok": true}',
    "Numbers: 0 1 2 3 4 5 6 7 8 9 10 42 100 2024 3.14159 1,000,000 12345678901234567890",
    "Café, naïve, résumé, façade, Zürich, Ærø, São Paulo, Kraków, İstanbul, Þingvellir.",
    "Привет, как дела? Всё хорошо, спасибо. Ελληνικά γράμματα. שלום עולם. مرحبا بالعالم.",
    "你好，世界。今天天气很好。我们去公园散步吧。日本語のテキストです。한국어 문장입니다.",
    "Emoji: 😀 🎉 👍🏽 🇫🇷 ❤️ — and symbols: © ® ™ € £ ¥ § ¶ • … « » „ “ ” ‘ ’",
    "Search the documents for the answer. Title: Tides. Text: The moon's gravity pulls "
    "the oceans, which rise and fall twice a day.",
    "get_weather get_time search_docs lookup calculator location timezone query result "
    "celsius fahrenheit tool_call tool_response tools",
    "Think step by step. First, read the question. Then, reason about it. Finally, give "
    "the answer in one sentence.",
    "\t\tIndented\ttabs\nand\r\nwindows line endings\n\n\nand    several   spaces.",
]
TRAINING_TEXT = [p for _ in range(3) for p in _PARAGRAPHS]

# Qwen2's pre-tokenizer regex is not used here on purpose: the qwen2 folder's
# tokenizer.json keeps GPT-2's, so a tokenizer that honours the file and the one
# transformers 5 rebuilds for model_type qwen2 give different ids (digits, NFC).
_GPT2_SPLIT = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def _byte_level_bpe(vocab_size: int, specials: list[str]) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_GPT2_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(TRAINING_TEXT, trainer)
    return tok


def _word_level(specials: list[str]) -> Tokenizer:
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece(prefix="##")
    trainer = trainers.WordLevelTrainer(special_tokens=specials, show_progress=False)
    tok.train_from_iterator(TRAINING_TEXT, trainer)
    return tok


def _unigram_metaspace(vocab_size: int, specials: list[str]) -> Tokenizer:
    # tokenizers' UnigramTrainer picks a different vocabulary from run to run (ties in
    # its pruning), so the pieces are counted here: every character, then the most
    # frequent substrings of the Metaspace words, scored by log frequency.
    counts: Counter[str] = Counter()
    for text in TRAINING_TEXT:
        for word in unicodedata.normalize("NFKC", text).split(" "):
            piece = "▁" + word
            for size in range(1, 9):
                for i in range(len(piece) - size + 1):
                    counts[piece[i : i + size]] += 1
    chars = sorted(p for p in counts if len(p) == 1)
    longer = sorted((p for p in counts if len(p) > 1), key=lambda p: (-counts[p], p))
    pieces = chars + longer[: vocab_size - len(specials) - len(chars)]
    total = sum(counts[p] for p in pieces)
    vocab = [(token, 0.0) for token in specials]
    vocab += [(p, round(math.log(counts[p] / total), 4)) for p in pieces]
    tok = Tokenizer(models.Unigram(vocab, unk_id=specials.index("<unk>")))
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    tok.add_special_tokens(specials)
    return tok


def _byte_fallback_bpe(vocab_size: int, specials: list[str]) -> Tokenizer:
    # Llama-2 style: Metaspace words, BPE with byte fallback (<0xNN> tokens), no normalizer.
    byte_tokens = [f"<0x{b:02X}>" for b in range(256)]
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(
        replacement="▁", prepend_scheme="first", split=False
    )
    tok.decoder = decoders.Sequence(
        [
            decoders.Replace("▁", " "),
            decoders.ByteFallback(),
            decoders.Fuse(),
            decoders.Strip(content=" ", left=1),
        ]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=specials + byte_tokens, show_progress=False
    )
    tok.train_from_iterator(TRAINING_TEXT, trainer)
    return tok


def _with_bos(tok: Tokenizer, bos: str) -> Tokenizer:
    bos_id = tok.token_to_id(bos)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, bos_id)]
    )
    return tok


# --- chat templates -------------------------------------------------------------------

# ChatML with tools; content-part lists iterated directly ('openai' content format);
# loop controls (continue), whitespace control, raise_exception.
CHATML_TOOLS = """\
{%- if messages and messages[0].role == 'system' %}
    {%- set system_message = messages[0] %}
{%- endif %}
{%- if tools or system_message is defined %}
    {{- '<|im_start|>system\\n' }}
    {%- if system_message is defined %}
        {%- if system_message.content is string %}
            {{- system_message.content }}
        {%- else %}
            {%- for part in system_message.content %}
                {%- if part.type == 'text' %}{{- part.text }}{%- endif %}
            {%- endfor %}
        {%- endif %}
    {%- endif %}
    {%- if tools %}
        {{- '\\n\\n# Tools\\n<tools>' }}
        {%- for tool in tools %}
            {{- '\\n' + tool | tojson }}
        {%- endfor %}
        {{- '\\n</tools>' }}
    {%- endif %}
    {{- '<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if loop.first and message.role == 'system' %}
        {%- continue %}
    {%- endif %}
    {%- if message.role == 'system' %}
        {{- raise_exception('A system message is only allowed first.') }}
    {%- endif %}
    {{- '<|im_start|>' + message.role + '\\n' }}
    {%- if message.content is string %}
        {{- message.content }}
    {%- elif message.content is not none %}
        {%- for part in message.content %}
            {%- if part.type == 'text' %}
                {{- part.text }}
            {%- elif part.type == 'image' or part.type == 'image_url' %}
                {{- '<|image|>' }}
            {%- else %}
                {{- raise_exception('Unsupported content part: ' + part.type) }}
            {%- endif %}
            {%- if not loop.last %}{{- ' ' }}{%- endif %}
        {%- endfor %}
    {%- endif %}
    {%- if message.tool_calls %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' + tool_call.name + '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
    {%- endif %}
    {{- '<|im_end|>\\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""

# Named templates: 'default' reads message['content'] as a string ('string' format),
# 'tool_use' iterates the content parts ('openai' format) and lists the tools.
WORDLEVEL_DEFAULT = """\
{%- if messages[0]['role'] == 'system' %}
    {%- set system_text = messages[0]['content'] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}
{%- if system_text is defined %}{{ 'system : ' + system_text | trim + '\\n' }}{%- endif %}
{%- for message in loop_messages %}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif %}
    {{- message['role'] + ' : ' + message['content'] | trim + '\\n' }}
{%- endfor %}
{%- if add_generation_prompt %}{{ 'assistant :' }}{%- endif %}
"""

WORDLEVEL_TOOL_USE = """\
{{- '[tools]\\n' }}
{%- for tool in tools %}
    {{- 'tool ' + tool['function']['name'] }}
    {%- if tool['function']['description'] %}{{- ' : ' + tool['function']['description'] }}{%- endif %}
    {{- '\\n' }}
{%- endfor %}
{%- for message in messages %}
    {{- message['role'] + ' :' }}
    {%- if message['content'] is string %}
        {{- ' ' + message['content'] }}
    {%- else %}
        {%- for part in message['content'] %}
            {%- if part['type'] == 'text' %}{{- ' ' + part['text'] }}{%- endif %}
        {%- endfor %}
    {%- endif %}
    {%- for tool_call in message['tool_calls'] | default([]) %}
        {{- ' call ' + tool_call['function']['name'] + ' ' + tool_call['function']['arguments'] | tojson }}
    {%- endfor %}
    {{- '\\n' }}
{%- endfor %}
{%- if add_generation_prompt %}{{- 'assistant :' }}{%- endif %}
"""

# Gemma-like turns; template kwargs (enable_thinking, default_system, greeting),
# documents, and a quoted "developer" (so vLLM keeps the developer role).
UNIGRAM_TEMPLATE = """\
{%- set system_text = default_system if default_system is defined else 'You are a helpful assistant.' %}
{%- if messages and messages[0]['role'] == 'system' %}
    {%- set system_text = messages[0]['content'] %}
    {%- set messages = messages[1:] %}
{%- endif %}
{{- '<start_of_turn>system\\n' + system_text }}
{%- if enable_thinking is defined and enable_thinking %}
    {{- '\\nThink step by step.' }}
{%- endif %}
{%- if greeting is defined %}
    {{- '\\n' + greeting }}
{%- endif %}
{%- if documents %}
    {{- '\\nDocuments:' }}
    {%- for doc in documents %}
        {{- '\\n[' + loop.index | string + '] ' + doc['title'] | default('untitled') + ': ' + doc['text'] }}
    {%- endfor %}
{%- endif %}
{{- '<end_of_turn>\\n' }}
{%- for message in messages %}
    {%- if message['role'] == 'developer' %}
        {{- '<start_of_turn>developer\\n' + message['content'] + '<end_of_turn>\\n' }}
    {%- elif message['role'] == 'user' or message['role'] == 'assistant' %}
        {%- set role = 'model' if message['role'] == 'assistant' else 'user' %}
        {{- '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}
    {%- else %}
        {{- raise_exception('Unknown role: ' + message['role']) }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<start_of_turn>model\\n' }}
{%- endif %}
"""

# Llama-3.1-like: the template emits the BOS (the tokenizer's post-processor adds one
# too), tools in the first user message by default (tools_in_user_message kwarg), a
# date_string kwarg, tool calls as JSON, 'ipython' tool results; no quoted developer.
LLAMA3_TEMPLATE = """\
{{- bos_token }}
{%- if not date_string is defined %}{%- set date_string = '26 Jul 2024' %}{%- endif %}
{%- if not tools_in_user_message is defined %}{%- set tools_in_user_message = true %}{%- endif %}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content'] | trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = '' %}
{%- endif %}
{{- '<|start_header_id|>system<|end_header_id|>\\n\\n' }}
{{- 'Today Date: ' + date_string + '\\n\\n' }}
{%- if tools is not none and not tools_in_user_message %}
    {%- for t in tools %}{{- t | tojson(indent=4) + '\\n\\n' }}{%- endfor %}
{%- endif %}
{{- system_message + '<|eot_id|>' }}
{%- if tools_in_user_message and tools is not none %}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content'] | trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception('Cannot put tools in the first user message when there is none.') }}
    {%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\\n\\n' }}
    {{- 'Use one of these functions:\\n\\n' }}
    {%- for t in tools %}{{- t | tojson(indent=4) + '\\n\\n' }}{%- endfor %}
    {{- first_user_message + '<|eot_id|>' }}
{%- endif %}
{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls | length == 1 %}
            {{- raise_exception('This model only supports single tool-calls at once!') }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
        {{- '{"name": "' + tool_call.name + '", "parameters": ' + tool_call.arguments | tojson + '}' }}
        {{- '<|eot_id|>' }}
    {%- else %}
        {{- '<|start_header_id|>ipython<|end_header_id|>\\n\\n' }}
        {%- if message.content is mapping or message.content is iterable and message.content is not string %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- '<|eot_id|>' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
{%- endif %}
"""

# Llama-2-like [INST] turns: a BOS per user turn, <<SYS>> folded into the first turn.
LLAMA2_TEMPLATE = """\
{%- if messages[0]['role'] == 'system' %}
    {%- set loop_messages = messages[1:] %}
    {%- set system_message = messages[0]['content'] %}
{%- else %}
    {%- set loop_messages = messages %}
    {%- set system_message = false %}
{%- endif %}
{%- for message in loop_messages %}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif %}
    {%- if loop.index0 == 0 and system_message != false %}
        {%- set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}
    {%- else %}
        {%- set content = message['content'] %}
    {%- endif %}
    {%- if message['role'] == 'user' %}
        {{- bos_token + '[INST] ' + content.strip() + ' [/INST]' }}
    {%- elif message['role'] == 'assistant' %}
        {{- ' ' + content.strip() + ' ' + eos_token }}
    {%- endif %}
{%- endfor %}
"""

# Qwen2.5-like: tools in the system turn, <tool_call> blocks, consecutive tool results
# grouped into one user turn (loop.previtem / loop.nextitem).
QWEN2_TEMPLATE = """\
{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, a helpful assistant.' }}
    {%- endif %}
    {{- '\\n\\n# Tools\\n\\nYou may call one or more functions.\\n\\n<tools>' }}
    {%- for tool in tools %}
        {{- '\\n' }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- '\\n</tools>\\n\\nFor each call, return JSON within <tool_call></tool_call> tags.<|im_end|>\\n' }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>system\\nYou are Qwen, a helpful assistant.<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == 'user') or (message.role == 'system' and not loop.first) or (message.role == 'assistant' and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == 'assistant' %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == 'tool' %}
        {%- if (loop.index0 == 0) or (loop.previtem.role != 'tool') %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (loop.nextitem.role != 'tool') %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""

# A plain override template for --chat-template runs (kept outside the model folders).
OVERRIDE_TEMPLATE = """\
{%- for message in messages -%}
[{{ message['role'] | upper }}] {{ message['content'] }}
{% endfor -%}
{%- if add_generation_prompt %}[ASSISTANT]{% endif %}
"""


@dataclass(frozen=True)
class ModelFolder:
    """One folder of the corpus: what it is for, and how its files are made."""

    name: str
    purpose: str
    build_tokenizer: Callable[[], Tokenizer]
    config: dict[str, Any]
    tokenizer_config: dict[str, Any]
    special_tokens_map: dict[str, Any]
    generation_config: dict[str, Any]
    # Written as chat_template.jinja (vLLM and transformers read it before the config's).
    template_file: str | None = None


def _llama_config(vocab: int, max_pos: int, **extra: Any) -> dict[str, Any]:
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 1,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": max_pos,
        "rms_norm_eps": 1e-05,
        "rope_theta": 10000.0,
        "vocab_size": vocab,
        "torch_dtype": "float32",
        "tie_word_embeddings": False,
        **extra,
    }


CHATML_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|image|>"]
WORDLEVEL_SPECIALS = ["[UNK]", "[PAD]", "[BOS]", "[EOS]"]
UNIGRAM_SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"]
LLAMA3_SPECIALS = [
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
    "<|python_tag|>",
]
LLAMA2_SPECIALS = ["<unk>", "<s>", "</s>"]
QWEN2_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]


def _folders() -> list[ModelFolder]:
    return [
        ModelFolder(
            name="gpt2_bytelevel",
            purpose="byte-level BPE, ChatML with tools and content parts; context 40960 (32k)",
            build_tokenizer=lambda: _byte_level_bpe(2000, CHATML_SPECIALS),
            config={
                "architectures": ["GPT2LMHeadModel"],
                "model_type": "gpt2",
                "n_embd": 64,
                "n_head": 2,
                "n_layer": 1,
                "n_positions": 40960,
                "vocab_size": 2000,
                "bos_token_id": 0,
                "eos_token_id": 0,
                "torch_dtype": "float32",
            },
            tokenizer_config={
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": None,
                "eos_token": "<|im_end|>",
                "pad_token": "<|endoftext|>",
                "unk_token": None,
                "model_max_length": 40960,
                "clean_up_tokenization_spaces": False,
                "chat_template": CHATML_TOOLS,
            },
            special_tokens_map={"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
            generation_config={"eos_token_id": 2, "temperature": 0.7, "top_p": 0.9},
        ),
        ModelFolder(
            name="neox_wordlevel",
            purpose="WordLevel (lowercase, [UNK]); a dict of named templates default/tool_use",
            build_tokenizer=lambda: _word_level(WORDLEVEL_SPECIALS),
            config={
                "architectures": ["GPTNeoXForCausalLM"],
                "model_type": "gpt_neox",
                "hidden_size": 64,
                "intermediate_size": 128,
                "num_hidden_layers": 1,
                "num_attention_heads": 4,
                "max_position_embeddings": 2048,
                "rotary_pct": 0.25,
                "vocab_size": 1024,
                "bos_token_id": 2,
                "eos_token_id": 3,
                "torch_dtype": "float32",
            },
            tokenizer_config={
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": "[BOS]",
                "eos_token": "[EOS]",
                "pad_token": "[PAD]",
                "unk_token": "[UNK]",
                "model_max_length": 2048,
                "chat_template": [
                    {"name": "default", "template": WORDLEVEL_DEFAULT},
                    {"name": "tool_use", "template": WORDLEVEL_TOOL_USE},
                ],
            },
            special_tokens_map={
                "bos_token": "[BOS]",
                "eos_token": "[EOS]",
                "pad_token": "[PAD]",
                "unk_token": "[UNK]",
            },
            generation_config={"bos_token_id": 2, "eos_token_id": 3},
        ),
        ModelFolder(
            name="stablelm_unigram",
            purpose="Unigram/Metaspace; chat_template.jinja with kwargs, documents, developer",
            build_tokenizer=lambda: _unigram_metaspace(800, UNIGRAM_SPECIALS),
            config={
                "architectures": ["StableLmForCausalLM"],
                "model_type": "stablelm",
                "hidden_size": 64,
                "intermediate_size": 128,
                "num_hidden_layers": 1,
                "num_attention_heads": 4,
                "num_key_value_heads": 4,
                "max_position_embeddings": 1024,
                "partial_rotary_factor": 0.25,
                "vocab_size": 800,
                "bos_token_id": 2,
                "eos_token_id": 1,
                "torch_dtype": "float32",
            },
            tokenizer_config={
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": "<bos>",
                "eos_token": "<eos>",
                "pad_token": "<pad>",
                "unk_token": "<unk>",
                "model_max_length": 1024,
            },
            special_tokens_map={
                "bos_token": "<bos>",
                "eos_token": "<eos>",
                "pad_token": "<pad>",
                "unk_token": "<unk>",
                "additional_special_tokens": ["<start_of_turn>", "<end_of_turn>"],
            },
            generation_config={"bos_token_id": 2, "eos_token_id": [1, 5]},
            template_file=UNIGRAM_TEMPLATE,
        ),
        ModelFolder(
            name="llama3_bos",
            purpose="llama, byte-level BPE whose post-processor adds a BOS and whose template "
            "emits one; tools in the user turn; PreTrainedTokenizerFast",
            build_tokenizer=lambda: _with_bos(
                _byte_level_bpe(1500, LLAMA3_SPECIALS), "<|begin_of_text|>"
            ),
            config=_llama_config(1500, 8192, bos_token_id=0, eos_token_id=4),
            tokenizer_config={
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": "<|begin_of_text|>",
                "eos_token": "<|eot_id|>",
                "model_max_length": 8192,
                "clean_up_tokenization_spaces": True,
                "chat_template": LLAMA3_TEMPLATE,
            },
            special_tokens_map={"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
            generation_config={"bos_token_id": 0, "eos_token_id": [1, 4], "do_sample": True},
        ),
        ModelFolder(
            name="llama2_bytefallback",
            purpose="llama with LlamaTokenizer: Metaspace + byte-fallback BPE, [INST] turns "
            "with a BOS each",
            build_tokenizer=lambda: _with_bos(_byte_fallback_bpe(1200, LLAMA2_SPECIALS), "<s>"),
            config=_llama_config(1200, 4096, bos_token_id=1, eos_token_id=2),
            tokenizer_config={
                "tokenizer_class": "LlamaTokenizer",
                "bos_token": "<s>",
                "eos_token": "</s>",
                "unk_token": "<unk>",
                "add_bos_token": True,
                "add_eos_token": False,
                "legacy": False,
                "model_max_length": 4096,
                "chat_template": LLAMA2_TEMPLATE,
            },
            special_tokens_map={"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
            generation_config={"bos_token_id": 1, "eos_token_id": 2},
        ),
        ModelFolder(
            name="qwen2_rebuilt",
            purpose="qwen2 (transformers 5 rebuilds its pre-tokenizer): tokenizer.json keeps "
            "GPT-2's split and no NFC; Qwen2.5-like tools template",
            build_tokenizer=lambda: _byte_level_bpe(1800, QWEN2_SPECIALS),
            config={
                "architectures": ["Qwen2ForCausalLM"],
                "model_type": "qwen2",
                "hidden_size": 64,
                "intermediate_size": 128,
                "num_hidden_layers": 1,
                "num_attention_heads": 4,
                "num_key_value_heads": 2,
                "max_position_embeddings": 4096,
                "max_window_layers": 1,
                "use_sliding_window": False,
                "rms_norm_eps": 1e-06,
                "rope_theta": 1000000.0,
                "vocab_size": 1800,
                "bos_token_id": 0,
                "eos_token_id": 2,
                "tie_word_embeddings": True,
                "torch_dtype": "float32",
            },
            tokenizer_config={
                "tokenizer_class": "Qwen2Tokenizer",
                "bos_token": None,
                "eos_token": "<|im_end|>",
                "pad_token": "<|endoftext|>",
                "unk_token": None,
                "errors": "replace",
                "model_max_length": 4096,
                "split_special_tokens": False,
                "chat_template": QWEN2_TEMPLATE,
            },
            special_tokens_map={
                "eos_token": "<|im_end|>",
                "pad_token": "<|endoftext|>",
                "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
            },
            generation_config={
                "bos_token_id": 0,
                "eos_token_id": [2, 0],
                "repetition_penalty": 1.05,
                "temperature": 0.7,
            },
        ),
    ]


def _dump(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def build(out: Path) -> list[str]:
    """Write every folder under ``out`` (replacing it); return the folder names."""
    out.mkdir(parents=True, exist_ok=True)
    names = []
    for folder in _folders():
        target = out / folder.name
        if target.exists():
            shutil.rmtree(target)
        target.mkdir()
        tokenizer = folder.build_tokenizer()
        (target / "tokenizer.json").write_text(tokenizer.to_str(pretty=True) + "\n", "utf-8")
        _dump(target / "config.json", folder.config)
        _dump(target / "tokenizer_config.json", folder.tokenizer_config)
        _dump(target / "special_tokens_map.json", folder.special_tokens_map)
        _dump(target / "generation_config.json", folder.generation_config)
        if folder.template_file is not None:
            (target / "chat_template.jinja").write_text(folder.template_file, "utf-8")
        names.append(folder.name)
    (out / "override_template.jinja").write_text(OVERRIDE_TEMPLATE, "utf-8")
    _dump(out / "index.json", {f.name: f.purpose for f in _folders()})
    return names


def _same_tree(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    if mismatch or errors:
        return False
    return all(_same_tree(a / d, b / d) for d in cmp.common_dirs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--check", action="store_true", help="rebuild in a temporary folder and compare"
    )
    args = parser.parse_args(argv)
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            build(Path(tmp))
            same = _same_tree(Path(tmp), args.out)
        print("identical" if same else f"{args.out} differs from a fresh build")
        return 0 if same else 1
    names = build(args.out)
    print(f"wrote {len(names)} folders under {args.out}: {', '.join(names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
