"""The render corpus joined with what vLLM 0.31.0's render server answered for it.

``bodies.jsonl`` (tools/build_render_bodies.py) holds each body with its model folder and
the server's flags; ``vectors.jsonl`` (tools/harvest_render.py) vLLM's answer, line for
line; ``serve_bodies.jsonl`` and ``serve_vectors.jsonl`` the same for ``vllm serve
--enable-scale-out`` with LoRA adapters. :func:`render_cases` pairs them, read once.

Other releases answered the same bodies: a copy harvested whole
(``<corpus>0XY_vectors.jsonl``, 0.29.0's ``029``) or answers kept compactly
(``releases/<release>/<corpus>vectors.jsonl``). A replay module's table is
``{release: folders refused there}``: :func:`release_table` reads each release's answers
for the rest, :func:`each_release_case` parametrizes a test over them, and
:func:`assert_server_replays` renders a case as the server that answered it did
(:func:`server_options`: its own flags, at the release).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import pytest

    from prefixkey.errors import PrefixKeyError
    from prefixkey.render import Renderer, RenderRequestError, ServerOptions

RENDER_DIR = Path(__file__).resolve().parent
#: The release whose answers are each corpus's own ``<corpus>vectors.jsonl``.
BASE_RELEASE = "0.31.0"
#: The Python classes GPT-2 folders name by tokenizer_class in the real_py_named_ corpus
#: (test_real_py_named_vectors.py), by folder; the per-unit corpora leave them out.
NAMED_PY_FOLDERS: Mapping[str, str] = {
    "speecht5_named": "SpeechT5Tokenizer", "bartpho_named": "BartphoTokenizer",
    "prophetnet_named": "ProphetNetTokenizer", "vits_named": "VitsTokenizer",
    "vits_raw_named": "VitsTokenizer", "myt5_named": "MyT5Tokenizer",
    "gpt_neox_japanese_named": "GPTNeoXJapaneseTokenizer", "clvp_named": "ClvpTokenizer"}
#: GPT-2 twins of the Python classes' folders whose own architectures vLLM 0.29.0 starts
#: none of (``real_py_gpt2_``, tools/build_python_bodies.py ``--gpt2``), and the class
#: each names; the releases that answered them (0.31.0: the corpus's own answers).
GPT2_PY_FOLDERS: Mapping[str, str] = {
    "marian_gpt2": "MarianTokenizer", "m2m_100_gpt2": "M2M100Tokenizer",
    "plbart_gpt2": "PLBartTokenizer", "speech_to_text_gpt2": "Speech2TextTokenizer",
    "blenderbot_small_gpt2": "BlenderbotSmallTokenizer",
    "wav2vec2_gpt2": "Wav2Vec2CTCTokenizer"}
GPT2_PY_RELEASES: frozenset[str] = frozenset({"0.29.0", "0.31.0"})


@dataclass(frozen=True)
class RenderCase:
    """One corpus body and vLLM's answer to it."""

    id: str
    #: The folder under tests/render, or a real folder's spec (tests/render/real/<name>).
    model_dir: Path
    endpoint: str
    body: dict[str, Any]
    #: The server's flags, spelled as vLLM's (``{"--served-model-name": ..., ...}``).
    server: dict[str, Any]
    #: vLLM's HTTP status; None where its server did not start (:attr:`startup`).
    status: int | None
    #: vLLM's JSON answer (``request_id`` tails zeroed by the harvester).
    response: Any
    #: The chat answer's ids, or per prompt for completions; None for an error.
    token_ids: Any
    error: dict[str, Any] | None

    #: A real folder's name (``"real:<name>"`` in the bodies): files fetched into a cache.
    real: str | None = None
    #: A server that did not start (status None; tools/harvest_render.py
    #: ``--record-start-failures``): its return code and exception.
    startup: dict[str, Any] | None = None

    def folder(self) -> Path:
        """The model folder to render with; a real one is composed (skipped when not cached)."""
        if self.real is None:
            return self.model_dir
        import real_models

        return real_models.folder(self.real)

    @property
    def name(self) -> str:
        """The folder's name: a real one's, else the committed folder's."""
        return self.real or self.model_dir.name

    @property
    def served_names(self) -> tuple[str, ...]:
        names = self.server.get("--served-model-name", ())
        return (names,) if isinstance(names, str) else tuple(names)

    @property
    def lora_modules(self) -> list[str]:
        return list(self.server.get("--lora-modules", []))


def _lines(name: str) -> list[dict[str, Any]]:
    text = (RENDER_DIR / name).read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line]


