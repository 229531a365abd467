"""The monitor's process table widget: a ``DataTable`` that looks, and caches its rows, the same whether it
has the focus or not.

Textual's ``DataTable`` styles itself by focus (a tint, a brighter cursor) and keys its row and cell
caches by its pseudo-classes, so every focus move re-renders every cell (Rich, per cell) and, being
the top of the screen, widens the region the compositor repaints to everything between it and the
other change. The monitor moves the focus on each ``/`` and ``escape`` (the log search box takes it
and gives it back), and the table is the selection the search applies to, so it keeps its focused
look throughout: ``wizard.tcss`` gives ``#procs`` the focused rules in both states,
:meth:`SteadyTable.notify_style_update` keeps the caches when a restyle left every rule as it was
(Textual restyles a widget on each focus move and means to skip equal styles, but its ``Styles``
dataclass equality also compares an update counter, so it never does), and
:meth:`SteadyTable.get_pseudo_class_state` leaves the focus out of the cache key (``python
bench/bench_monitor_flood.py``, search box).
"""

from __future__ import annotations

from textual.widget import PseudoClasses
from textual.widgets import DataTable


class SteadyTable(DataTable):
    """A ``DataTable`` whose rendering does not depend on focus (see the module docstring)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._styled: object = None  # the rules of the last style update that cleared the caches

    def _rules(self) -> object:
        styles = self.styles
        return (styles.base.get_rules(), styles.inline.get_rules(),
                {name: (c.base.get_rules(), c.inline.get_rules()) for name, c in self._component_styles.items()})

    def notify_style_update(self) -> None:
        """Clear the render caches (``DataTable``'s reaction) only when a rule changed."""
        rules = self._rules()
        if rules == self._styled:
            return
        self._styled = rules
        super().notify_style_update()

    def get_pseudo_class_state(self) -> PseudoClasses:
        """The pseudo-classes DataTable keys its caches by, without the focus (it looks the same)."""
        return super().get_pseudo_class_state()._replace(focus=False)
