"""Small model folders for the render unit tests, built with ``tokenizers`` at test time.

Deterministic (a fixed corpus, a fixed trainer), a few hundred tokens of
vocabulary. ``generic`` is a byte-level BPE wrapped as it is
(``PreTrainedTokenizerFast``); ``qwen2`` declares a whitespace pre-tokenizer
in tokenizer.json that transformers 5 replaces with Qwen2's own; ``llama`` is
a Metaspace BPE with byte fallback whose post-processor adds ``<s>``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello, world! How are you today?",
    "def add(a, b):\n    return a + b\n",
    "Prefix caching keys every block by its parent's key.",
    "Ünïcödé テキスト and emoji 🙂 are bytes too.",
    "user assistant system tool weather Paris London",
] * 20

# Newlines are written as expressions: whitespace control would eat literal ones.
CHATML = (
    "{%- if tools %}{{ '<|im_start|>system\\nTools: ' + tools | tojson + '<|im_end|>\\n' }}"
    "{% endif %}"
    "{%- for message in messages %}"
    "{{ '<|im_start|>' + message.role + '\\n' }}"
    "{%- if message.content is string %}{{ message.content }}"
    "{%- else %}{% for part in message.content %}{{ part.text }}{% endfor %}{% endif %}"
    "{%- if message.tool_calls %}{% for call in message.tool_calls %}"
    "<tool_call>{{ call.function.arguments | tojson }}</tool_call>{% endfor %}{% endif %}"
    "{{ '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

STRING_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}[assistant]{% endif %}"
)


def _bpe(byte_level: bool, specials: list[str]) -> Tokenizer:
    if byte_level:
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        alphabet = pre_tokenizers.ByteLevel.alphabet()
    else:
        tok = Tokenizer(models.BPE(byte_fallback=True, fuse_unk=True))
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first",
                                                     split=False)
        alphabet = [f"<0x{i:02X}>" for i in range(256)]
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=specials,
                                  initial_alphabet=alphabet if byte_level else [],
                                  show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    if not byte_level:  # byte-fallback pieces must exist for unseen characters
        tok.add_tokens([a for a in alphabet if tok.token_to_id(a) is None])
    return tok


def build_folder(root: Path, kind: str, *, chat_template: str | None = CHATML,
                 config: dict[str, Any] | None = None,
                 tokenizer_config: dict[str, Any] | None = None) -> Path:
    """Write folder ``kind`` (generic, qwen2, llama) under ``root``; return its path."""
    folder = root / kind
    folder.mkdir(parents=True, exist_ok=True)
    conf: dict[str, Any]
    tconf: dict[str, Any]
    if kind == "generic":
        tok = _bpe(True, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
        conf = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"],
                "n_positions": 4096}
        tconf = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<|endoftext|>",
                 "eos_token": "<|endoftext|>"}
    elif kind == "qwen2":
        tok = _bpe(True, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
        tok.pre_tokenizer = pre_tokenizers.Whitespace()  # transformers 5 ignores this
        conf = {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"],
                "max_position_embeddings": 32768}
        tconf = {"tokenizer_class": "Qwen2Tokenizer", "eos_token": "<|im_end|>",
                 "pad_token": "<|endoftext|>"}
    elif kind == "llama":
        tok = _bpe(False, ["<unk>", "<s>", "</s>"])
        tok.post_processor = processors.TemplateProcessing(
            single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)])
        conf = {"model_type": "llama", "architectures": ["LlamaForCausalLM"],
                "max_position_embeddings": 2048}
        tconf = {"tokenizer_class": "LlamaTokenizerFast", "bos_token": "<s>",
                 "eos_token": "</s>", "unk_token": "<unk>", "legacy": False}
    else:
        raise KeyError(kind)
    tok.save(str(folder / "tokenizer.json"))
    conf.update(config or {})
    tconf.update(tokenizer_config or {})
    if chat_template is not None:
        tconf.setdefault("chat_template", chat_template)
    (folder / "config.json").write_text(json.dumps(conf))
    (folder / "tokenizer_config.json").write_text(json.dumps(tconf))
    return folder