def _by_id(records: list[dict[str, Any]], name: str) -> dict[str, dict[str, Any]]:
    """The records by id: one id twice would replay only its last answer."""
    by_id = {r["id"]: r for r in records}
    if len(by_id) != len(records):
        raise AssertionError(f"{name} gives an id twice")
    return by_id


@cache
def render_cases(corpus: str = "") -> tuple[RenderCase, ...]:
    """The render server's cases, or with ``corpus="serve_"`` vllm serve's (LoRA adapters)."""
    bodies = _lines(f"{corpus}bodies.jsonl")
    vectors = _by_id(_lines(f"{corpus}vectors.jsonl"), f"{corpus}vectors.jsonl")
    if set(vectors) != set(_by_id(bodies, f"{corpus}bodies.jsonl")):
        raise AssertionError("vectors.jsonl does not answer bodies.jsonl: re-harvest")
    return tuple(
        RenderCase(
            id=b["id"],
            model_dir=RENDER_DIR / b["model_dir"].replace("real:", "real/", 1),
            endpoint=b["endpoint"],
            body=b["body"],
            server=b["server"],
            status=vectors[b["id"]]["status"],
            response=vectors[b["id"]]["response"],
            token_ids=vectors[b["id"]]["token_ids"],
            error=vectors[b["id"]]["error"],
            real=b["model_dir"].removeprefix("real:") if b["model_dir"].startswith(
                "real:") else None,
            startup=vectors[b["id"]].get("startup"),
        )
        for b in bodies
    )


@cache
def kept_vectors(release: str, corpus: str) -> dict[str, dict[str, Any]]:
    """``release``'s answers for ``corpus``'s bodies by id, kept compactly in
    releases/<release>/<corpus>vectors.jsonl (a builder's ``--keep-release``)."""
    name = f"releases/{release}/{corpus}vectors.jsonl"
    return _by_id(_lines(name), name)


def kept_case(case: RenderCase, release: str, corpus: str) -> RenderCase:
    """``case`` with ``release``'s kept answer in place of 0.31.0's, for :func:`assert_replays`."""
    vector = kept_vectors(release, corpus)[case.id]
    return replace(case, status=vector["status"], token_ids=vector["token_ids"],
                   error=vector["error"], startup=vector.get("startup"))


def each_case(cases: Sequence[RenderCase]) -> pytest.MarkDecorator:
    """Parametrize a replay test with ``case``: one per body of ``cases``, named by its id."""
    import pytest

    return pytest.mark.parametrize("case", cases, ids=[c.id for c in cases])


def assert_replays(renderer: Renderer, case: RenderCase, *,
                   unsupported: Mapping[str, str] | None = None,
                   same_reason: Callable[[RenderCase, RenderRequestError], bool] | None = None
                   ) -> None:
    """``renderer`` gives vLLM's ids for ``case``, or the typed error with vLLM's status:
    with vLLM's message as its reason where ``same_reason`` says so (less the
    `` (parameter=…)`` vLLM's server appends for an error naming its parameter); an image
    vLLM failed to load is an UndecodableMediaError; a body ``unsupported`` names
    (id -> field) is refused as not reproduced, naming that field."""
    import pytest

    from prefixkey.errors import PrefixKeyError, UndecodableMediaError
    from prefixkey.render import RenderRequestError, RenderUnsupportedError

    if case.status == 200:
        rendered = renderer.render(case.endpoint, case.body)
        ids: Any = [list(x.token_ids) for x in rendered]
        if case.endpoint == "/v1/chat/completions":
            ids = ids[0]
        assert ids == case.token_ids
        return
    with pytest.raises(PrefixKeyError) as info:
        renderer.render(case.endpoint, case.body)
    if unsupported and case.id in unsupported:
        assert isinstance(info.value, RenderUnsupportedError), info.value
        assert info.value.field == unsupported[case.id]
        return
    assert not isinstance(info.value, RenderUnsupportedError), info.value
    assert case.error is not None
    if isinstance(info.value, UndecodableMediaError):
        assert (case.status, case.error["message"][:21]) == (400, "Failed to load image:")
        return
    assert isinstance(info.value, RenderRequestError), info.value
    assert info.value.status == case.status, (info.value, case.error)
    if same_reason is not None and same_reason(case, info.value):
        message, param = case.error["message"], case.error.get("param")
        assert info.value.reason in (message, message.removesuffix(f" (parameter={param})"))


def assert_covers_both_answers(cases: tuple[RenderCase, ...], folders: Iterable[str]) -> None:
    """The corpus names exactly ``folders``, each with a body vLLM answered and one it
    refused (a replay that only ever renders proves no refusal)."""
    folders = set(folders)
    assert {c.real for c in cases} == folders
    for real in folders:
        assert {200, 400} <= {c.status for c in cases if c.real == real}, real


