"""An extra-backed name without its extra: a MissingExtraError naming the extra to install.

Each case hides one module of an extra (``sys.modules[name] = None`` makes its
import fail as an uninstalled module's does) in a fresh interpreter, then uses
the name as a newcomer would.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from prefixkey._extras import EXTRA_MODULES, needs_extra
from prefixkey.errors import MissingExtraError, PrefixKeyError

_PROBE = """
import json, sys
sys.modules[{module!r}] = None
from prefixkey.errors import MissingExtraError, PrefixKeyError
try:
    {code}
except ImportError as exc:
    print(json.dumps({{"type": type(exc).__name__, "message": str(exc),
                      "extra": getattr(exc, "extra", None), "name": exc.name,
                      "typed": isinstance(exc, MissingExtraError)
                               and isinstance(exc, PrefixKeyError)}}))
else:
    print(json.dumps(None))
"""

#: A SentencePiece Python tokenizer's folder (its committed files name the class).
_SIGLIP = Path(__file__).resolve().parents[1] / "render" / "real" / "siglip_py"
CASES = [
    ("zmq", "from prefixkey.fleet import Subscriber", "zmq"),
    ("zmq", "from prefixkey.fleet import AsyncSubscriber", "zmq"),
    ("redis", "from prefixkey.fleet import RedisPrefixIndex\n"
              "    RedisPrefixIndex.from_url('redis://127.0.0.1:1/0')", "redis"),
    ("ray", "from prefixkey.gateways.ray import PrefixKeyRouter", "ray"),
    ("tokenizers", "from prefixkey.render import Renderer", "render"),
    ("jinja2", "from prefixkey.render import Renderer", "render"),
    ("mistral_common", "from prefixkey.render import Renderer, ServerOptions\n"
                       "    Renderer(ServerOptions(model='m', tokenizer_mode='mistral'))",
     "mistral"),
    ("sentencepiece", "from prefixkey.render import Renderer, ServerOptions\n"
                      f"    Renderer(ServerOptions(model={str(_SIGLIP)!r}))", "sentencepiece"),
    ("blake3", "from prefixkey.multimodal import MMHasher", "multimodal"),
    ("PIL", "from prefixkey.multimodal import MMHasher", "multimodal"),
    ("hypothesis", "from prefixkey.testing import replay", "hypothesis"),
]


@pytest.mark.parametrize(("module", "code", "extra"), CASES,
                         ids=[f"{c[2]}-{c[0]}" for c in CASES])
def test_a_missing_extra_names_the_extra_to_install(module: str, code: str, extra: str) -> None:
    proc = subprocess.run([sys.executable, "-c", _PROBE.format(module=module, code=code)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = json.loads(proc.stdout.splitlines()[-1])
    assert seen is not None, f"{code} worked without {module}"
    assert seen["typed"] and seen["type"] == "MissingExtraError", seen
    assert seen["extra"] == extra and seen["name"] == module
    assert f"pip install 'prefixkey[{extra}]'" in seen["message"], seen["message"]


def test_every_extra_of_the_table_is_a_packaged_extra() -> None:
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11+")
    with open(Path(__file__).resolve().parents[2] / "pyproject.toml", "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    assert set(EXTRA_MODULES) <= set(extras)


def test_only_the_extras_own_modules_become_missing_extra_errors() -> None:
    """Another missing module (ours, a broken install's) is not fixed by the extra: as it is."""
    with pytest.raises(MissingExtraError) as typed, needs_extra("render", "the renderer"):
        raise ModuleNotFoundError("No module named 'jinja2.sandbox'", name="jinja2.sandbox")
    assert isinstance(typed.value, PrefixKeyError) and isinstance(typed.value, ImportError)
    assert str(typed.value) == ("the renderer needs the 'render' extra: pip install "
                                "'prefixkey[render]' (the module 'jinja2' is not installed)")
    with pytest.raises(ModuleNotFoundError) as bare, needs_extra("render", "the renderer"):
        raise ModuleNotFoundError("No module named 'prefixkey.nothing'", name="prefixkey.nothing")
    assert not isinstance(bare.value, MissingExtraError)


def test_mm_id_without_the_extra_says_it_once() -> None:
    code = ("import sys; sys.modules['blake3'] = None\n"
            "from prefixkey.cli import main\n"
            "raise SystemExit(main(['mm-id', '--model', 'm', 'x.png']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("pip install 'prefixkey[multimodal]'") == 1, proc.stderr
    assert "'blake3' is not installed" in proc.stderr
