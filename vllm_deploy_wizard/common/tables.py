"""Aligned CLI tables and state colours, through ``rich`` (Textual brings it).

One helper for every command that prints rows (``status``, ``launch``'s summary, ``detect``'s
probes, the ``catalog`` listings): columns are sized to their content, lines carry no trailing blanks, and a cell may be
coloured by its value (process states, probe statuses) — only when the output is a terminal and
``NO_COLOR`` is unset, so pipes, files and tests get plain text.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TextIO

#: Colour of a cell whose whole text is one of these values (process states, probe statuses, a
#: model's status on a profile and option-row states of ``catalog models`` / ``catalog show``).
STYLES: Mapping[str, str] = {
    "READY": "green", "STARTING": "cyan", "STOPPING": "cyan", "BACKOFF": "yellow", "FATAL": "bold red",
    "ORPHANED": "bold red", "EXITED": "dim", "STOPPED": "dim",
    "ok": "green", "degraded": "yellow", "unavailable": "yellow", "absent": "dim", "error": "bold red",
    "verified": "green", "unlisted": "yellow", "unsupported": "red", "disabled": "yellow", "hidden": "dim",
}


def colour_for(out: TextIO) -> bool:
    """Whether to colour what goes to ``out``: a terminal, and ``NO_COLOR`` unset."""
    return not os.environ.get("NO_COLOR") and hasattr(out, "isatty") and out.isatty()


def render(rows: Sequence[Sequence[object]], *, indent: int = 2, colour: bool = False) -> str:
    """``rows`` as aligned columns (one space between, each line prefixed by ``indent`` blanks,
    no trailing blanks); ``colour`` styles cells listed in :data:`STYLES`. Returns the text without
    a final newline ("" for no rows)."""
    if not rows:
        return ""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, show_header=False, pad_edge=False, padding=(0, 1, 0, 0))
    for _ in range(max(len(r) for r in rows)):
        table.add_column(no_wrap=True)
    for row in rows:
        table.add_row(*[Text(str(c), style=STYLES.get(str(c), "") if colour else "") for c in row])
    buf = io.StringIO()
    Console(file=buf, width=10_000, force_terminal=colour, color_system="standard" if colour else None,
            highlight=False).print(table)
    pad = " " * indent
    return "\n".join(pad + line.rstrip() for line in buf.getvalue().rstrip("\n").splitlines())


def print_table(rows: Sequence[Sequence[object]], *, indent: int = 2, out: TextIO | None = None) -> None:
    """Print :func:`render` of ``rows`` to ``out`` (default stdout), coloured on a terminal."""
    out = out or sys.stdout
    text = render(rows, indent=indent, colour=colour_for(out))
    if text:
        out.write(text + "\n")
