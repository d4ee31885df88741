"""Everything prefixkey raises derives from PrefixKeyError, naming the field at fault.

Each test drives a former offender (a raw ValueError, TypeError, RuntimeError
or an exception escaping from bad input) through the public API. The last
test parses the package and fails on any new ``raise`` of a builtin exception.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import json
from pathlib import Path
from typing import Any

import pytest

import prefixkey
from prefixkey import Hasher, InvalidRequestError, PrefixKeyError, UnreproducibleKeysError
from prefixkey.analysis import fingerprint
from prefixkey.core import ALGORITHMS
from prefixkey.errors import PrefixKeyWarning
from prefixkey.events import (
    BlockStored,
    EventBatch,
    EventFramingError,
    encode_batch,
    encode_event,
    replay_request,
    seq_frame,
)
from prefixkey.fleet import (
    PrefixIndex,
    RedisPrefixIndex,
    RegistrationConflictError,
    ReplicaScheme,
    Router,
    scheme_from_spec,
    scheme_spec,
)
from prefixkey.testing import generate_records
from prefixkey.testing import strategies as pks

PACKAGE = Path(prefixkey.__file__).resolve().parent


def _field(info: pytest.ExceptionInfo[PrefixKeyError]) -> str | None:
    return info.value.field


# ----------------------------------------------------------------------------- core


def test_block_hashes_takes_lookahead() -> None:
    """It used to pass every keyword on to Request: ``lookahead=1`` was a raw TypeError."""
    tokens = list(range(10))
    hasher = Hasher(block_size=4, vllm_version="0.33.0", lookahead=1)
    assert prefixkey.block_hashes(tokens, block_size=4, vllm_version="0.33.0",
                                  lookahead=1) == hasher.block_hashes(tokens)
    with pytest.raises(InvalidRequestError) as info:
        prefixkey.block_hashes(tokens, block_size=4, lookahead=1)  # 0.31 has no lookahead
    assert _field(info) == "lookahead"


def test_a_bare_builtin_algorithm_says_to_use_a_hasher() -> None:
    hasher = Hasher(block_size=2, vllm_version="0.9.0", hash_algo="builtin",
                    python_hash_seed="0", engine_python="3.12")
    with pytest.raises(UnreproducibleKeysError):
        hasher.algorithm.digest((None, (1, 2), None))


def test_a_serializer_given_what_no_block_key_holds() -> None:
    with pytest.raises(InvalidRequestError) as info:
        ALGORITHMS["sha256_cbor"].serializer.dumps((1.5,))
    assert _field(info) == "extra_keys"


@pytest.mark.parametrize("seed", ["x", "-1", "4294967296"])
def test_builtin_hash_seed_out_of_cpython_range(seed: str) -> None:
    with pytest.raises(InvalidRequestError) as info:
        Hasher(block_size=2, vllm_version="0.9.0", hash_algo="builtin", python_hash_seed=seed,
               engine_python="3.12")
    assert _field(info) == "python_hash_seed"


# ----------------------------------------------------------------------------- analysis


def test_fingerprint_skips_unusable_events_and_checks_its_seeds() -> None:
    """Unusable events are skipped with a reason (never raised); bad seeds are typed errors."""
    report = fingerprint([{"type": "BlockRemoved"}, {"block_hashes": ["zz"]}, 7,
                          {"block_hashes": ["00"], "block_size": 1, "token_ids": [1.5]}])
    assert report.verdict == "no_events"
    assert [s.reason for s in report.skipped] == [
        "a BlockRemoved event, not BlockStored",
        "block_hashes holds a string that is not hex",
        "not a JSON object (int)",
        "token_ids[0]: must be an int, got float 1.5",
    ]
    with pytest.raises(InvalidRequestError) as info:
        fingerprint([], seeds=["0", 1])  # type: ignore[list-item]
    assert (_field(info), info.value.position) == ("seeds", 1)
    with pytest.raises(InvalidRequestError) as info:
        fingerprint([], seeds="0")
    assert _field(info) == "seeds"


# ----------------------------------------------------------------------------- events


def test_encoding_what_is_not_an_event() -> None:
    with pytest.raises(InvalidRequestError) as info:
        encode_event("BlockStored", "0.31.0")  # type: ignore[arg-type]
    assert _field(info) == "event"
    with pytest.raises(InvalidRequestError) as info:
        encode_batch([], "0.31.0")  # type: ignore[arg-type]
    assert _field(info) == "batch"
    stored = BlockStored((1,), None, (object(),), 1)  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError) as info:
        encode_batch(EventBatch(0.0, (stored,)), "0.31.0")
    assert _field(info) == "batch"


@pytest.mark.parametrize("seq", [-1, 1 << 64, 1.0])
def test_sequence_numbers_out_of_range(seq: Any) -> None:
    with pytest.raises(InvalidRequestError) as info:
        seq_frame(seq)
    assert _field(info) == "seq"
    with pytest.raises(EventFramingError) as framing:
        replay_request(seq)
    assert framing.value.field == "start_seq"


# ----------------------------------------------------------------------------- fleet


def test_scheme_specs_that_are_not_specs() -> None:
    good = json.loads(scheme_spec(ReplicaScheme(Hasher(block_size=16, python_hash_seed="0"))))
    assert scheme_from_spec(json.dumps(good)).hasher.block_size == 16
    missing = {k: v for k, v in good.items() if k != "publishes"}
    for spec in ("{not json", b"\xff", "[]", json.dumps(missing),
                 json.dumps({**good, "groups": 3})):
        with pytest.raises(InvalidRequestError) as info:
            scheme_from_spec(spec)
        assert _field(info) == "spec", spec
    with pytest.raises(InvalidRequestError) as info:
        scheme_from_spec(json.dumps({**good, "block_size": 0}))
    assert _field(info) == "block_size"


class _RacingRedis:
    """A client whose apply script always reports that another router re-registered."""

    def __init__(self, spec: bytes) -> None:
        self.spec = spec
        self.calls = 0

    def register_script(self, source: str) -> Any:
        def run(*, keys: list[Any], args: list[Any]) -> list[bytes]:
            self.calls += 1
            return [b"S", self.spec, b"1"]
        return run


def test_redis_apply_under_endless_re_registration() -> None:
    spec = scheme_spec(ReplicaScheme(Hasher(block_size=16, python_hash_seed="0"))).encode()
    client = _RacingRedis(spec)
    index = RedisPrefixIndex(client)
    with pytest.raises(RegistrationConflictError) as info:
        index.apply("a", EventBatch(0.0, ()))
    assert isinstance(info.value, RuntimeError)  # what it was before
    assert (_field(info), client.calls) == ("replica", 3)


def test_router_weights_and_loads_are_checked() -> None:
    index = PrefixIndex()
    index.register("a", ReplicaScheme(Hasher(block_size=2, python_hash_seed="0")))
    with pytest.raises(InvalidRequestError) as info:
        Router(index, load_unit="watts")  # type: ignore[arg-type]
    assert _field(info) == "load_unit"
    with pytest.raises(InvalidRequestError) as info:
        Router(index, tier_weights={1: 0.5})  # type: ignore[dict-item]
    assert _field(info) == "tier_weights"
    router = Router(index, load=lambda replica: "busy")  # type: ignore[arg-type,return-value]
    with pytest.raises(InvalidRequestError) as info:
        router.route([1, 2, 3, 4])
    assert _field(info) == "load"


def test_subscriber_lifecycle_and_endpoints() -> None:
    pytest.importorskip("zmq", reason="needs pyzmq: pip install -e '.[test]' (or the zmq extra)")
    from prefixkey.fleet import ReplicaEndpoint, Subscriber, SubscriberStateError, offset_endpoint

    with pytest.raises(InvalidRequestError) as info:
        offset_endpoint("tcp://127.0.0.1:port", 1)
    assert _field(info) == "endpoint"
    sub = Subscriber([ReplicaEndpoint("a", "tcp://127.0.0.1:1")], index=PrefixIndex())
    sub.start()
    try:
        with pytest.raises(SubscriberStateError, match="already started"):
            sub.start()
    finally:
        sub.close()
    with pytest.raises(SubscriberStateError, match="closed") as state:
        sub.start()
    assert isinstance(state.value, RuntimeError)  # what it was before


# ----------------------------------------------------------------------------- testing


def test_strategy_arguments() -> None:
    cases: list[tuple[str, Any]] = [
        ("max_id", lambda: pks.token_ids(max_id=-1)),
        ("num_tokens", lambda: pks.mm_layouts(num_tokens=-1)),
        ("dtypes", lambda: pks.prompt_embeds(dtypes=("float8",))),
        ("features", lambda: pks.requests(features=["lora", "nope"])),
        ("hash_algos", lambda: pks.request_objects(hash_algos=["md5"])),
        ("block_size", lambda: pks.request_objects(block_size=0)),
    ]
    for field, build in cases:
        with pytest.raises(InvalidRequestError) as info:
            build()
        assert _field(info) == field


def test_export_count() -> None:
    with pytest.raises(InvalidRequestError) as info:
        generate_records("0.31.0", count=0)
    assert _field(info) == "count"


# ----------------------------------------------------------------------------- the whole tree


def _public_exceptions() -> list[type[BaseException]]:
    found = []
    for name in ("prefixkey", "prefixkey.core", "prefixkey.events", "prefixkey.fleet",
                 "prefixkey.analysis", "prefixkey.testing", "prefixkey.jsonl"):
        module = importlib.import_module(name)
        for attr in module.__all__:
            value = getattr(module, attr)
            if isinstance(value, type) and issubclass(value, BaseException):
                found.append(value)
    return found


def test_every_public_exception_is_in_the_tree() -> None:
    exceptions = _public_exceptions()
    assert len(exceptions) > 20  # the walk found the subpackages' errors
    errors = [e for e in exceptions if not issubclass(e, Warning)]
    warnings = [e for e in exceptions if issubclass(e, Warning)]
    assert [e.__name__ for e in errors if not issubclass(e, PrefixKeyError)] == []
    # Warnings have their own root, apart from the errors.
    assert len(warnings) >= 4
    assert [e.__name__ for e in warnings
            if not issubclass(e, PrefixKeyWarning) or issubclass(e, PrefixKeyError)] == []


#: ``raise`` of a builtin exception the protocol demands: (module, exception).
_PROTOCOL_RAISES = {
    ("fleet/__init__.py", "AttributeError"),  # a module's __getattr__
    ("fleet/feed/__init__.py", "AttributeError"),  # its lazy names' __getattr__
    ("fleet/index/_redis.py", "KeyError"),  # a Mapping's __getitem__
    ("render/_hf_facts_delta.py", "AttributeError"),  # HfFacts.__getattr__ (tables by name)
}


def test_nothing_raises_a_builtin_exception() -> None:
    """No module raises ValueError, TypeError, RuntimeError … itself (a subclass in the tree)."""
    builtin = {name for name, value in vars(builtins).items()
               if isinstance(value, type) and issubclass(value, BaseException)}
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(target, ast.Name) and target.id in builtin and (
                    where, target.id) not in _PROTOCOL_RAISES:
                offenders.append(f"{where}:{node.lineno} raises {target.id}")
    assert offenders == []


# ------------------------------------------------------------------------ data reaching the API


def test_values_from_configuration_and_the_wire() -> None:
    """Values that come from configuration files or sockets, not from typed code."""
    from prefixkey.core import group_block_hashes
    from prefixkey.events import EventDecoder, event_extra_keys_to_typed, split_message

    with pytest.raises(InvalidRequestError) as info:
        Hasher(block_size=2, vllm_version="0.9.0", python_hash_seed="0",
               engine_python=3.12)  # type: ignore[arg-type]
    assert _field(info) == "engine_python"
    with pytest.raises(InvalidRequestError) as info:
        group_block_hashes([b"a"], 0, 2)
    assert _field(info) == "hash_block_size"
    with pytest.raises(EventFramingError) as framing:
        split_message(["", "seq", "payload"])  # type: ignore[list-item]
    assert framing.value.field == "frames[0]"
    with pytest.raises(EventFramingError):
        EventDecoder("0.31.0").split_replay_reply(b"seq")  # type: ignore[arg-type]
    with pytest.raises(PrefixKeyError) as conversion:
        event_extra_keys_to_typed(5, vllm_version="0.31.0")  # type: ignore[arg-type]
    assert _field(conversion) == "extra_keys"
