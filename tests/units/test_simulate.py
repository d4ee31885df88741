"""prefixkey simulate's engine: determinism, the trace reader, and what a run reports.

The excerpt is the first 200 requests of Mooncake's conversation trace
(tests/fixtures/mooncake/README.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefixkey import InvalidRequestError
from prefixkey.analysis import (
    SIMULATION_POLICIES,
    SimulationConfig,
    TimeModel,
    read_trace,
    simulate,
    simulation_html,
    simulation_text,
)

EXCERPT = Path(__file__).resolve().parents[1] / "fixtures" / "mooncake" / \
    "conversation_first200.jsonl"
#: Fields that measure this machine, not the simulation.
TIMED = {"decision_cpu_us_mean"}


def run(limit: int = 60, **config: Any) -> dict[str, Any]:
    with EXCERPT.open() as source:
        report = simulate(read_trace(source, limit=limit), SimulationConfig(**config))
    out = report.to_dict()
    for r in out["results"]:
        for name in TIMED:
            r.pop(name)
    out.pop("hash_seconds")
    out.pop("wall_seconds")
    return out


def test_the_same_seed_gives_the_same_report() -> None:
    config: dict[str, Any] = {"replicas": 4, "blocks_per_replica": 3000,
                              "policies": tuple(SIMULATION_POLICIES)}
    first = run(**config)
    assert first == run(**config)
    assert len(first["results"]) == len(SIMULATION_POLICIES) + 1  # and the pooled bound
    assert run(seed=1, **config)["config"]["seed"] == 1


def test_a_run_reports_every_policy() -> None:
    out = run(replicas=4, blocks_per_replica=10_000, policies=("ours", "round-robin"))
    by = {r["policy"]: r for r in out["results"]}
    assert set(by) == {"ours", "round-robin", "pooled"}
    for r in by.values():
        assert r["requests"] == 60 and r["rejected"] == 0
        assert 0 <= r["hit_rate"] <= 1
        assert r["ttft_p50_s"] <= r["ttft_p99_s"]
        assert sum(r["per_replica_requests"]) == 60
    assert by["pooled"]["per_replica_requests"] == [60]
    assert by["round-robin"]["per_replica_requests"] == [15, 15, 15, 15]
    # every request starts with the same 512-token block: the pooled cache reuses it
    assert by["pooled"]["hit_tokens"] >= 59 * 512
    assert by["ours"]["events_applied"] > 0


def test_the_ttft_follows_the_time_model() -> None:
    # one request alone: TTFT = its prompt at the prefill rate
    line = json.dumps({"timestamp": 0, "input_length": 1000, "output_length": 3,
                       "hash_ids": [1, 2]})
    report = simulate(read_trace([line]), SimulationConfig(
        replicas=2, policies=("ours",), time=TimeModel(prefill_tokens_per_s=500.0)))
    assert [r.ttft_mean_s for r in report.results] == [2.0, 1.0]  # pooled: twice the rate


def test_a_prompt_larger_than_a_pool_is_refused() -> None:
    line = json.dumps({"timestamp": 0, "input_length": 2000, "output_length": 1,
                       "hash_ids": [1, 2, 3, 4]})
    report = simulate(read_trace([line]), SimulationConfig(
        replicas=2, blocks_per_replica=50, policies=("round-robin",), pooled=False))
    (result,) = report.results
    assert result.rejected == 1 and result.requests == 0
    assert "refused" in simulation_text(report)


def test_the_text_and_html_reports() -> None:
    with EXCERPT.open() as source:
        report = simulate(read_trace(source, limit=20), SimulationConfig(
            replicas=2, blocks_per_replica=3000, policies=("ours", "least-outstanding")))
    text = simulation_text(report)
    assert "least-outstanding" in text and "pooled" in text and "hit rate" in text
    page = simulation_html(report)
    assert page.startswith("<!doctype html>") and "<svg" in page and "<script" not in page


@pytest.mark.parametrize(("line", "field"), [
    ('{"timestamp": 0, "input_length": 10}', "token_ids"),
    ('{"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1]}',
     "input_length"),
    ('{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [-1]}', "hash_ids"),
    ('{"timestamp": "x", "token_ids": [1]}', "timestamp"),
    ('{"arrival_time": "x", "token_ids": [1], "block_size": 16}', "arrival_time"),
    ('{"arrival_time": NaN, "token_ids": [1], "block_size": 16}', "arrival_time"),
    ('{"token_ids": [1], "output_length": -1}', "output_length"),
    ("[1, 2]", "trace"),
    ("not json", "trace"),
])
def test_bad_trace_lines_are_typed_errors(line: str, field: str) -> None:
    with pytest.raises(InvalidRequestError) as info:
        list(read_trace([line]))
    assert info.value.field == field and "line 1" in str(info.value)


def test_time_must_not_go_back() -> None:
    lines = ['{"timestamp": 5, "token_ids": [1, 2]}', '{"timestamp": 4, "token_ids": [1]}']
    with pytest.raises(InvalidRequestError, match="line 2"):
        list(read_trace(lines))


def test_plain_lines_and_mooncake_blocks() -> None:
    (plain,) = read_trace(['{"token_ids": [5, 6, 7], "output_length": 2}'])
    assert (plain.arrival, plain.token_ids, plain.output_length) == (0.0, [5, 6, 7], 2)
    a, b = read_trace(['{"timestamp": 0, "input_length": 6, "output_length": 1, '
                       '"hash_ids": [3, 4]}',
                       '{"timestamp": 1000, "input_length": 4, "output_length": 1, '
                       '"hash_ids": [3]}'], trace_block=4)
    assert len(a.token_ids) == 6 and a.token_ids[:4] == b.token_ids and b.arrival == 1.0


def test_bad_configuration_is_a_typed_error() -> None:
    with pytest.raises(InvalidRequestError, match="unknown policy 'best'"):
        simulate([], SimulationConfig(policies=("best",)))
    with pytest.raises(InvalidRequestError, match="null block"):
        simulate([], SimulationConfig(blocks_per_replica=1))


def test_ray_prefix_follows_what_it_sent_and_ignores_load() -> None:
    """Ray's PrefixCacheAffinityRouter as modelled: sent prefixes win over load; below a
    10% match, the replica with the fewest recorded tokens."""
    from prefixkey import Hasher, Request
    from prefixkey.analysis._simulate_policies import Gateway, PolicyContext, make_policy
    from prefixkey.fleet import PrefixIndex, PreparedRequest, ReplicaId, ReplicaScheme

    scheme = ReplicaScheme(Hasher(block_size=16, python_hash_seed="0", vllm_version="0.31.0"))
    gateway = Gateway(requests=[0, 0, 0], prefill=[0.0] * 3, active_blocks=[0] * 3)
    choose = make_policy("ray-prefix", PolicyContext(
        PrefixIndex(), [ReplicaId(n) for n in "abc"], gateway, block_size=16, seed=0,
        blocks=10_000))

    def send(tokens: list[int]) -> tuple[int, float]:
        prepared = PreparedRequest(len(tokens), Request(tokens))
        return choose(prepared, prepared.keys_for(scheme))

    first = list(range(1000, 1160))  # 10 blocks
    assert send(first) == (0, 160.0)  # nothing recorded: the smallest tenants, the first
    gateway.requests[:] = [5, 0, 0]  # replica 0 busy: load does not override the match
    assert send([*first, *range(5000, 5040)]) == (0, 200.0 - 160.0)
    assert send(list(range(9000, 9160)))[0] == 1  # no match: the fewest recorded tokens


def test_sglang_cache_aware_thresholds() -> None:
    """SGLang's cache_aware as modelled, at its defaults: a recorded match above 30% of
    the prompt wins while the load is balanced; at most 30%, the smallest tenant; past
    both balance thresholds (max - min > 64 and max > 1.5 x min), the least loaded."""
    from prefixkey import Hasher, Request
    from prefixkey.analysis._simulate_policies import Gateway, PolicyContext, make_policy
    from prefixkey.fleet import PrefixIndex, PreparedRequest, ReplicaId, ReplicaScheme

    scheme = ReplicaScheme(Hasher(block_size=16, python_hash_seed="0", vllm_version="0.31.0"))
    gateway = Gateway(requests=[0, 0, 0], prefill=[0.0] * 3, active_blocks=[0] * 3)
    choose = make_policy("sglang", PolicyContext(
        PrefixIndex(), [ReplicaId(n) for n in "abc"], gateway, block_size=16, seed=0,
        blocks=10_000))

    def send(tokens: list[int]) -> tuple[int, float]:
        prepared = PreparedRequest(len(tokens), Request(tokens))
        return choose(prepared, prepared.keys_for(scheme))

    first = list(range(1000, 1160))  # 10 blocks
    home, need = send(first)
    assert need == 160.0  # nothing recorded
    gateway.requests[:] = [0, 0, 0]
    gateway.requests[home] = 64  # busy, but max - min = 64 is not above 64: balanced
    assert send([*first, *range(5000, 5160)]) == (home, 320.0 - 160.0)  # 50% > 30%
    # 30% is not above the threshold: the smallest tenant (not the holder, twice larger)
    other, _ = send([*first[:48], *range(7000, 7112)])
    assert other != home
    gateway.requests[home] = 65  # 65 - 0 > 64 and 65 > 1.5 x 0: imbalanced
    least = min(i for i in range(3) if gateway.requests[i] == 0)
    assert send([*first, *range(6000, 6160)]) == (least, 320.0)


def test_audit_request_logs_replay_from_their_first_arrival_time() -> None:
    """``prefixkey audit``'s request log (docs/audit.md): request-format lines with
    ``arrival_time`` in unix seconds; ``replica``, ``cached_tokens`` and the scheme
    fields are the log's, not the simulation's."""
    log = ['{"token_ids": [1, 2, 3], "block_size": 16, "vllm_version": "0.31.0", '
           '"replica": "r1", "arrival_time": 1764643200.25, "cached_tokens": 0}',
           '{"token_ids": [1, 2], "block_size": 16, "arrival_time": 1764643201.75}',
           '{"token_ids": [4], "block_size": 16}']  # no arrival_time: the previous line's
    a, b, c = read_trace(log)
    assert (a.arrival, b.arrival, c.arrival) == (0.0, 1.5, 1.5)
    assert (a.token_ids, a.output_length) == ([1, 2, 3], 1)
    with pytest.raises(InvalidRequestError, match="line 2") as info:
        list(read_trace([log[1], log[0]]))
    assert info.value.field == "arrival_time"
    with pytest.raises(InvalidRequestError, match="one trace keeps one clock") as info:
        list(read_trace([log[0], '{"timestamp": 5, "token_ids": [1]}']))
    assert info.value.field == "timestamp"
    report = simulate(read_trace(log), SimulationConfig(replicas=2, policies=("ours",)))
    assert report.requests == 3


def test_ours_is_fed_the_work_still_waiting() -> None:
    """The simulated gateway's PrefillBacklog: the rate measured from its first tokens, the
    request being prefilled counted less the time since it started (the whole count not)."""
    from prefixkey import Hasher, Request
    from prefixkey.analysis._simulate import _Fleet, _Job
    from prefixkey.fleet import PreparedRequest, ReplicaScheme

    config = SimulationConfig(replicas=1, policies=("ours",), pooled=False,
                              time=TimeModel(prefill_tokens_per_s=500.0))
    hasher = Hasher(block_size=16, hash_algo=config.hash_algo, vllm_version=config.vllm_version)
    scheme = ReplicaScheme(hasher)
    fleet = _Fleet("ours", config, scheme)
    for first in (0, 10_000):  # two prompts of 1,000 tokens sharing nothing, both at 0 s
        request = Request(list(range(first, first + 1000)))
        prepared = PreparedRequest(1000, request)
        keys = prepared.add_keys(scheme, hasher.block_hashes(request))
        fleet.advance(0.0)
        fleet.arrive(_Job(0.0, keys.groups[0], 1000, 2), prepared, keys)
    fleet.advance(3.0)  # the first's first token at 2 s: the second prefills from then
    backlog, rid = fleet.gateway.backlog, fleet.replicas[0].name
    assert backlog.rate(rid) == 500.0
    assert backlog.queued(rid, 3.0) == 500.0  # 1 s of its 2 s prefill left
    assert fleet.gateway.prefill[0] == 1000.0  # the whole count holds it whole
    fleet.finish()
    assert backlog.queued(rid, fleet.now) == 0.0
