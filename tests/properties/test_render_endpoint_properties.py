"""The render-endpoint parser on any JSON: prompts, or a typed error — never anything else.

A render answer comes from the network: whatever a proxy, an older release or a broken
server returns, the parser must answer with Rendered prompts whose ids are checked, or a
:class:`~prefixkey.errors.PrefixKeyError` naming the field. Inputs are arbitrary JSON
values, and vLLM's recorded answers with one value replaced by arbitrary JSON.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from prefixkey.core import TokenIds
from prefixkey.errors import PrefixKeyError
from prefixkey.render import RenderResponseParser

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=20,
)
ENDPOINTS = st.sampled_from(["/v1/chat/completions", "/v1/completions"])
PARSERS = {v: RenderResponseParser(vllm_version=v) for v in ("0.16.0", "0.31.0")}

# A rendered chat answer and a completions answer of vLLM 0.31.0 (tests/render/vectors.jsonl).
CHAT_ANSWER = {
    "request_id": "chatcmpl-0000000000000000", "token_ids": [1, 879, 202, 458, 2, 202],
    "token_offsets": None, "features": None, "content_parts": None,
    "sampling_params": {"temperature": 0.7, "max_tokens": 40929}, "model": "gpt2-chatml",
    "return_token_ids": None, "stream": False, "stream_options": None, "cache_salt": "s",
    "priority": 0, "kv_transfer_params": None, "ec_transfer_params": None,
}
MM_FEATURES = {"mm_hashes": {"image": ["abc"]},
               "mm_placeholders": {"image": [{"offset": 1, "length": 2}]},
               "kwargs_data": None, "mm_metadata": None}


def _check(result: Any) -> None:
    for prompt in result:
        assert isinstance(prompt.request.token_ids, TokenIds)
        assert len(prompt.request.token_ids) > 0


@settings(max_examples=300, deadline=None)
@given(endpoint=ENDPOINTS, status=st.sampled_from([200, 400, 404, 500]), payload=JSON,
       version=st.sampled_from(sorted(PARSERS)))
def test_any_json_gives_prompts_or_a_typed_error(endpoint: str, status: int, payload: Any,
                                                 version: str) -> None:
    with contextlib.suppress(PrefixKeyError):
        _check(PARSERS[version].parse(endpoint, status, payload))


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _paths(item, (*prefix, i))
    return found


ANSWER = {**CHAT_ANSWER, "features": MM_FEATURES, "token_ids": [1, 2, 3, 4]}
ANSWER_PATHS = _paths(ANSWER)[1:]


@settings(max_examples=300, deadline=None)
@given(path=st.sampled_from(ANSWER_PATHS), value=JSON, as_list=st.booleans())
def test_a_recorded_answer_with_one_value_replaced(path: tuple[Any, ...], value: Any,
                                                   as_list: bool) -> None:
    answer = copy.deepcopy(ANSWER)
    target: Any = answer
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    endpoint, payload = (("/v1/completions", [answer]) if as_list
                         else ("/v1/chat/completions", answer))
    with contextlib.suppress(PrefixKeyError):
        _check(PARSERS["0.31.0"].parse(endpoint, 200, payload))
