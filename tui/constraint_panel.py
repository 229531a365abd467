"""The constraint panel: current warnings and the reasons behind disabled choices, always visible.

A reusable widget (carries ``DEFAULT_CSS``). It holds no state of its own: :meth:`show` is called
from the owning screen's ``SelectionChanged`` handler with the warnings of the constraints answer
(docs/constraints.md §3: N5 banner, TP hints, …) and any selection error; it repaints only when the
text changed, so the benchmarked keystroke→panel path stays one ``Static.update``.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class ConstraintPanel(Static):
    """Warnings (yellow ⚠), the error that stops planning (red ✗), or "No warnings" (green ✓)."""

    DEFAULT_CSS = """
    ConstraintPanel {
        border: round $warning;
        border-title-color: $warning;
        padding: 0 1;
        height: auto;
        max-height: 10;
        overflow-y: auto;
    }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__("", **kwargs)
        self.border_title = "Constraints"
        self.lines: tuple[str, ...] = ()
        self.updates = 0

    def show(self, warnings: list[str], error: str | None = None) -> None:
        """Replace the panel text; no-op when unchanged. ``updates`` counts real repaints."""
        lines = tuple(([f"✗ {error}"] if error else []) + [f"⚠ {w}" for w in warnings])
        if lines == self.lines and self.updates:
            return
        self.lines = lines
        self.updates += 1
        if not lines:
            self.update(Text("✓ No warnings for this selection", style="green"))
            return
        text = Text()
        for i, line in enumerate(lines):
            if i:
                text.append("\n")
            text.append(line, style="bold red" if line.startswith("✗") else "yellow")
        self.update(text)