def assert_takes_rebuild(renderer: Renderer, cls: str) -> None:
    """The folder's tokenizer is ``cls``'s rebuild (render/_hf_rebuilds.py), not another path."""
    from prefixkey.render._hf_rebuilds import REBUILDS

    decision = renderer.folder.tokenizer_decision
    assert (decision.path, decision.tokenizer_class) == ("rebuilt", cls)
    assert decision.recipe == REBUILDS[cls].name


def class_rebuild_test(folder_classes: Mapping[str, str], renderer: Callable[[str], Renderer]
                       ) -> Callable[[str, str], None]:
    """The test that each real folder of ``folder_classes`` takes its class's rebuild
    (:func:`assert_takes_rebuild`), parametrized ``real``, ``cls``; a suite binds it as
    ``test_each_folder_takes_its_class_rebuild``."""
    import pytest

    @pytest.mark.parametrize(("real", "cls"), sorted(folder_classes.items()))
    def test(real: str, cls: str) -> None:
        assert_takes_rebuild(renderer(real), cls)

    return test


#: vLLM flag -> ServerOptions field, for the flags the corpora's servers were given as
#: they are (the others are read in :func:`server_options`).
FLAGS = {
    "--served-model-name": "served_model_name", "--max-model-len": "max_model_len",
    "--chat-template-content-format": "chat_template_content_format",
    "--default-chat-template-kwargs": "default_chat_template_kwargs",
    "--trust-request-chat-template": "trust_request_chat_template",
    "--enable-auto-tool-choice": "enable_auto_tool_choice",
    "--tool-call-parser": "tool_call_parser",
    "--exclude-tools-when-tool-choice-none": "exclude_tools_when_tool_choice_none",
    "--tokenizer-mode": "tokenizer_mode",
    "--trust-request-mm-kwargs": "trust_request_mm_kwargs",
    "--mm-processor-kwargs": "mm_processor_kwargs",
}
#: Engine flags of ``vllm serve`` runs (serve_ corpus) that do not change rendering.
ENGINE_FLAGS = frozenset({"--enable-scale-out", "--enable-lora", "--max-lora-rank",
                          "--enforce-eager"})


def _folder(value: str) -> Path:
    """A folder a corpus names: ``real:<name>`` composed from the fetch cache, else one
    under tests/render."""
    if not value.startswith("real:"):
        return RENDER_DIR / value
    import real_models

    return real_models.folder(value.removeprefix("real:"))


def server_options(case: RenderCase, release: str | None = None) -> ServerOptions:
    """The options of the server that answered ``case`` (its flags and ``env:`` variables),
    at ``release`` (None: ServerOptions' own default)."""
    return flag_options(str(case.folder()), case.server, release)


def flag_options(folder: str, server: Mapping[str, Any], release: str | None = None
                 ) -> ServerOptions:
    """The options of a server started on ``folder`` with the flags ``server``."""
    from prefixkey.render import ServerOptions, parse_lora_module

    fields: dict[str, Any] = {} if release is None else {"vllm_version": release}
    for flag, value in server.items():
        if flag == "--lora-modules":
            fields["lora_modules"] = tuple(parse_lora_module(v) for v in value)
        elif flag == "--chat-template":  # a file under tests/render, as the harvester passed it
            fields["chat_template"] = str(RENDER_DIR / value)
        elif flag == "--tokenizer":  # a real folder, or a name a ``link:`` key makes
            fields["tokenizer"] = str(_folder(value)) if value.startswith("real:") else value
        elif flag.startswith(LINK_PREFIX):
            continue  # the working directory's (_linked_cwd)
        elif flag == "env:VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS":
            fields["gpt_oss_harmony_system_instructions"] = bool(int(value))
        elif flag == "env:VLLM_SYSTEM_START_DATE":
            fields["system_start_date"] = value
        elif flag not in ENGINE_FLAGS:
            fields[FLAGS[flag]] = value
    return ServerOptions(model=folder, **fields)


# Bounded: a SentencePiece-Unigram folder's tokenizer holds about 260 MB (the tokenizers
# library's own); the corpora list their bodies folder by folder (and server by server),
# and the parameters below keep that order, so two suffice.
@lru_cache(maxsize=2)
def _server_renderer(folder: str, server: str, release: str | None
                     ) -> Renderer | PrefixKeyError:
    from prefixkey.errors import PrefixKeyError
    from prefixkey.render import Renderer

    flags = json.loads(server)
    try:
        with _linked_cwd(flags):
            return Renderer(flag_options(folder, flags, release))
    except PrefixKeyError as exc:  # kept too: each body of a refused server asks again
        return exc


