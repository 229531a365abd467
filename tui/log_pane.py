"""The monitor's log pane: a line-virtualised view of a process's log that stays responsive under
any log volume.

Why not ``RichLog``: it renders and wraps every line when it is written (a 2 MB line is wrapped
whole, 10,000 lines/s are each turned into segments), so a flood kept the event loop busy and a key
took ~0.5 s to show. This pane follows the Line API design of Textual's ``Log`` widget and of
toolong (a ``ScrollView`` whose :meth:`LogPane.render_line` builds only the rows on screen, cached
per line) and adds what a process log needs:

* **Batched writes, O(1) per line.** :meth:`LogPane.write_lines` takes a whole UI batch; per line it
  only stores the text and counts its rows at the pane's width (``len`` for ASCII). Nothing is
  rendered until Textual paints, once per frame, and then only the visible rows (a few dozen).
* **Wrapped at the pane's width, by cells**, so every row is known without rendering (a terminal
  and ``less`` wrap the same way); the vertical scrollbar is always there, so the width never
  changes when the log starts to overflow.
* **Long lines are cut before they reach the pane** (:func:`~vllm_deploy_wizard.tui.monitor_model.display_line`,
  with a marker naming what was cut; the full line is in the log file and ``vllm-wizard logs``).
* **Progress bars update one line in place:** an entry written with ``replace=True`` replaces the
  last line (a ``\\r`` update, launcher/logs.py).
* **ANSI colours** in a line are rendered (Rich's ANSI decoder), only for visible lines; the level
  style (``style_of``) is the base under them and a search term is highlighted.

* **A write never re-lays out the screen.** Textual's ``virtual_size`` is a layout reactive: setting
  it reflows the whole screen (every widget's geometry, its cuts, a Resize for each) once per batch.
  The pane's size does not depend on its content, so :meth:`LogPane._resize_virtual` sets it without
  the watcher and updates only the scrollbar and the scroll range (what the reflow would have done).
* **The scrollbar is drawn once per geometry** (:class:`LogScrollBar`): Textual re-renders a
  scrollbar through Rich on every refresh (~1.4 ms CPU for 38 rows, as much as the pane's rows);
  while following a full tail its thumb does not move, so the rows are kept per
  (size, range, position, colours).
* **Rendered rows are kept per line text** (:data:`RENDER_CACHE` lines), also across
  :meth:`LogPane.clear`: switching back to a process re-shows its rows without rendering them again.
* **A process switch shows in one frame** (:meth:`LogPane.repaint_in_next_frame`).

Bounded: the last ``max_lines`` lines are kept (older ones scroll out; the screen re-fills the pane
from the model's tail on a process switch or search).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from itertools import accumulate

from rich.cells import cell_len, get_character_cell_size
from rich.style import Style
from rich.text import Text
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar
from textual.strip import Strip

from vllm_deploy_wizard.tui.monitor_model import LOG_TAIL, plain_text

#: Rendered lines kept (each as its wrapped rows); a screen shows far fewer.
RENDER_CACHE = 512
#: Wrap width used before the pane has a size.
DEFAULT_WIDTH = 80


def row_count(line: str, width: int) -> int:
    """Rows ``line`` takes when wrapped at ``width`` cells (at least 1; ANSI codes take none)."""
    plain = plain_text(line)
    cells = len(plain) if plain.isascii() else cell_len(plain)
    return max(1, -(-cells // max(1, width)))


def _cut_offsets(plain: str, width: int) -> list[int]:
    """Character offsets where ``plain`` is cut into rows of ``width`` cells."""
    if plain.isascii():
        return list(range(width, len(plain), width))
    offsets, used = [], 0
    for i, ch in enumerate(plain):
        w = get_character_cell_size(ch)
        if used + w > width:
            offsets.append(i)
            used = 0
        used += w
    return offsets


class LogScrollBar(ScrollBar):
    """A vertical scrollbar that keeps its rendered rows per geometry and colours: a flood that
    follows the end refreshes the pane (and so the bar) every batch with the thumb where it was."""

    #: Geometries kept (a process switch goes back and forth between two or three).
    KEPT = 8

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._kept: OrderedDict[tuple, list[Strip]] = OrderedDict()

    def render_lines(self, crop: Region) -> list[Strip]:
        """Textual's rows for this bar, rendered once per (crop, size, range, position, colours)."""
        parent = self.parent
        styles = getattr(parent, "styles", None)
        colours = None if styles is None else (
            styles.scrollbar_background, styles.scrollbar_color, styles.scrollbar_background_hover,
            styles.scrollbar_color_hover, styles.scrollbar_background_active, styles.scrollbar_color_active,
            getattr(parent, "background_colors", None))
        key = (crop, self.size, self.window_virtual_size, self.window_size, self.position, self.grabbed,
               self.mouse_over, colours)
        strips = self._kept.get(key)
        if strips is None:
            strips = self._kept[key] = super().render_lines(crop)
            if len(self._kept) > self.KEPT:
                self._kept.popitem(last=False)
        else:
            self._kept.move_to_end(key)
        return strips


