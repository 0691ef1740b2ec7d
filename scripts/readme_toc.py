"""Rewrites the README's table of contents from its headings.

The list between ``<!-- toc`` and ``<!-- /toc -->`` holds every ``##`` heading, and the
``###`` ones under it indented, linked by GitHub's anchors; headings inside fenced code do
not count. Run it after adding or renaming a section (``python scripts/readme_toc.py``);
tests/test_readme.py fails while the list is stale, with this command in its message.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
TOC = re.compile(r"(<!-- toc[^\n]*-->\n)(.*?)(<!-- /toc -->)", re.S)


def anchor(title: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", title.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def headings(readme: str) -> list[tuple[int, str]]:
    found, fenced = [], False
    for line in readme.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"(##+) (.+)", line)) and len(match[1]) <= 3:
            found.append((len(match[1]), match[2].strip()))
    return found


def contents(readme: str) -> str:
    return "".join(
        f"{'  ' * (level - 2)}- [{title}](#{anchor(title)})\n" for level, title in headings(readme)
    )


def with_contents(readme: str) -> str:
    return TOC.sub(lambda found: found[1] + contents(readme) + found[3], readme, count=1)


def main() -> int:
    readme = README.read_text(encoding="utf-8")
    README.write_text(with_contents(readme), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
