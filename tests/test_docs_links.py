"""Every relative link of the user's documents (README.md and docs/) leads to a file or folder of
the repository: a page moved or removed breaks no link to it."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# [text](target): the target up to its closing parenthesis, without spaces
LINK = re.compile(r"\]\(([^)\s]+)\)")


def relative_links(page: Path) -> list[str]:
    """The page's links that point into the repository: no scheme (https:, mailto:), no anchor
    alone; each without its #anchor."""
    found = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        found.append(target.split("#", 1)[0])
    return found


def broken(pages: list[Path], root: Path = ROOT) -> dict[str, list[str]]:
    out = {}
    for page in pages:
        missing = [t for t in relative_links(page) if not (page.parent / t).exists()]
        if missing:
            out[str(page.relative_to(root))] = missing
    return out


def test_every_relative_link_of_the_readme_and_docs_resolves():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    assert len(pages) > 10  # the walk reached docs/ and docs/results/
    assert broken(pages) == {}


def test_the_check_sees_a_broken_link_and_skips_addresses(tmp_path):
    (tmp_path / "there.md").write_text("x")
    page = tmp_path / "page.md"
    page.write_text(
        "[a](there.md) [b](there.md#part) [c](https://example.com/x.md) [d](#top)\n"
        "[e](gone.md) [f](sub/gone.md#x) [g](mailto:someone@example.com)\n"
    )
    assert broken([page], tmp_path) == {"page.md": ["gone.md", "sub/gone.md"]}
