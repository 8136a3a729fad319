"""The README stays a front page: short, and every link in it leads somewhere.

The documentation lives in docs/ (a MkDocs site that CI builds in strict mode, which checks the
site's own links); the README is read on its own, on a forge or in an editor, where nothing
checks its links. These tests do, cheaply.
"""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_LINES = 300

# [text](target) outside code spans; images too. Targets with a scheme are not checked.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _without_code(text: str) -> str:
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def readme_links(text: str) -> list[str]:
    return LINK.findall(_without_code(text))


def broken_links(text: str, base: Path) -> list[str]:
    """Relative links whose file does not exist, and in-page anchors no heading makes."""
    anchors = {_anchor(h) for h in re.findall(r"^#+ (.+)$", _without_code(text), flags=re.M)}
    broken = []
    for target in readme_links(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):      # http:, https:, mailto:
            continue
        path, _, fragment = target.partition("#")
        if not path:
            if fragment not in anchors:
                broken.append(target)
        elif not (base / path).exists():
            broken.append(target)
    return broken


def test_readme_is_at_most_300_lines():
    n = len(README.read_text().splitlines())
    assert n <= MAX_LINES, f"README.md has {n} lines; at most {MAX_LINES}: move detail into docs/"


def test_every_relative_link_in_the_readme_exists():
    text = README.read_text()
    assert len(readme_links(text)) >= 10          # the checker sees the README's links at all
    assert broken_links(text, ROOT) == []


def test_the_link_check_finds_a_missing_file_and_a_missing_anchor(tmp_path):
    (tmp_path / "there.md").write_text("x")
    text = "# Top\n\n[a](there.md) [b](missing.md) [c](#top) [d](#nowhere) [e](https://x.org/y)\n`[f](code.md)`\n"
    assert broken_links(text, tmp_path) == ["missing.md", "#nowhere"]
