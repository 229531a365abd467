"""Step 3 — configure: variant, strategy, nodes, PD pools (connector, router), KV offload, frontend,
features and modes, install mode, advanced args — every option listed, unavailable ones disabled with
their one-line reason, the constraint panel always showing the current warnings.

The rows come from :func:`~vllm_deploy_wizard.tui.axes.axis_views` over the app's constraints answer, so any
axis the catalog's ``options()`` returns is shown without a change here. A pick (enter/click) calls
:meth:`WizardApp.set_selection`; the ``SelectionChanged`` handler then updates the panel first (the
benchmarked path) and rewrites only the rows whose choices changed.
"""

from __future__ import annotations

import shlex

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widget import Widget
from textual.widgets import Footer, Header, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from vllm_deploy_wizard.tui.axes import AxisView, apply_choice, axis_views, warnings_of
from vllm_deploy_wizard.tui.constraint_panel import ConstraintPanel
from vllm_deploy_wizard.tui.dom_ids import dom_id
from vllm_deploy_wizard.tui.messages import DataChanged, SelectionChanged
from vllm_deploy_wizard.tui.wizard_screen import WizardScreen


def devices_text(selection: dict, catalog) -> str:
    """`` · N device(s)/node`` for the summary line: the typed/detected ``gpus``, else the hardware
    profile's ``gpu_count``; empty when neither is known."""
    count = selection.get("gpus")
    if not count and catalog is not None:
        prof = catalog.taxonomy.hardware_profiles.get(selection.get("hardware") or "")
        count = getattr(prof, "gpu_count", None)
    if not count:
        return ""
    return f" · {count} device{'' if int(count) == 1 else 's'}/node"


def choice_prompt(view: AxisView, index: int) -> Text:
    """The row text of choice ``index``: a radio/check mark, the label, and for a disabled choice its
    reason (first line, newlines folded) after an em dash."""
    c = view.choices[index]
    if view.multi:
        mark = "[x] " if c.selected else "[ ] "
    else:
        mark = "● " if c.selected else "○ "
    text = Text(mark + c.label, style="bold" if c.selected else "")
    if c.unverified and c.state != "disabled":
        text.append(" [unverified]", style="bold yellow")
    if c.state == "disabled":
        reason = " ".join(c.reason.split()) or "unavailable"
        text.append(f" — {reason}", style="italic")
        if c.unverified:
            text.append(" (ctrl+u allows unverified choices)", style="italic yellow")
    elif c.warning:
        text.append(f"  ⚠ {' '.join(c.warning.split())}", style="italic yellow")
    return text


def _companion_keys() -> tuple[str, ...]:
    """The ``companion_args`` keys (catalog.synthesis.COMPANION_ARGS), imported when first needed."""
    from vllm_deploy_wizard.catalog.synthesis import COMPANION_ARGS

    return tuple(COMPANION_ARGS)


class AxisList(OptionList):
    """One axis' choices. ``axis`` is the :class:`AxisView` it shows; disabled choices cannot be
    highlighted or picked (OptionList semantics)."""

    DEFAULT_CSS = """
    AxisList { height: auto; max-height: 12; border: none; border-left: blank; padding: 0 0 0 1; }
    AxisList:focus { border: none; border-left: thick $accent; background: $boost; }
    """

    def __init__(self, axis: AxisView, **kwargs) -> None:
        super().__init__(*self._make_options(axis), **kwargs)
        self.axis = axis

    @staticmethod
    def _make_options(axis: AxisView) -> list[Option]:
        return [
            Option(choice_prompt(axis, i), id=c.id, disabled=c.state == "disabled")
            for i, c in enumerate(axis.choices)
        ]

    def show(self, axis: AxisView) -> None:
        """Repaint when the axis' choices changed; keep the cursor on the same choice id."""
        if axis == self.axis:
            return
        current = self.highlighted_option.id if self.highlighted_option is not None else None
        self.axis = axis
        self.set_options(self._make_options(axis))
        if current is not None:
            try:
                self.highlighted = self.get_option_index(current)
            except Exception:  # noqa: BLE001 — the choice went away
                pass


