"""Step 1 — hardware: what was detected, the preselected profile, every profile by brand to override.

Once a model is chosen (coming back from a later step, or ``--model``), the list follows the
constraints answer's hardware row (docs/constraints.md §3.1 H1–H5): hidden profiles are left out (the
detected one always stays), disabled ones show their one-line reason, and a pick that would also
switch the variant (H4) says so.

Paints what the app knows when it mounts — at start-up, usually the forked start-up child's facts,
with the detected profile preselected (tui/start_up.py), else "Detecting…"/"Loading catalog…"
placeholders — and fills in on :class:`~vllm_deploy_wizard.tui.app.DataChanged`. Picking a profile
(enter) sets ``hardware`` and moves on to the model step; the device count per node (``gpus``,
defaulting to the detected count when it differs from the profile), the devices to run on
(``devices``: indexes as detected, e.g. ``0,2`` on a node with mixed GPUs; the plan pins them,
docs/fit.md §10) and node count are editable here.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Header, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from vllm_deploy_wizard.common.contract import MAX_NODES
from vllm_deploy_wizard.tui.messages import DataChanged, SelectionChanged
from vllm_deploy_wizard.tui.wizard_screen import WizardScreen

#: Nodes range of the Nodes input (docs/synthesis.md §2.3 ``MAX_NODES`` = 16; Selection ``nodes`` 1..16).


def profile_options(spec: list[tuple]) -> list[Option]:
    """The profile list's options for ``spec``: per brand a disabled ``── brand ──`` heading, then one
    option per ``(row, chosen, disabled, reason, warning)`` — the ● pick mark, the label, ``★ detected
    (quality)``, and the gate's reason (disabled) or warning."""
    options: list[Option] = []
    for brand, shown in spec:
        options.append(Option(f"── {brand} ──", disabled=True))
        for row, chosen, disabled, reason, warning in shown:
            text = Text(f"{'● ' if chosen else '  '}{row.label}")
            if row.detected:
                text.append(f"  ★ detected ({row.quality})", style="bold")
            if reason:
                text.append(" — " + reason, style="italic")
            elif warning:
                text.append("  ⚠ " + warning, style="italic yellow")
            options.append(Option(text, id=row.id, disabled=disabled))
    return options


