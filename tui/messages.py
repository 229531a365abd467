"""The messages the wizard app posts to its screens (and its workers to the app)."""

from __future__ import annotations

from typing import Any

from textual.message import Message


class DataChanged(Message):
    """Catalog, inventory or candidates arrived (or failed): screens re-read ``app`` state."""


class SelectionChanged(Message):
    """The selection changed; ``app.options`` already holds the new constraints answer."""


class CatalogLoaded(Message):
    """Worker result: the catalog (or the error text when loading failed)."""

    def __init__(self, catalog: Any, error: str | None = None) -> None:
        super().__init__()
        self.catalog = catalog
        self.error = error


class InventoryDetected(Message):
    """Worker result: the detection inventory (detect never raises; ``error`` is for a crash)."""

    def __init__(self, inventory: Any, error: str | None = None) -> None:
        super().__init__()
        self.inventory = inventory
        self.error = error