#: A server key ``link:NAME``: NAME, relative to the server's working directory, links to
#: the folder its value names (tools/harvest_render.py), so that a relative --tokenizer
#: NAME is the string vLLM was given.
LINK_PREFIX: Final = "link:"


@contextmanager
def _linked_cwd(server: Mapping[str, Any]) -> Iterator[None]:
    """Run in a directory holding the server's ``link:`` names (when it has any): a
    Renderer reads its folders while it is built."""
    links = {k.removeprefix(LINK_PREFIX): v for k, v in server.items()
             if k.startswith(LINK_PREFIX)}
    if not links:
        yield
        return
    before = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="render_links_") as tmp:
        for name, target in links.items():
            (Path(tmp) / name).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / name).symlink_to(_folder(target), target_is_directory=True)
        os.chdir(tmp)
        try:
            yield
        finally:
            os.chdir(before)


def server_renderer(case: RenderCase, release: str | None = None) -> Renderer:
    """The renderer of the server that answered ``case`` (:func:`server_options`)."""
    built = _server_renderer(str(case.folder()), json.dumps(case.server, sort_keys=True),
                             release)
    if isinstance(built, Exception):
        raise built.with_traceback(None)
    return built


def real_renderer(cases: Iterable[RenderCase], real: str, release: str | None = None
                  ) -> Renderer:
    """The renderer of the server that answered the folder ``real``'s (first) case of
    ``cases``, at ``release``."""
    return server_renderer(next(c for c in cases if c.name == real), release)


#: The field prefixkey names refusing a folder whose server exited with the exception:
#: config.json where vLLM's config reader did not load it (render/_folder.py
#: ``check_config_loads``), else the chat template its start-up probe renders
#: (render/_startup_probe.py).
STARTUP_FIELDS: Final = {
    "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig":
        "config.json",
}


def assert_server_replays(case: RenderCase, release: str | None = None, *,
                          unsupported: Mapping[str, str] | None = None,
                          same_reason: Callable[[RenderCase, RenderRequestError], bool]
                          | None = None) -> None:
    """The renderer of the server that answered ``case`` at ``release`` replays it
    (:func:`assert_replays`); where that server did not start, the Renderer refuses the
    folder with a ModelFolderError naming vLLM's exception."""
    if case.status is not None:
        assert_replays(server_renderer(case, release), case, unsupported=unsupported,
                       same_reason=same_reason)
        return
    import pytest

    from prefixkey.render import ModelFolderError

    assert case.startup is not None, case.id
    with pytest.raises(ModelFolderError) as info:
        server_renderer(case, release)
    kind, _, message = case.startup["exception"].partition(": ")
    assert info.value.field == STARTUP_FIELDS.get(case.startup["exception"], "chat_template")
    assert f"{kind.rsplit('.', 1)[-1]}: {message[:200]}" in str(info.value)


def release_cases(corpus: str, release: str, refused: Collection[str] = ()
                  ) -> tuple[RenderCase, ...]:
    """``corpus``'s cases with ``release``'s answers, but for the folders ``refused``: its
    harvested copy (``<corpus>0XY_``), the corpus itself at the base release, else the
    answers kept for it (a body of another folder without one: KeyError)."""
    copy = f"{corpus}{''.join(release.split('.')[:2])}_"
    if (RENDER_DIR / f"{copy}vectors.jsonl").exists():
        cases = render_cases(copy)
    elif release == BASE_RELEASE:
        cases = render_cases(corpus)
    else:
        return tuple(kept_case(c, release, corpus) for c in render_cases(corpus)
                     if c.name not in refused)
    return tuple(c for c in cases if c.name not in refused)


def release_table(corpora: str | Iterable[str], refused: Mapping[str, Collection[str]]
                  ) -> dict[str, tuple[RenderCase, ...]]:
    """A replay table: each release ``refused`` names (release -> the folders it is
    refused for, empty where it replays them all) and its answers for the corpora's
    bodies of the other folders (:func:`release_cases`)."""
    names = (corpora,) if isinstance(corpora, str) else tuple(corpora)
    return {release: tuple(c for corpus in names for c in release_cases(corpus, release, folders))
            for release, folders in refused.items()}


def each_release_case(table: Mapping[str, Iterable[RenderCase]]) -> pytest.MarkDecorator:
    """Parametrize a replay test with ``release``, ``case``: each release's cases (as
    :func:`release_table` gives them), named ``<release>/<id>``, in the corpora's order."""
    import pytest

    params = [pytest.param(release, case, id=f"{release}/{case.id}")
              for release, cases in table.items() for case in cases]
    if not params:  # a table that names nothing would pass without replaying
        raise AssertionError("an empty replay table")
    return pytest.mark.parametrize(("release", "case"), params)
