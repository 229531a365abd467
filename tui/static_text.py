"""Changing a ``Static``'s text without laying out the screen when its height stays the same.

``Static.update`` asks for a layout by default: the text's height may change. A layout reflows every
widget of the screen (their geometry, cuts, a Resize for each), which costs a monitor frame more than
the text itself; the monitor's side panel changes its phase line on every process switch and its
metric labels with every scrape, nearly always with the same number of rows. :func:`update_text`
wraps the old and the new text at the widget's width (Rich's word wrap, as Textual wraps plain
text) and lays out only when the row counts differ (or the widget has no width yet).
"""

from __future__ import annotations

import io

from rich.console import Console
from rich.text import Text
from textual.widgets import Static

#: The console that measures wrapped text (never printed to).
MEASURE = Console(width=200, color_system=None, file=io.StringIO())


def text_rows(text: str, width: int) -> int:
    """Rows ``text`` takes in a Static ``width`` cells wide (words wrapped as Textual wraps them)."""
    return sum(len(Text(part).wrap(MEASURE, max(1, width))) or 1 for part in text.split("\n"))


def update_text(widget: Static, text: str) -> None:
    """``widget.update(text)``, laying out the screen only when the text's height changes."""
    width = widget.content_region.width
    old = str(widget.content)
    same = width > 0 and text_rows(old, width) == text_rows(text, width)
    widget.update(text, layout=not same)
