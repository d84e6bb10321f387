"""Every relative link in the project's markdown points at a file (and heading) that exists.

Covers README.md, CHANGELOG.md, BENCHMARKS.md, docs/*.md, docs/guides/*.md,
docs/decisions/*.md and the benchmark history.
Links inside code (fenced blocks, inline code) are not links; absolute URLs are not checked.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([
    ROOT / "README.md",
    ROOT / "BENCHMARKS.md",
    ROOT / "bench" / "results" / "history.md",
    *(ROOT / "docs").glob("*.md"),
    *(ROOT / "docs" / "guides").glob("*.md"),
    ROOT / "CHANGELOG.md",
    *(ROOT / "docs" / "decisions").glob("*.md"),
])
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*$", re.M)


def _prose(text: str) -> str:
    return CODE.sub("", FENCE.sub("", text))


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = heading.replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {_slug(h) for h in HEADING.findall(FENCE.sub("", path.read_text(encoding="utf-8")))}


def _links(path: Path) -> list[str]:
    found = LINK.findall(_prose(path.read_text(encoding="utf-8")))
    return [each for each in found if not re.match(r"[a-z][a-z0-9+.-]*:", each)]


def test_the_documents_exist_and_link() -> None:
    assert (ROOT / "docs" / "architecture.md") in DOCS
    assert any(_links(path) for path in DOCS)


@pytest.mark.parametrize("path", DOCS, ids=lambda path: str(path.relative_to(ROOT)))
def test_relative_links_resolve(path: Path) -> None:
    broken = []
    for link in _links(path):
        target, _, anchor = link.partition("#")
        resolved = (path.parent / unquote(target)).resolve() if target else path
        if not resolved.is_relative_to(ROOT):
            broken.append(f"{link} (outside the repository)")
        elif not resolved.exists():
            broken.append(f"{link} (no such file)")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"{link} (no such heading)")
    assert not broken, f"{path.relative_to(ROOT)}: {broken}"


def test_slugs_follow_github() -> None:
    assert _slug("Admin API (default `127.0.0.1:8081`)") == "admin-api-default-1270018081"
    assert _slug("Put Stoker in front of your site") == "put-stoker-in-front-of-your-site"