class HardwareScreen(WizardScreen):
    """Detected facts (left), profiles grouped by brand (right), devices/nodes inputs (bottom)."""

    HELP_TITLE = "Hardware"
    HELP_INTRO = ("enter on a profile picks it and goes on to the model step. ★ marks the detected profile. "
                  "Devices per node defaults to the profile's count, or on the detected profile to the detected "
                  "accelerator count when it differs (as `vllm-wizard plan --detect`); Devices picks which of "
                  "this node's devices run it (indexes as listed, e.g. 0,2; as `plan --devices`); Nodes is 1..16. "
                  "escape asks whether to quit; ctrl+q quits at once.")

    DEFAULT_CSS = """
    HardwareScreen #saved { height: auto; max-height: 8; border-top: solid $primary; }
    """

    BINDINGS = [Binding("ctrl+n", "next", "Next"), Binding("escape", "app.confirm_quit", "Quit (asks y/n)", show=False)]

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="hw-body"):
            yield Static("Detecting accelerators and host facts…", id="detected", classes="panel")
            with Vertical(id="hw-right", classes="panel"):
                yield OptionList(Option("Loading catalog…", disabled=True), id="profiles")
        with Horizontal(id="hw-counts"):
            yield Label("Devices per node")
            yield Input(placeholder="profile", id="gpus", type="integer")
            yield Label("Devices")
            yield Input(placeholder="all (e.g. 0,2)", id="devices")
            yield Label("Nodes")
            yield Input(value="1", id="nodes", type="integer")
            yield Static("", id="hw-count-status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#detected").border_title = "Detected"
        self.query_one("#hw-right").border_title = "Hardware profile"
        self.entries: list = []
        self._saved_read = False
        self.app.take_start_frames()  # what the start-up child sent already: then the first frame is usable
        self.refresh_data()

    def refresh_saved(self) -> None:
        """The saved selections (``plan --save NAME``) and the recent ones the wizard reviewed; enter on
        one lands on its review (docs/benchmark.md §2). The list (``#saved``) is mounted with the
        first entry and hidden when there are none. At start-up it is read only once the first usable
        screen is painted (reading it imports and runs the YAML parser: ~10 ms of CPU)."""
        from vllm_deploy_wizard.workflows.saved_selections import recent, saved

        self._saved_read = True
        self.entries = [*saved(), *recent()]
        found = self.query("#saved")
        if not found and not self.entries:
            return
        box = found.first(OptionList) if found else OptionList(id="saved")
        box.clear_options()
        box.add_options([Option(("★ " if e.name else "↺ ") + e.label, id=f"saved-{i}")
                         for i, e in enumerate(self.entries)])
        box.border_title = "Saved ★ and recent ↺ selections (enter opens the review)"
        if not found:
            self.call_next(self._mount_saved, box)
        elif box.has_class("hidden") == bool(self.entries):
            box.set_class(not self.entries, "hidden")
            self.call_after_refresh(self._keep_pick_in_view)

    async def _mount_saved(self, box: OptionList) -> None:
        await self.query_one("#hw-right").mount(box)
        self.call_after_refresh(self._keep_pick_in_view)

    def _keep_pick_in_view(self) -> None:
        """The profile list's height changed (the saved list came or went): scroll its pick into view."""
        self.query_one("#profiles", OptionList).scroll_to_highlight()

    def on_screen_resume(self) -> None:
        if getattr(self, "_saved_read", False):  # back from a later step (one may have been recorded)
            self.refresh_saved()

    def on_data_changed(self, _: DataChanged) -> None:
        self.refresh_data()
        if not self._saved_read and not self.app.loading:
            self._saved_read = True
            self.call_after_refresh(self.refresh_saved)

    def on_selection_changed(self, _: SelectionChanged) -> None:
        self.refresh_data()

    def refresh_data(self) -> None:
        """Re-read app state into the widgets (message-handler side only): the app's
        :meth:`~vllm_deploy_wizard.tui.app.WizardApp.hardware_facts` with the selection and, once a model
        is chosen, the constraints answer's hardware gates applied. A widget whose content is unchanged
        is not touched (re-filling the profile list costs ~20 ms of CPU; at start-up the app's own loads
        arrive after the start-up child's facts were painted, with the same content)."""
        app = self.app
        facts = app.hardware_facts()
        lines = list(facts.detected)
        for key in ("detect", "catalog", "match", "model"):
            if key in app.errors:
                lines.append(f"[{key} failed] {app.errors[key]}")
        detected = "\n".join(lines)
        if detected != getattr(self, "_painted_detected", None):
            self._painted_detected = detected
            self.query_one("#detected", Static).update(Text(detected))
        if facts.groups is None:
            if "catalog" in app.errors:  # the list says why it stays empty (a broken --recipes file)
                self._set_profile_options(("failure", app.errors["catalog"]),
                                          lambda: [Option(self.catalog_failure(), disabled=True)])
            return
        chosen = app.selection.get("hardware")
        gates = {c.id: c for c in getattr(app.options, "hardware", None) or []}  # model known: H1–H5
        spec: list[tuple] = []
        for brand, rows in facts.groups:
            shown = []
            for row in rows:
                gate = gates.get(row.id)
                if gate is not None and gate.state == "hidden" and not row.detected:
                    continue
                disabled = gate is not None and gate.state == "disabled"
                reason = " ".join((gate.reason or "unavailable").split()) if disabled and gate is not None else ""
                warning = " ".join(gate.warning.split()) if gate is not None and not disabled and gate.warning else ""
                shown.append((row, row.id == chosen, disabled, reason, warning))
            if shown:
                spec.append((brand, tuple(shown)))
        refilled = self._set_profile_options(("rows", tuple(spec)), lambda: profile_options(spec))
        plist = self.query_one("#profiles", OptionList)
        if chosen and (refilled or chosen != getattr(self, "_painted_chosen", None)):
            # the highlight goes to the pick only when the list or the pick changed: a repaint with the
            # same rows (the app's own loads arriving after the start-up child's facts) leaves the
            # cursor where the person moved it
            try:
                index = plist.get_option_index(chosen)
            except Exception:  # noqa: BLE001 — unknown id (custom replay)
                index = None
            if index is not None and plist.highlighted != index:
                plist.highlighted = index
        self._painted_chosen = chosen
        gpus = app.selection.get("gpus")
        gpus_input = self.query_one("#gpus", Input)
        if gpus is not None and gpus_input.value != str(gpus):
            gpus_input.value = str(gpus)
            gpus_input.cursor_position = len(gpus_input.value)  # typing appends, as after a click
        count = facts.gpu_count(chosen) if chosen else None
        if count is not None and gpus_input.placeholder != f"{count} (profile)":
            gpus_input.placeholder = f"{count} (profile)"
        devices = app.selection.get("devices")  # a pick made elsewhere (--selection file) is shown
        picked = ",".join(str(i) for i in devices) if devices else ""
        box = self.query_one("#devices", Input)
        if devices and box.value.replace(" ", "") != picked:
            box.value = picked
            box.cursor_position = len(picked)

    def _set_profile_options(self, key: tuple, options: Callable[[], list[Option]]) -> bool:
        """Fill the profile list with ``options()`` unless it already shows ``key`` (what was painted);
        the highlight is kept where it was when nothing is chosen. Returns True when it was filled."""
        if key == getattr(self, "_painted_profiles", None):
            return False
        self._painted_profiles = key
        plist = self.query_one("#profiles", OptionList)
        highlighted = plist.highlighted
        plist.set_options(options())
        if highlighted is not None and not self.app.selection.get("hardware"):
            plist.highlighted = highlighted
        return True

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option_list.id == "saved":
            if self.app.catalog is None and "catalog" in self.app.errors:
                self.notify(self.catalog_failure().plain, severity="error", timeout=15, markup=False)
                return
            self.app.open_saved(self.entries[int(str(event.option.id).removeprefix("saved-"))])
            return
        if event.option.id:
            self.app.update_selection(hardware=event.option.id)
            self.action_next()

    def on_input_changed(self, event: Input.Changed) -> None:
        value = event.value.strip()
        if event.input.id == "gpus":
            gpus = int(value) if value.isdigit() and int(value) > 0 else None
            if gpus != self.app.selection.get("gpus"):  # not the echo of the default shown here
                self.app.update_selection(gpus=gpus)
        elif event.input.id == "devices":
            self._set_devices(value)
        elif event.input.id == "nodes":
            status = self.query_one("#hw-count-status", Static)
            if not value:
                status.update("")
                return
            if not value.isdigit() or not 1 <= int(value) <= MAX_NODES:
                status.update(f"✗ Nodes must be 1..{MAX_NODES} (got {value!r}); still using "
                              f"{self.app.selection.get('nodes', 1)}.")
                return
            status.update("")
            if self.app.selection.get("nodes", 1) != int(value):
                self.app.update_selection(nodes=int(value))

    def _set_devices(self, value: str) -> None:
        """``devices`` from the Devices field (catalog.device_pick.parse_devices); a bad value is
        named in the status line and the previous pick kept."""
        from vllm_deploy_wizard.catalog.device_pick import parse_devices
        from vllm_deploy_wizard.common.errors import SelectionError

        status = self.query_one("#hw-count-status", Static)
        try:
            devices = parse_devices(value, "Devices")
        except SelectionError as exc:
            status.update(f"✗ {exc}; still using {self.app.selection.get('devices') or 'all'}.")
            return
        status.update("")
        if devices != self.app.selection.get("devices"):
            self.app.update_selection(devices=devices)

    def catalog_failure(self) -> Text:
        """What the profile list shows when the catalog could not load: the loader's error (it names the
        file and field) and what to do — fix the file and start again, or quit (ctrl+q)."""
        return Text(f"✗ The catalog did not load, so no profile can be picked: {self.app.errors['catalog']}\n"
                    "Fix that file (`vllm-wizard catalog check DIR` lists every problem) and start the wizard "
                    "again; ctrl+q quits.", style="bold red")

    def action_next(self) -> None:
        """Go to the model step (needs a hardware pick)."""
        if self.app.catalog is None and "catalog" in self.app.errors:
            self.notify(self.catalog_failure().plain, severity="error", timeout=15, markup=False)
            return
        if not self.app.selection.get("hardware"):
            self.notify("Pick a hardware profile first (enter on a row).", severity="warning")
            return
        from vllm_deploy_wizard.tui.screen_model import ModelScreen

        self.app.push_screen(ModelScreen())
        if self.app.selection.get("model") and self.app.options is not None:  # --model: straight on
            from vllm_deploy_wizard.tui.screen_configure import ConfigureScreen

            self.app.push_screen(ConfigureScreen())
