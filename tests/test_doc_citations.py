"""Every ``docs/<page>.md §N`` the tree cites names a page of docs/ and a heading on it.

Code and docs cite the rules they follow by page and section (``docs/synthesis.md §2.9``,
``docs/detection.md §0.6, §3.1``, ``docs/synthesis.md §4.7–4.8``); a renumbered or deleted section
must not leave citations pointing nowhere.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Where citations live: the shipped packages, tools, benchmarks, tests and the docs themselves.
CITING = ("catalog", "detect", "launcher", "tui", "vllm_deploy_wizard", "tools", "bench", "tests", "docs")
HEADING = re.compile(r"^#+\s+(?:§\s*)?(\d+(?:\.\d+)*)\.?\s", re.MULTILINE)
SECTION = r"§\s*\d+(?:\.\d+)*(?:\s*[–-]\s*\d+(?:\.\d+)*)?"
CITATION = re.compile(rf"docs/(?P<page>[\w-]+)\.md(?P<sections>(?:(?:\s*,|\s+and|\s+or)?\s+{SECTION})*)")


def sections_of(page: Path) -> set[str]:
    return set(HEADING.findall(page.read_text(encoding="utf-8")))


def cited(text: str) -> list[tuple[str, str, int]]:
    """``(page, section, offset)`` for every section cited after a ``docs/<page>.md`` (ranges expanded at
    their last level: ``§4.7–4.8`` is 4.7 and 4.8); a page cited without a section gives section ""."""
    flat = re.sub(r"\n[ \t]*(?:#+:?|\*|//)?[ \t]*", lambda m: " " * len(m.group(0)), text)  # join wrapped comments
    out = []
    for m in CITATION.finditer(flat):
        refs = re.findall(r"§\s*(\d+(?:\.\d+)*)(?:\s*[–-]\s*(\d+(?:\.\d+)*))?", m.group("sections"))
        if not refs:
            out.append((m.group("page"), "", m.start()))
        for first, last in refs:
            out.append((m.group("page"), first, m.start()))
            if last:
                head, _, lo = first.rpartition(".")
                hi = last.rpartition(".")[2]
                out += [(m.group("page"), f"{head + '.' if head else ''}{i}", m.start())
                        for i in range(int(lo) + 1, int(hi) + 1)]
    return out


def test_every_cited_docs_section_exists() -> None:
    pages = {p.stem: sections_of(p) for p in (ROOT / "docs").glob("*.md")}
    broken, count = [], 0
    for top in CITING:
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix not in (".py", ".md", ".tcss", ".yaml", ".toml") or "__pycache__" in path.parts:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for page, section, offset in cited(text):
                count += 1
                where = f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, offset) + 1}"
                if page not in pages:
                    broken.append(f"{where}: docs/{page}.md does not exist")
                elif section and section not in pages[page]:
                    broken.append(f"{where}: docs/{page}.md has no §{section}")
    assert count > 200, f"only {count} citations found: is the pattern still right?"
    assert not broken, "\n".join(broken)


def test_the_checker_reads_lists_and_ranges() -> None:
    text = "see docs/detection.md §0.6, §3.1 and docs/synthesis.md §4.7–4.8;\n#   docs/plan-file.md\n"
    assert [(p, s) for p, s, _ in cited(text)] == [
        ("detection", "0.6"), ("detection", "3.1"), ("synthesis", "4.7"), ("synthesis", "4.8"), ("plan-file", "")]