class ConfigureScreen(WizardScreen):
    """Axis rows (scrolling, left) and the constraint panel (right; bottom on narrow terminals)."""

    HELP_TITLE = "Configure"
    HELP_INTRO = ("tab / shift+tab moves between rows, up/down between choices, enter picks (● / [x] mark what the "
                  "plan uses, also defaults). Disabled choices say why; ctrl+u allows the ones that only lack a "
                  "verified run (marked unverified in the rows and in the plan); ctrl+g takes the value a host-fit "
                  "warning suggests (LMCache L1 size, CPU workers). Advanced args: raw vLLM flags, enter "
                  "applies; the Constraints panel warns when a preset and a typed flag collide.")

    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("ctrl+n", "next", "Review"),
        Binding("ctrl+u", "toggle_unverified", "Unverified"),
        Binding("ctrl+g", "fit_fix", "Fit fix"),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="cfg-body"):
            yield VerticalScroll(id="axes")
            yield ConstraintPanel(id="constraints")
        yield Static("", id="cfg-summary")
        yield Footer()

    async def on_mount(self) -> None:
        await self.rebuild()

    async def on_data_changed(self, _: DataChanged) -> None:
        await self.rebuild()

    async def on_selection_changed(self, _: SelectionChanged) -> None:
        await self.refresh_axes()

    def _views(self) -> list[AxisView]:
        app = self.app
        return axis_views(app.options, app.selection, app.resolved_features, app.frontend_default) \
            if app.options is not None else []

    async def rebuild(self) -> None:
        """Remove and re-mount every axis row (first paint, or the set of axes changed)."""
        container = self.query_one("#axes", VerticalScroll)
        focused = self.focused.id if self.focused is not None else None
        await container.remove_children()
        views = self._views()
        widgets: list[Widget] = []
        for view in views:
            widgets.append(Label(view.title, classes="axis-title"))
            widgets.append(AxisList(view, id=dom_id("axis", view.key)))
        widgets.append(Label("Advanced args (raw vLLM flags, enter to apply)", classes="axis-title"))
        self._advanced_shown = " ".join(shlex.quote(a) for a in self.app.selection.get("advanced_args", []))
        widgets.append(Input(self._advanced_shown, placeholder="--max-model-len 8192", id="advanced-args"))
        companion = self.app.selection.get("companion_args") or {}
        self._companion_shown = " ".join(f"{k}={v}" for k, v in companion.items())
        widgets.append(Label("Companion args (key=value: " + ", ".join(_companion_keys()) + ")",
                             classes="axis-title"))
        widgets.append(Input(self._companion_shown, placeholder="l1_size_gb=16 router_port=30000", id="companion-args"))
        await container.mount_all(widgets)
        self._keys = [v.key for v in views]
        self.update_panel()
        target = None
        if focused:
            try:
                target = self.query_one(f"#{focused}")
            except Exception:  # noqa: BLE001 — that row went away
                target = None
        if target is None:
            target = next(iter(self.query(AxisList)), None)
        if target is not None:
            target.focus()

    async def refresh_axes(self) -> None:
        """Panel first, then only the rows whose choices changed."""
        self.update_panel()
        views = self._views()
        if [v.key for v in views] != getattr(self, "_keys", None):
            await self.rebuild()
            return
        for view in views:
            self.query_one(f"#{dom_id('axis', view.key)}", AxisList).show(view)

    def update_panel(self) -> None:
        """Warnings of the constraints answer plus the selection error, if any."""
        app = self.app
        error = app.errors.get("options")
        if app.catalog is None:
            error = app.errors.get("catalog") or "Loading catalog…"
        warnings = warnings_of(app.options) if app.options is not None else []
        # the plan's gate warnings (H1, N5, S3…) too, so this pane says what review and `plan` say
        warnings += [w for w in getattr(app, "plan_warnings", []) if w not in warnings]
        fixes = getattr(app, "fit_fixes", None) or {}
        if fixes:
            warnings.append("press ctrl+g to use the values that fit this node: "
                            + ", ".join(f"{k.replace('_', '-')} {v}" for k, v in fixes.items()))
        self.query_one(ConstraintPanel).show(warnings, error)
        sel = app.selection
        self.query_one("#cfg-summary", Static).update(f"{sel.get('model', '—')} on {sel.get('hardware', '—')}"
                                                      + devices_text(sel, app.catalog))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if not isinstance(event.option_list, AxisList):
            return
        event.stop()
        axis = event.option_list.axis
        self.app.set_selection(apply_choice(self.app.selection, axis, str(event.option.id), self.app.options))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "advanced-args":
            self._apply_advanced(event.value)
        elif event.input.id == "companion-args":
            self._apply_companion(event.value)

    def on_input_blurred(self, event: Input.Blurred) -> None:
        """Typed advanced / companion args apply when the person moves on (tab, click elsewhere),
        not only on enter."""
        if event.input.id == "advanced-args" and self._edited(event.value):
            self._apply_advanced(event.value)
        elif event.input.id == "companion-args" and event.value != getattr(self, "_companion_shown", ""):
            self._apply_companion(event.value)

    def _apply_companion(self, text: str) -> bool:
        """Set ``companion_args`` from ``key=value`` words (docs/catalog.md §6); False (and a notice
        naming the valid keys) for a word that is not one."""
        values: dict[str, str] = {}
        for word in text.split():
            key, eq, value = word.partition("=")
            if not eq or key not in _companion_keys() or not value:
                self.notify(f"Companion args: {word!r} is not key=value with key one of "
                            f"{', '.join(_companion_keys())}", severity="error")
                return False
            values[key] = value
        self._companion_shown = text
        if values != dict(self.app.selection.get("companion_args") or {}):
            self.app.update_selection(companion_args=values or None)
        return True

    def _edited(self, text: str) -> bool:
        """True when the box holds text the person typed (not what it was filled with)."""
        return text != getattr(self, "_advanced_shown", "")

    def _apply_advanced(self, text: str) -> bool:
        """Set ``advanced_args`` from the typed text (shell words); False (and a notice) when the text
        can't be split (an open quote). Unchanged text changes nothing."""
        try:
            args = shlex.split(text)
        except ValueError as exc:
            self.notify(f"Advanced args: {exc}", severity="error")
            return False
        self._advanced_shown = text
        if args != list(self.app.selection.get("advanced_args") or []):
            selection = dict(self.app.selection)
            selection["advanced_args"] = args
            self.app.set_selection(selection)
        return True

    def action_fit_fix(self) -> None:
        """Use the companion values the host-fit warnings suggest (LMCache L1 size, CPU workers) and
        the flags the last preflight refusal named (``--gpu-memory-utilization`` that fits)."""
        from vllm_deploy_wizard.tui.fixes import refusal_fix

        _, manual = refusal_fix(getattr(self.app, "preflight_refusals", None))
        fixes = self.app.apply_fit_fixes()
        if fixes:
            self.notify("Applied: " + ", ".join(f"{k}={v}" for k, v in fixes.items()))
        elif manual:
            self.notify("The preflight's refusal has no flag to set here: " + "; ".join(manual), severity="warning")
        else:
            self.notify("Nothing to fix: the plan fits this node", severity="information")

    def action_toggle_unverified(self) -> None:
        """Allow (or stop allowing) choices that lack only a recorded verified run — an opt-in KV
        option the recipe has not verified, a restricted profile it does not list (docs/catalog.md
        §4). The plan marks each such choice unverified; hard incompatibilities stay disabled."""
        allow = not self.app.selection.get("allow_unverified")
        self.app.update_selection(allow_unverified=True if allow else None)
        self.notify("Unverified choices allowed: the plan marks them unverified" if allow
                    else "Unverified choices off", severity="warning" if allow else "information")

    def _apply_typed(self) -> bool:
        """Apply text typed into the advanced / companion boxes and not yet applied; False when it is not valid."""
        box = self.query("#advanced-args")
        if box and self._edited(box.first(Input).value) and not self._apply_advanced(box.first(Input).value):
            return False
        comp = self.query("#companion-args")
        if comp and comp.first(Input).value != getattr(self, "_companion_shown", "") \
                and not self._apply_companion(comp.first(Input).value):
            return False
        return True

    def action_back(self) -> None:
        """Back to the model step, keeping what was typed into the advanced / companion boxes."""
        self._apply_typed()
        self.app.pop_screen()

    def action_next(self) -> None:
        """Go to review (refused with the reason while planning is impossible); text typed into the
        advanced-args box is applied first."""
        if not self._apply_typed():
            return
        if self.app.errors.get("options") or self.app.catalog is None:
            self.notify(self.app.errors.get("options", "Catalog not loaded yet"), severity="error")
            return
        from vllm_deploy_wizard.tui.screen_review import ReviewScreen

        self.app.push_screen(ReviewScreen())
