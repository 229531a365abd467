#!/usr/bin/env python3
"""Rewrite citations of the shared specs and design notes in *.py files to the repo's docs/ pages.

Dry run by default: prints every change as ``path:line: old -> new`` and the citations it could not
map, and changes nothing. ``--write`` rewrites the files in place.

    python tools/rewrite_citations.py [--write] [ROOT]

Mapping (the § numbers are kept; the docs pages use the shared specs' numbering):

* ``shared/spec/recipes-synthesis.md §3[.x]`` / ``recipes-synthesis §3[.x]`` → ``docs/constraints.md §3[.x]``
* any other ``recipes-synthesis`` citation → ``docs/synthesis.md`` (same §)
* ``plan-json[.md] §n`` → ``docs/plan-file.md §n``
* ``detection.md §n`` / ``spec/detection.md`` / ``detection §n`` → ``docs/detection.md §n``
* ``DESIGN.md style N`` → ``docs/architecture.md §3 style N``; ``DESIGN.md`` + boundaries →
  ``docs/architecture.md §2``; other ``DESIGN.md`` → ``docs/architecture.md``
* a bare ``spec §n`` (the catalog's name for the synthesis spec) → as ``recipes-synthesis §n``
* ``shared/notes/real-vllm-on-cpu.md`` → ``docs/supervision.md §9``

A ``../`` or ``shared/`` prefix and backtick quoting around the file name are handled; a bare
``detection`` word is rewritten only when a ``§`` follows it. Later § numbers in a list
(``recipes-synthesis §2.4, §3.1``) are not re-targeted: the dry run lists such lines under
"check by hand".
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

SEC = r"(?P<sec>\d+(?:\.\d+)*)"
#: ``[../][shared/][spec/]NAME[.md]`` optionally quoted with backticks, optionally followed by ``§n``.
SPEC_RE = re.compile(
    r"(?P<q1>``|`)?(?P<prefix>(?:\.\./)?(?:shared/)?(?:spec/)?)"
    r"(?P<name>recipes-synthesis|plan-json|detection)(?P<ext>\.md)?(?P<q2>``|`)?"
    r"(?P<tail>\s*§\s*" + SEC + r")?"
)
DESIGN_RE = re.compile(r"(?P<q1>``|`)?(?:\.\./)?(?:shared/)?DESIGN\.md(?P<q2>``|`)?(?P<rest>[ ,]*(?:style\s+(?P<style>\d+)|boundaries)?)")
#: A bare "spec §n" (catalog modules and tests say so for the synthesis spec).
BARE_SPEC_RE = re.compile(r"(?<![\w/.-])spec §" + SEC)
NOTES_RE = re.compile(r"(?P<q1>``|`)?(?:\.\./)?shared/notes/real-vllm-on-cpu\.md(?P<q2>``|`)?")

PAGES = {"plan-json": "docs/plan-file.md", "detection": "docs/detection.md"}


def _quoted(m: re.Match[str], text: str) -> str:
    return f"{m.group('q1') or ''}{text}{m.group('q2') or ''}"


def _spec(m: re.Match[str]) -> str:
    name, sec, prefix, ext = m.group("name"), m.group("sec"), m.group("prefix"), m.group("ext")
    if name == "detection" and not (ext or prefix or sec):
        return m.group(0)  # the plain word "detection"
    if name == "recipes-synthesis":
        page = "docs/constraints.md" if sec and sec.split(".")[0] == "3" else "docs/synthesis.md"
    else:
        page = PAGES[name]
    out = _quoted(m, page)
    if sec:
        out += " §" + sec
    return out


def _design(m: re.Match[str]) -> str:
    rest = m.group("rest") or ""
    if m.group("style"):
        return _quoted(m, "docs/architecture.md") + f" §3 style {m.group('style')}"
    if "boundaries" in rest:
        return _quoted(m, "docs/architecture.md") + " §2 boundaries"
    return _quoted(m, "docs/architecture.md") + rest


def _notes(m: re.Match[str]) -> str:
    return _quoted(m, "docs/supervision.md") + " §9"


def _bare_spec(m: re.Match[str]) -> str:
    sec = m.group("sec")
    return ("docs/constraints.md" if sec.split(".")[0] == "3" else "docs/synthesis.md") + " §" + sec


def rewrite_line(line: str) -> str:
    """The line with every mappable citation rewritten (see the module docstring)."""
    line = SPEC_RE.sub(_spec, line)
    line = BARE_SPEC_RE.sub(_bare_spec, line)
    line = DESIGN_RE.sub(_design, line)
    return NOTES_RE.sub(_notes, line)


#: What is left that a person should look at: a bare "spec §n", or a list of §s after a rewrite.
SUSPECT_RE = re.compile(r"docs/(synthesis|constraints)\.md §[\d.]+[,/ ]+(and )?§")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", default=".", type=Path)
    ap.add_argument("--write", action="store_true", help="rewrite the files (default: dry run)")
    args = ap.parse_args(argv)
    me = Path(__file__).resolve()
    changed_files = changes = 0
    suspects: list[str] = []
    for path in sorted(args.root.rglob("*.py")):
        if path.resolve() == me or any(p in (".git", ".venv", "venv", "build") for p in path.parts):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        lines = text.splitlines(keepends=True)
        new_lines = []
        for n, line in enumerate(lines, 1):
            new = rewrite_line(line)
            if new != line:
                changes += 1
                print(f"{path}:{n}: {line.strip()}\n    -> {new.strip()}")
            if SUSPECT_RE.search(new):
                suspects.append(f"{path}:{n}: {new.strip()}")
            new_lines.append(new)
        new_text = "".join(new_lines)
        if new_text != text:
            changed_files += 1
            if args.write:
                path.write_text(new_text, encoding="utf-8")
    if suspects:
        print("\ncheck by hand:")
        print("\n".join(suspects))
    verb = "rewrote" if args.write else "would rewrite"
    print(f"\n{verb} {changes} lines in {changed_files} files", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
