"""Step 2 — model: search every catalog recipe, filter by task and architecture, or name a custom one.

The table is recomputed from :func:`~vllm_deploy_wizard.tui.catalog_view.recipe_rows` on each keystroke in
the search box (pure, ~1 ms for the 173-recipe corpus). If the catalog is still loading the screen
says so and fills in on :class:`~vllm_deploy_wizard.tui.app.DataChanged` — it never blocks.

Custom model: an HF id or a local directory typed in the bottom box; the catalog's
``custom_recipe`` derives a recipe from its config.json (in a worker: the HF cache lookup touches the
disk). Errors name what was tried and are shown, not raised.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import DataTable, Footer, Header, Input, Select, Static
from textual.widgets.data_table import ColumnKey

from vllm_deploy_wizard.catalog.listing import TASKS
from vllm_deploy_wizard.common.memory_labels import node_memory
from vllm_deploy_wizard.tui.catalog_view import recipe_rows
from vllm_deploy_wizard.tui.inventory_view import detected_memory_gb
from vllm_deploy_wizard.tui.messages import DataChanged
from vllm_deploy_wizard.tui.wizard_screen import WizardScreen


def fit_mark(row: Any) -> str:
    """The Fit cell of ``row`` (a :class:`~vllm_deploy_wizard.tui.catalog_view.RecipeRow`): ``✓ as KEY``
    when only the smaller variant ``KEY`` fits, else :data:`FIT_MARK`'s mark."""
    if row.fits == "variant":
        return f"✓ as {row.fit_variant}"
    return FIT_MARK.get(row.fits, row.fits)


FIT_MARK = {"yes": "✓ fits", "multi": "multi-node", "no": "✗ too big", "none": "✗ no variant", "?": ""}


#: The Status column per :attr:`RecipeRow.status` (``available`` rows show nothing).
STATUS_MARK = {"verified": "✓ verified", "unlisted": "⚠ unlisted", "unsupported": "✗ unsupported"}


def status_mark(row) -> str:
    """The Status column: ``✓ verified`` (B1), ``⚠ unlisted`` (restricted profile the recipe does not
    list, offered because detected — H1), ``✗ unsupported`` (H2/H3: no variant runs there), else "";
    the status is the catalog's (:func:`vllm_deploy_wizard.catalog.listing.status_of`)."""
    return STATUS_MARK.get(row.status, "")


def model_status(rows: list, total: int, profile, memory: tuple[float, str] | None) -> str:
    """The line under the table: how many recipes list the profile (unlisted/unsupported ones counted
    apart, never as "for" it), what Fit is measured against, and the keys."""
    if profile is None:
        head = f"{len(rows)} of {total} recipes"
    else:
        name = profile.display_name
        listed = sum(1 for r in rows if r.listing == "available")
        head = f"{listed} of {total} recipes for {name}"
        unlisted = sum(1 for r in rows if r.listing == "unlisted")
        unsupported = sum(1 for r in rows if r.listing == "disabled")
        if unlisted:
            head += f" +{unlisted} ⚠ unlisted"
        if unsupported:
            head += f" +{unsupported} ✗ unsupported"
        fit = memory[1] if memory else f"{name}'s nominal {getattr(profile, 'gpu_count', '?')} dev, " \
            f"{node_memory(float(getattr(profile, 'vram_gb', 0) or 0))}"
        head += f" · Fit vs {fit}"
    return head + " · enter picks · custom model below"


