"""The docs tell the truth about themselves: every page indexed, the API reference current."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_docs_index_links_every_page() -> None:
    index = (DOCS / "README.md").read_text()
    linked = set(re.findall(r"\]\(([\w.-]+\.md)\)", index))
    pages = {p.name for p in DOCS.glob("*.md")} - {"README.md"}
    assert pages - linked == set()
    assert linked - pages == set()


def test_relative_links_in_docs_resolve() -> None:
    broken = [
        f"{page.relative_to(ROOT)}: {target}"
        for page in [*DOCS.glob("*.md"), ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
        for target in re.findall(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)", page.read_text())
        if not (page.parent / target).exists()
    ]
    assert broken == []


def test_api_reference_is_current() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "api_reference.py"), "--check"],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr


def test_api_reference_gives_every_function_and_class_its_signature() -> None:
    entries = re.findall(r"^- `([^`]+)` \((function|class)\)", (DOCS / "api.md").read_text(), re.M)
    assert len(entries) > 100
    assert [name for name, _ in entries if "(" not in name] == []
    hasher = "- `Hasher(*, block_size: int, hash_algo: str | None = None,"
    assert hasher in (DOCS / "api.md").read_text()


def test_docs_cite_only_what_they_contain() -> None:
    """No "spec §3.5": the spec the docs were written from is not published with them."""
    pages = [*DOCS.glob("*.md"), ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    cited = [f"{page.name}: {line.strip()}" for page in pages
             for line in page.read_text().splitlines() if "§" in line]
    assert cited == []