class LogPane(ScrollView, can_focus=True):
    """A bounded, line-virtualised log view (see the module docstring).

    ``max_lines``: lines kept. ``style_of``: a line's plain text → its base Rich style (the level
    colour; ``""`` for none). :attr:`highlight`: a substring shown reversed (the log search).
    :attr:`follow`: keep the newest line in view after each write.
    """

    DEFAULT_CSS = """
    LogPane { overflow-y: scroll; overflow-x: hidden; }
    """

    def __init__(self, max_lines: int = LOG_TAIL, style_of: Callable[[str], str] | None = None, *,
                 id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.max_lines = max_lines
        self.style_of = style_of or (lambda _plain: "")
        self.highlight = ""
        self.follow = True
        self._lines: deque[str] = deque(maxlen=max_lines)
        self._rows: deque[int] = deque(maxlen=max_lines)
        self._ends: list[int] | None = []
        self._wrap = DEFAULT_WIDTH
        self._cache: OrderedDict[str, list[Strip]] = OrderedDict()  # line → its rows (kept across clear())
        self._style: Style | None = None

    # ------------------------------------------------------------------ content
    @property
    def line_count(self) -> int:
        """Lines kept."""
        return len(self._lines)

    @property
    def plain_lines(self) -> list[str]:
        """The kept lines as text without ANSI codes, oldest first (what the pane shows, unwrapped)."""
        return [plain_text(line) for line in self._lines]

    def write_lines(self, entries: Iterable[tuple[str, bool]]) -> None:
        """Add a batch of ``(line, replace)`` entries, oldest first; ``replace`` True puts the line in
        place of the last one (a progress bar's update). One repaint for the batch."""
        wrap = self._wrap
        lines, rows = self._lines, self._rows
        before = self._total_rows()
        dropped = 0
        for line, replace in entries:
            n = row_count(line, wrap)
            if replace and lines:
                lines[-1], rows[-1] = line, n
            else:
                if len(lines) == self.max_lines:
                    dropped += rows[0]
                lines.append(line)
                rows.append(n)
        self._ends = None
        self._resize_virtual()
        if self.follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        elif dropped:  # keep the rows in view where they are while older ones scroll out at the top
            self.scroll_to(y=max(0, self.scroll_y - dropped), animate=False, immediate=True)
        if self._total_rows() != before or self.follow:
            self.refresh()

    def write(self, line: str, replace: bool = False) -> None:
        """Add one line (see :meth:`write_lines`)."""
        self.write_lines([(line, replace)])

    def clear(self) -> None:
        """Remove every line (their rendered rows stay cached: a process switch back shows them again)."""
        self._lines.clear()
        self._rows.clear()
        self._ends = []
        self._resize_virtual()
        self.scroll_to(y=0, animate=False, immediate=True)
        self.refresh()

    def repaint_in_next_frame(self) -> None:
        """Put the pane in the screen's next frame now, from the screen's own task (a process switch:
        the table's cursor row and the re-filled pane show together).

        ``refresh()`` asks the screen through the pane's own message queue (a Prompt, then an Update
        message from the pane's idle); the process table's cursor move has already asked, so the
        screen's frame timer usually paints the table before that Update arrives and the pane waits
        for the next frame (~20 ms more per key in ``python bench/bench_monitor_flood.py``). This
        adds the pane to the widgets the screen's next frame repaints, as Textual's handler of that
        Update does (``Screen._on_update``, Textual 8); it does nothing before the pane is mounted."""
        screen = self.screen if self.is_attached else None
        dirty = getattr(screen, "_dirty_widgets", None)
        if screen is not None and isinstance(dirty, set) and self in screen._compositor:
            dirty.add(self)
            screen.check_idle()

    def set_highlight(self, term: str) -> None:
        """Highlight ``term`` (empty: none) in the lines shown."""
        if term != self.highlight:
            self.highlight = term
            self._cache.clear()
            self.refresh()

    # ------------------------------------------------------------------ geometry
    def _row_ends(self) -> list[int]:
        if self._ends is None:
            self._ends = list(accumulate(self._rows))
        return self._ends

    def _total_rows(self) -> int:
        ends = self._row_ends()
        return ends[-1] if ends else 0

    def _resize_virtual(self) -> None:
        """New content height: scroll range and scrollbar only, no screen layout (module docstring)."""
        size = Size(self._wrap, self._total_rows())
        if size != self.virtual_size:
            self.set_reactive(LogPane.virtual_size, size)
            self._scroll_update(size)

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        """The pane's :class:`LogScrollBar` (created on first use, as Textual creates its own)."""
        if self._vertical_scrollbar is None:
            bar = LogScrollBar(vertical=True, name="vertical", thickness=self.scrollbar_size_vertical)
            bar.display = False
            self._vertical_scrollbar = bar
            self.app._start_widget(self, bar)
        return self._vertical_scrollbar

    def on_resize(self) -> None:
        """Re-wrap at the new width (rows only; rendering stays lazy)."""
        width = max(1, self.scrollable_content_region.width)
        if width != self._wrap:
            self._wrap = width
            self._rows = deque((row_count(line, width) for line in self._lines), maxlen=self.max_lines)
            self._ends = None
            self._cache.clear()
        self._resize_virtual()
        if self.follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def notify_style_update(self) -> None:
        """Styles changed (theme, focus): rendered rows carry the old background."""
        super().notify_style_update()
        self._cache.clear()
        self._style = None

    # ------------------------------------------------------------------ rendering (visible rows only)
    def _strips(self, index: int, base: Style) -> list[Strip]:
        key = self._lines[index]
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        line = self._lines[index]
        style = self.style_of(plain_text(line))
        text = Text.from_ansi(line, style=style) if "\x1b" in line else Text(line, style=style)
        if self.highlight:
            text.highlight_regex(re.escape(self.highlight), style="reverse")
        text.stylize_before(base)
        console = self.app.console
        parts = text.divide(_cut_offsets(text.plain, self._wrap))
        strips = [Strip(part.render(console), part.cell_len) for part in parts]
        self._cache[key] = strips
        if len(self._cache) > RENDER_CACHE:
            self._cache.popitem(last=False)
        return strips

    def rendered_rows(self) -> list[Strip]:
        """Every row of the kept lines as the pane draws it at its width (oldest first); renders
        them all, so it is for tests and snapshots, never for painting."""
        base = self._base_style()
        width = self._wrap
        return [strip.crop_extend(0, width, base) for i in range(len(self._lines)) for strip in self._strips(i, base)]

    def _base_style(self) -> Style:
        """The pane's own Rich style (background, colour), computed once per style change:
        ``rich_style`` walks the ancestors, too slow to ask once per row."""
        if self._style is None:
            self._style = self.rich_style
        return self._style

    def render_line(self, y: int) -> Strip:
        """Row ``y`` of the visible region (Textual's Line API)."""
        width = self._wrap
        base = self._base_style()
        row = int(self.scroll_offset.y) + y
        ends = self._row_ends()
        if not ends or row >= ends[-1]:
            return Strip.blank(width, base)
        index = bisect_right(ends, row)
        start = ends[index - 1] if index else 0
        strips = self._strips(index, base)
        strip = strips[row - start] if row - start < len(strips) else Strip.blank(width, base)
        return strip.crop_extend(0, width, base)