class ModelScreen(WizardScreen):
    """Search box + filters (top), recipe table (middle), custom model box (bottom)."""

    HELP_TITLE = "Model"
    HELP_INTRO = ("Type to search; enter picks when one model matches, else moves to the table (enter picks the "
                  "row). Fit is measured against the detected machine on the detected profile (see the line under "
                  "the table). Status: ✓ verified on this hardware (listed first), ⚠ unlisted (a restricted "
                  "profile the recipe does not list, offered because it was detected), ✗ unsupported (listed "
                  "last). Custom model: HF id or local path in the bottom box, enter. ctrl+d downloads the custom "
                  "model typed there (else the highlighted recipe's) into the Hugging Face cache (resumable; "
                  "HF_TOKEN honoured).")

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("ctrl+n", "next", "Next"),
        Binding("ctrl+f", "focus_search", "Search"),
        Binding("ctrl+d", "download", "Download", priority=True),  # also from the custom box (Input: delete-right)
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="model-filters"):
            yield Input(placeholder="search name, HF id, provider", id="search")
            yield Select([(t, t) for t in TASKS], prompt="any task", id="task")
            yield Select([("dense", "dense"), ("MoE", "moe")], prompt="any arch", id="arch")
        table: DataTable[str] = DataTable(id="recipes", cursor_type="row", zebra_stripes=True)
        yield table
        yield Static("", id="model-status")
        with Horizontal(id="custom-row"):
            yield Input(placeholder="custom model: HF id or local path, enter to use", id="custom")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#recipes", DataTable)
        # fit/verified first: they are what the person decides on, and survive an 80-column terminal
        for label, key in (("Model", "title"), ("Fit", "fit"), ("Status", "verified"), ("Arch", "arch"),
                           ("Tasks", "tasks"), ("Provider", "provider"), ("HF id", "hf_id")):
            table.add_column(label, key=key)
        self.query_one("#model-status").styles.max_height = 8  # a cause and its fix are shown whole, never cut
        self.refresh_rows()
        self.query_one("#search", Input).focus()

    def on_data_changed(self, _: DataChanged) -> None:
        self.refresh_rows()

    def refresh_rows(self) -> None:
        """Repaint the table from the current filters (message-handler side only)."""
        app = self.app
        status = self.query_one("#model-status", Static)
        table = self.query_one("#recipes", DataTable)
        if app.catalog is None:
            status.update(app.errors.get("catalog", "Loading catalog…"))
            return
        hw = app.selection.get("hardware")
        profile = app.catalog.taxonomy.hardware_profiles.get(hw) if hw else None
        task = self.query_one("#task", Select).value
        arch = self.query_one("#arch", Select).value
        memory = detected_memory_gb(app.inventory) if hw and hw == app.detected_profile else None
        listing = None
        if hw and profile is not None:  # a profile is only looked up for a picked hardware id
            from vllm_deploy_wizard.catalog.listing import listing_for

            listing = listing_for(app.catalog, hw, app.detected_profile)

        rows = recipe_rows(
            app.catalog.recipes,
            profile,
            hw,
            self.query_one("#search", Input).value,
            task if isinstance(task, str) else "",
            arch if isinstance(arch, str) else "",
            have_gb=memory[0] if memory else None,
            listing=listing,
        )
        fit_col = table.columns.get(ColumnKey("fit"))
        if fit_col is not None:  # the header says what Fit is measured against (the line below says how much)
            fit_col.label = Text("Fit (detected)" if memory else "Fit (profile)" if profile is not None else "Fit")
            fit_col.content_width = max(fit_col.content_width, fit_col.label.cell_len)
        table.clear()
        for r in rows:
            table.add_row(
                r.title, fit_mark(r), status_mark(r), r.architecture,
                ",".join(r.tasks), r.provider, r.hf_id, key=r.hf_id,
            )
        self.rows = rows
        chosen = app.selection.get("model")
        if chosen and table.row_count:  # back from a later step: the cursor stays on the chosen model
            try:
                table.move_cursor(row=table.get_row_index(chosen))
            except Exception:  # noqa: BLE001 — filtered out of the table
                pass
        status.update(model_status(rows, len(app.catalog.recipes), profile, memory))

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "search":
            self.refresh_rows()

    def on_select_changed(self, _: Select.Changed) -> None:
        self.refresh_rows()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "search":
            table = self.query_one("#recipes", DataTable)
            if table.row_count == 1:  # exactly one match: enter picks it
                self.pick(str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value))
            elif table.row_count:
                table.focus()
            else:
                self.notify("No recipe matches the search — change it, or type a custom model (HF id or "
                            "local path) in the box below.", severity="warning")
        elif event.input.id == "custom" and event.value.strip():
            self.query_one("#model-status", Static).update(f"Reading config.json of {event.value.strip()}…")
            self._custom(event.value.strip())

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.pick(str(event.row_key.value))

    def pick(self, hf_id: str) -> None:
        """Choose recipe ``hf_id`` and go to the configure step."""
        self.app.update_selection(model=hf_id)
        from vllm_deploy_wizard.tui.screen_configure import ConfigureScreen

        self.app.push_screen(ConfigureScreen())

    @work(thread=True, exclusive=True, group="custom", exit_on_error=False)
    def _custom(self, ident: str) -> None:
        services = self.app.services
        try:
            if services.custom_recipe is None:
                raise RuntimeError("this catalog cannot derive custom models")
            catalog, hf_id = services.custom_recipe(self.app.catalog, ident)
        except Exception as exc:  # noqa: BLE001 — shown to the person
            self.app.call_from_thread(self.query_one("#model-status", Static).update, f"Custom model: {exc}")
            return
        self.app.call_from_thread(self._custom_ready, catalog, hf_id)

    def _custom_ready(self, catalog, hf_id: str) -> None:
        self.app.catalog = catalog
        self.pick(hf_id)

    def download_target(self) -> str | None:
        """What ctrl+d downloads: the custom box's HF id, else the model the highlighted recipe
        serves (:meth:`~vllm_deploy_wizard.catalog.loader.Catalog.served_model_id`: the id vLLM
        loads, in its case — the recipe id ``Google/gemma-…`` would fill another cache folder)."""
        typed = self.query_one("#custom", Input).value.strip()
        if typed:
            return typed
        table = self.query_one("#recipes", DataTable)
        if table.row_count:
            key = str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
            served = getattr(self.app.catalog, "served_model_id", None)
            try:
                return served(key) if served is not None else key
            except Exception:  # noqa: BLE001 — a row of another catalog: its id as shown
                return key
        return None

    def action_download(self) -> None:
        """Download :meth:`download_target` into the HF cache in a worker; a custom model is then used."""
        from vllm_deploy_wizard.workflows.model_download import hf_id_of

        target = self.download_target()
        if target is None or hf_id_of(target) is None:
            self.notify(f"{target or 'Nothing'}: ctrl+d downloads a Hugging Face 'org/name' id (type it in the "
                        "custom box, or highlight a recipe)", severity="warning")
            return
        self.query_one("#model-status", Static).update(f"Downloading {target} into the Hugging Face cache …")
        self._download(target, bool(self.query_one("#custom", Input).value.strip()))

    @work(thread=True, exclusive=True, group="download", exit_on_error=False)
    def _download(self, model: str, custom: bool) -> None:
        download: Callable[[str], Any] | None = getattr(self.app.services, "download_model", None)
        if download is None:
            from vllm_deploy_wizard.workflows.model_download import download_model

            download = download_model
        try:
            path = download(model)
        except Exception as exc:  # noqa: BLE001 — DownloadError names the cause and the fix
            self.app.call_from_thread(self.query_one("#model-status", Static).update, f"✗ {exc}")
            return
        self.app.call_from_thread(self._downloaded, model, path, custom)

    def _downloaded(self, model: str, path, custom: bool) -> None:
        self.downloaded = (model, path)
        self.query_one("#model-status", Static).update(f"✓ Downloaded {model} to {path}")
        if custom:
            self._custom(model)

    def action_focus_search(self) -> None:
        self.query_one("#search", Input).focus()

    def action_next(self) -> None:
        """Pick the highlighted recipe; with no rows, say why nothing happens."""
        table = self.query_one("#recipes", DataTable)
        if table.row_count:
            self.pick(str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value))
        elif self.app.catalog is None:
            self.notify("The catalog is still loading.", severity="warning")
        else:
            self.notify("Nothing to pick: no recipe matches the search and filters — clear them, or type a "
                        "custom model (HF id or local path) below and press enter.", severity="warning")
