"""The monitor's process table as painted: the cells of a row styled (state colours, node rows bold,
stale rows dim) and the rows written into the ``DataTable`` (the rows come from tui/process_rows.py).

Painting is incremental (docs/architecture.md §4: a repaint costs what changed): new rows are
appended and only the cells that changed are updated. DataTable cannot insert a row above others,
so when the new order does not merely extend the shown one (a cluster node's first answer, a process
of this machine seen after the other nodes' rows), the table is cleared and refilled and the caller
puts the cursor back on its selection.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

from rich.text import Text
from textual.widgets import DataTable

from vllm_deploy_wizard.tui.process_rows import UNKNOWN, TableRow

#: State colours of the process table.
STATE_STYLE = {"READY": "green", "STARTING": "cyan", "BACKOFF": "yellow", "FATAL": "bold red", "EXITED": "red",
               "STOPPING": "magenta", "STOPPED": "dim", UNKNOWN: "bold red"}
#: Characters of a Detail cell kept (the column shows what fits; the full text is in the log pane / failure box).
DETAIL_CHARS = 60


def styled(r: TableRow) -> dict[str, Any]:
    """Row ``r``'s cells as the table shows them: the state coloured (:data:`STATE_STYLE`; dim when
    stale), a node row's name bold, the detail cut at :data:`DETAIL_CHARS`."""
    cells: dict[str, Any] = {**r.cells, "detail": r.cells["detail"][:DETAIL_CHARS]}
    cells["state"] = Text(r.cells["state"], style="dim" if r.stale else STATE_STYLE.get(r.cells["state"], ""))
    if r.kind == "node":
        cells["name"] = Text(r.cells["name"], style="bold")
    return cells


def paint_rows(table: DataTable, rows: list[TableRow], shown: dict[str, dict],
               quiet: AbstractContextManager | None = None) -> bool:
    """Make ``table`` show ``rows`` in order; ``shown`` maps each row key to the cells last painted
    (kept up to date here). ``quiet`` is entered around the painting (the screen's ``prevent`` of
    the table's highlight messages, when the screen places the cursor itself: clearing and the
    first row move it). Returns True when the table was rebuilt (its cursor is then on row 0)."""
    keys = [r.key for r in rows]
    on_screen = [str(r.key.value) for r in table.ordered_rows]
    rebuilt = on_screen != keys[:len(on_screen)]
    with quiet or nullcontext():
        if rebuilt:
            table.clear()
            shown.clear()
        for r in rows:
            cells = styled(r)
            if r.key not in table.rows:
                table.add_row(*cells.values(), key=r.key)
            else:
                last = shown.setdefault(r.key, {})
                for key, value in cells.items():
                    if last.get(key) != value:  # an unchanged cell costs the table no re-render
                        table.update_cell(r.key, key, value)
            shown[r.key] = cells
    return rebuilt
