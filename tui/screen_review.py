"""Step 4 — review: the commands per node in launch order, env, install steps, placeholders with
detected defaults, preflight; export (plan file, scripts), copy (OSC 52), one key launches.

The plan is synthesized on mount from the app's selection (pure, < 2 ms) and laid out by
:func:`~vllm_deploy_wizard.tui.plan_view.process_blocks`; each command is a focusable
:class:`CommandBlockView` so ``c`` / ctrl+y copies the focused one. Keys are in :data:`REVIEW_ACTIONS`
(ctrl keys work even from a placeholder Input, and each action is in the command palette). Launch
writes the plan file into the state dir and hands it to the launcher seam in a worker (the preflight
may take seconds: port checks, ``vllm serve --help``), then opens the monitor; preflight problems come
back as the launcher's error text, all at once.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widget import Widget
from textual.widgets import Footer, Header, Input, Label, Select, Static

from vllm_deploy_wizard.launcher.config_files import config_file_defaults
from vllm_deploy_wizard.tui.axes import variant_name
from vllm_deploy_wizard.tui.dom_ids import dom_id
from vllm_deploy_wizard.tui.placeholders import offered_defaults
from vllm_deploy_wizard.tui.plan_export import default_export_dir, write_plan_file, write_scripts
from vllm_deploy_wizard.tui.plan_view import ProcessBlock, machine_choices, process_blocks
from vllm_deploy_wizard.tui.wizard_screen import WizardScreen


def plan_header(plan, catalog: Any = None) -> str:
    """The plan's one-line summary as ``vllm-wizard plan`` prints it (its first line without
    ``# ``): model · variant · hardware (devices/node) · strategy or ``omni`` · layout · install mode.
    With ``catalog``, the variant is named as the configure step names it (display name and key,
    "variant BF16 (default)", :func:`~vllm_deploy_wizard.tui.axes.variant_name`)."""
    from vllm_deploy_wizard.catalog.render import plan_text

    head = plan_text(plan).split("\n", 1)[0].removeprefix("# ")
    resolved = getattr(plan, "resolved", None) or {}
    key = resolved.get("variant")
    if catalog is None or not key:
        return head
    try:
        from vllm_deploy_wizard.catalog.custom import resolve_model

        label = resolve_model(catalog, str(resolved.get("model"))).variant(str(key)).pill_label
    except Exception:  # noqa: BLE001 — a model the catalog can't resolve: the key alone
        return head
    return head.replace(f" · variant {key} · ", f" · variant {variant_name(label, str(key))} · ", 1)


#: vLLM builds (the installed wheel's local version label, detect/software.py ``build_of``) that serve
#: only the plan backend of the same name: a ``+cpu`` wheel has no CUDA/ROCm/XPU platform, and back.
_BUILDS = ("cpu", "cuda", "rocm", "xpu")


def vllm_installed_text(version: str | None, build: str | None, accelerator: str | None, need: str | None) -> str:
    """The review's vLLM part of "Installed:": ``vLLM 0.32.0 (recipe needs ≥ 0.8.5)``, or, when the
    installed build (``cpu``/``cuda``/``rocm``/``xpu``) is not the plan's backend (``accelerator``),
    ``vLLM 0.32.0+cpu: a CPU build, which cannot serve this cuda plan (recipe needs ≥ 0.8.5)`` — the
    version alone would read as satisfying the recipe. ``version`` None = not installed."""
    text = f"vLLM {version or 'not installed'}"
    if version and build in _BUILDS and accelerator in _BUILDS and build != accelerator:
        text += f": a {build.upper()} build, which cannot serve this {accelerator} plan"
    return text + (f" (recipe needs ≥ {need})" if need else "")


class CommandBlockView(Static, can_focus=True):
    """One process: heading, ``export`` lines, and the command. Focus it and press ``c`` to copy."""

    DEFAULT_CSS = """
    CommandBlockView { padding: 0 1; margin: 0 0 1 0; border-left: thick $primary-darken-2; height: auto; }
    CommandBlockView:focus { border-left: thick $accent; background: $boost; }
    """

    def __init__(self, block: ProcessBlock, **kwargs) -> None:
        self.block = block
        text = Text()
        text.append(f"{block.where} · {block.title}\n", style="bold")
        if block.setup:
            text.append(block.setup + "\n", style="dim italic")
        for line in block.exports:
            text.append(line + "\n", style="dim")
        text.append(block.command)
        super().__init__(text, **kwargs)


#: The review's main actions: (action, title, palette help, ctrl key, letter key). The ctrl keys are
#: priority bindings shown in the footer, so they act even while a placeholder Input has focus (an
#: Input takes every printable key); the letters are shortcuts while a command block has focus. The
#: ctrl keys avoid Input's own (ctrl+a/e/d/k/u/w/x/c/v) and the palette's ctrl+p.
REVIEW_ACTIONS: tuple[tuple[str, str, str, str, str], ...] = (
    ("launch", "Launch", "Preflight, then start node 0 detached and open the monitor", "ctrl+l", "l"),
    ("preflight", "Preflight", "Check ports, executables, vLLM version and serve flags now", "ctrl+r", "p"),
    ("export", "Export", "Write ./vllm-wizard-<time>/plan.yaml", "ctrl+o", "e"),
    ("scripts", "Scripts", "Write one bash script per node next to the plan file", "ctrl+t", "s"),
    ("copy", "Copy", "Copy the focused command, placeholders filled (OSC 52)", "ctrl+y", "c"),
)

#: The actions whose keys the footer shows: with ``^q Quit`` and ``f1 Help`` they fit 80 columns
#: (80×24 is the smallest terminal the wizard supports); the others are in F1 and the command palette.
FOOTER_ACTIONS = frozenset({"launch", "preflight", "export"})


@functools.lru_cache(maxsize=8)
def _lmcache_where_vllm_runs(vllm: str) -> tuple[bool | None, str | None]:
    """Whether the Python of the ``vllm`` executable imports ``lmcache`` (the preflight's probe,
    ``launcher/connector_check.py``; asked once per executable in a session)."""
    from vllm_deploy_wizard.launcher import connector_check, preflight

    return connector_check.importable_where_vllm_runs(vllm, "lmcache", preflight.run_command, preflight.cache_dir())


def _lmcache_text(software: Any, found: str | None) -> str:
    """The review's LMCache part: installed means importable where vLLM runs (vLLM's LMCache connectors
    import ``lmcache`` in the ``vllm`` process), not an ``lmcache`` CLI of another environment on PATH."""
    vllm = getattr(getattr(software, "vllm", None), "executable", None)
    ok, python = _lmcache_where_vllm_runs(vllm) if vllm else (None, None)
    if ok is False:
        return f"not installed where vLLM runs ({python})" + (f"; {found} in another environment" if found else "")
    if ok:
        return found or "installed"
    return found or "not installed"


class ReviewScreen(WizardScreen):
    """Summary, install steps, placeholders, commands. Keys (:data:`REVIEW_ACTIONS`): ctrl+l launch,
    ctrl+r preflight, ctrl+o export, ctrl+t scripts, ctrl+y copy — anywhere, also from a placeholder
    Input; l/p/e/s/c while a command block has focus; every action is in the command palette too."""

    DEFAULT_CSS = """
    ReviewScreen .ph-row .port-name { width: 38; padding: 1 1 0 0; }
    ReviewScreen .ph-row Input.port-input { width: 12; }
    ReviewScreen .ph-row .port-why { width: 1fr; padding: 1 0 0 1; }
    """

    #: The action ("Launch", "Export", …) pressed while the typed-args check ran: done when it is in.
    _after_typed_check: str | None = None

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        *(Binding(ctrl, action, title, priority=True, show=action in FOOTER_ACTIONS)
          for action, title, _, ctrl, _ in REVIEW_ACTIONS),
        *(Binding(letter, action, title, show=False) for action, title, _, _, letter in REVIEW_ACTIONS),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        yield VerticalScroll(id="review")
        yield Static("", id="review-status")
        yield Footer()

    def on_mount(self) -> None:
        self.values: dict[str, str] = {}
        self.node: str | None = None
        self.machines: list[tuple[str, str | None]] = []
        self.port_problems: dict[str, str] = {}
        self._paint_review()

    def _paint_review(self, focus: str | None = None) -> None:
        """(Re)build the screen from a fresh plan; typed placeholder values are kept; ``focus``: the
        id of the widget to focus afterwards (a port Input after its edit applied)."""
        container = self.query_one("#review", VerticalScroll)
        container.remove_children()
        typed = dict(self.values)
        try:
            plan = self.app.build_plan()
        except Exception as exc:  # noqa: BLE001 — SelectionError: show it, stay on the screen
            container.mount(Static(Text(f"✗ Cannot plan this selection: {exc}", style="bold red"), id="plan-error"))
            self.plan_json = None
            return
        self.plan_json = plan
        if focus is None:  # the first paint of a plannable selection: it goes to the recent list
            from vllm_deploy_wizard.workflows.saved_selections import record_recent

            record_recent(dict(self.app.selection), dict(getattr(self.app, "port_edits", {}) or {}))
        widgets: list[Widget] = [
            Static(
                Text.assemble(("Plan: ", "bold"), plan_header(self.app.plan, self.app.catalog)),
                id="plan-summary",
            )
        ]
        self.machines = machine_choices(plan)
        self.node = self.machines[0][1] if self.machines else None
        # a relaunch (monitor's flag fix) comes back here: keep the machine the last launch ran
        previous = getattr(self.app, "launch_node", None)
        if previous and any(value == previous for _, value in self.machines):
            self.node = previous
        if self.machines:  # contracts §2: a plan on several machines — which one is this?
            widgets.append(Horizontal(
                Label("This machine runs", classes="ph-name"),
                Select([(prompt, value or "") for prompt, value in self.machines], value=self.node or "",
                       allow_blank=False, id="machine"),
                classes="ph-row",
            ))
        install = list(plan.get("base_install") or []) + list(plan.get("install") or [])
        if install:
            widgets.append(Label("Install steps", classes="section"))
            widgets.append(Static("\n".join(install), id="install-steps", classes="install"))
        installed = self._installed_text(plan)
        if installed:
            widgets.append(Static(installed, id="installed"))
        notes = plan.get("notes") or []
        if notes:
            widgets.append(Static("\n".join(f"• {n}" for n in notes), id="plan-notes"))
        placeholders = plan.get("placeholders") or []
        if placeholders:
            widgets.append(Label("Placeholders (filled at launch; detected defaults shown)", classes="section"))
            offered = {**config_file_defaults(plan), **(plan.get("placeholder_defaults") or {})}
            self.values = offered_defaults(placeholders, self.app.inventory, offered, node=self.node)
            self.values.update({k: v for k, v in typed.items() if k in self.values})
            for name in placeholders:
                widgets.append(
                    Horizontal(Label(f"${name}", classes="ph-name"),
                               Input(self.values[name], id=dom_id("ph", name), name=name), classes="ph-row")
                )
        widgets += self._port_rows()
        widgets.append(self._check_typed(list(self.app.selection.get("advanced_args") or []), plan))
        widgets.append(Label("Commands (launch order)", classes="section"))
        for i, block in enumerate(process_blocks(self.app.plan)):
            widgets.append(CommandBlockView(block, id=f"cmd-{i}", classes="command"))
        container.mount_all(widgets)
        self.call_after_refresh(self._focus_first_command if focus is None else lambda: self._focus_id(focus))
        launcher = self.app.launcher
        self.query_one("#review-status", Static).update(
            "Preflight (ports, executables, vLLM version, serve flags, placeholders): ctrl+r (p) checks now, "
            "ctrl+l (l) checks and launches."
            if launcher is not None
            else "Launching is unavailable here (no launcher); export the plan or scripts instead."
        )

    def _check_typed(self, typed: list[str], plan: dict) -> Static:
        """The ``#typed-problems`` line: the plan-time check of the typed advanced args
        (tui/typed_checks.py, the CLI's rule) — at once when nothing is typed (no vLLM to ask), else
        in a worker that paints it when done. Its result (``typed_check``) gates launch / export."""
        from vllm_deploy_wizard.tui.typed_checks import check, status_text

        self.typed_check = check([], plan) if not typed else None
        text = status_text(self.typed_check)
        box = Static(text, id="typed-problems")
        box.display = bool(text)
        if typed:
            self._typed_worker(typed, plan)
        return box

    @work(thread=True, exclusive=True, group="typed", exit_on_error=False)
    def _typed_worker(self, typed: list[str], plan: dict) -> None:
        from vllm_deploy_wizard.tui.typed_checks import check

        try:
            result = check(typed, plan)
        except Exception as exc:  # noqa: BLE001 — a broken probe must not hide the plan; say it
            result = ([], [f"the advanced args were not checked: {exc}"])
        self.app.call_from_thread(self._typed_done, plan, result)

    def _typed_done(self, plan: dict, result: tuple[list[str], list[str]]) -> None:
        if plan is not self.plan_json:  # a newer plan's check supersedes this one
            return
        self.typed_check = result
        self._paint_typed()
        pending, self._after_typed_check = self._after_typed_check, None
        action = {"Launch": self.action_launch, "Export": self.action_export, "Scripts": self.action_scripts,
                  "Preflight": self.action_preflight}.get(pending or "")
        if action is not None:  # pressed while checking: it runs now (or is refused with the problems)
            action()

    def _paint_typed(self) -> None:
        from vllm_deploy_wizard.tui.typed_checks import status_text

        box = self.query("#typed-problems")
        if box:
            text = status_text(self.typed_check)
            box.first(Static).update(text)
            box.first(Static).display = bool(text)

    def _port_rows(self) -> list:
        """The Ports section: one row per port the plan binds (tui/port_edits.py), an Input to edit it
        and the conflict it has (another process of the node on the same port), updated as one types."""
        from vllm_deploy_wizard.tui.port_edits import conflicts, port_slots

        self.slots = port_slots(self.app.plan.processes) if self.app.plan is not None else []
        if not self.slots:
            return []
        self.port_problems = conflicts(self.slots)
        rows: list = [Label("Ports (edit a value, enter applies; conflicts shown as you type)", classes="section")]
        for slot in self.slots:
            where = "" if slot.node == 0 else f"node {slot.node} · "
            rows.append(Horizontal(
                Label(f"{where}{slot.label}", classes="port-name"),
                Input(slot.value, id=dom_id("port", slot.key), name=slot.key, classes="port-input"),
                Static(self._port_note(slot.key), id=dom_id("portwhy", slot.key), classes="port-why"),
                classes="ph-row"))
        return rows

    def _port_note(self, key: str) -> Text:
        why = self.port_problems.get(key)
        return Text(f"✗ {why}", style="bold red") if why else Text("")

    def _port_edits_typed(self) -> tuple[dict[str, int], dict[str, str]]:
        """The ports as typed now: ``(edits, problems)`` — problems are values that are no port."""
        from vllm_deploy_wizard.tui.port_edits import check_port

        edits, bad = dict(self.app.port_edits), {}
        for slot in getattr(self, "slots", []):
            box = self.query(f"#{dom_id('port', slot.key)}")
            if not box:
                continue
            text = box.first(Input).value
            if text == slot.value:
                continue
            try:
                edits[slot.key] = check_port(text)
            except ValueError as exc:
                bad[slot.key] = str(exc)
        return edits, bad

    def _refused_for_edits(self, what: str) -> bool:
        """True (and says why, naming each field) when the typed advanced args have a problem (or are
        still being checked), a port field holds a value that is no port, or a port is typed but not
        applied with enter: ``what`` ("Export", "Launch", …) would otherwise write or run a plan the
        CLI's ``plan`` refuses, or one with the old port."""
        from vllm_deploy_wizard.tui.typed_checks import refusal

        result: tuple[list[str], list[str]] | None = getattr(self, "typed_check", ([], []))
        if result is None:  # still checking: do it once the check is in (_typed_done)
            self._after_typed_check = what
            self.query_one("#review-status", Static).update(
                f"{what} waits for the advanced-args check (vLLM's flag list is read once, then cached)…")
            return True
        why = refusal(what, result)
        if why is not None:
            self.query_one("#review-status", Static).update(Text("✗ " + why, style="red"))
            self.notify(why, severity="error")
            return True
        _, bad = self._port_edits_typed()
        lines = []
        for slot in getattr(self, "slots", []):
            box = self.query(f"#{dom_id('port', slot.key)}")
            typed = box.first(Input).value if box else slot.value
            if slot.key in bad:
                lines.append(f"{slot.label}: {bad[slot.key]}")
            elif typed != slot.value:
                lines.append(f"{slot.label}: {typed} is typed but not applied — press enter in the field")
        if not lines:
            return False
        text = f"{what} refused — fix the port field(s) first:\n" + "\n".join(f"  - {line}" for line in lines)
        self.query_one("#review-status", Static).update(Text("✗ " + text, style="red"))
        self.notify(text, severity="error")
        return True

    def _show_port_conflicts(self) -> None:
        from vllm_deploy_wizard.launcher.ports import port_free, port_holder
        from vllm_deploy_wizard.tui.port_edits import conflicts

        edits, bad = self._port_edits_typed()
        changed = {k for k, v in edits.items() if self.app.port_edits.get(k) != v}

        def busy(port: int) -> str | None:  # asked for typed ports only: the plan's own are preflight's
            if not any(edits.get(k) == port for k in changed):
                return None
            return None if port_free(port) else (port_holder(port) or "another program")

        self.port_problems = {**conflicts(self.slots, edits, busy), **bad}
        for slot in self.slots:
            note = self.query(f"#{dom_id('portwhy', slot.key)}")
            if note:
                note.first(Static).update(self._port_note(slot.key))

    async def _apply_port(self, key: str) -> None:
        """Keep the typed port of slot ``key`` (app.port_edits) and re-plan with it."""
        from vllm_deploy_wizard.tui.port_edits import check_port

        box = self.query_one(f"#{dom_id('port', key)}", Input)
        slot = next((s for s in self.slots if s.key == key), None)
        if slot is None or box.value == slot.value:
            return
        try:
            port = check_port(box.value)
        except ValueError as exc:
            self.notify(f"{slot.label}: {exc}", severity="error")
            return
        self.app.port_edits[key] = port
        await self.query_one("#review", VerticalScroll).remove_children()  # the ids are reused
        self._paint_review(focus=box.id)
        self.notify(f"{slot.label} → {port}")

    def _focus_id(self, wid: str) -> None:
        found = self.query(f"#{wid}")
        if found:
            found.first().focus()
        else:
            self._focus_first_command()

    def _focus_first_command(self) -> None:
        """Start on a command block, so the single-letter keys act (an Input would take them)."""
        first = next(iter(self.query(CommandBlockView)), None)
        if first is not None:
            first.focus()

    def _installed_text(self, plan: dict) -> str:
        """What is installed vs what the plan needs: vLLM version vs the recipe's minimum,
        vllm-router and LMCache (docs/detection.md §5.5 facts, ``inventory.software``)."""
        software = getattr(self.app.inventory, "software", None)
        if software is None:
            return ""

        def version(key: str) -> str | None:
            tool = getattr(software, key, None)
            if tool is None or not getattr(tool, "installed", False):
                return None
            return getattr(tool, "version", None) or "installed"

        need = plan.get("min_vllm_version")
        parts = [vllm_installed_text(version("vllm"), getattr(software, "vllm_build", None),
                                     plan.get("accelerator"), need)]
        argv0 = {p["argv"][0] for p in plan.get("processes", []) if p.get("argv")}
        if "vllm-router" in argv0:
            parts.append(f"vllm-router: {version('vllm_router') or 'not installed'}")
        if any("lmcache" in step for step in plan.get("install") or []) or "lmcache" in argv0:
            parts.append(f"LMCache: {_lmcache_text(software, version('lmcache'))}")
        return "Installed: " + " · ".join(parts)

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "machine":
            self.node = str(event.value) or None
            first = self.machines[0][1] if self.machines else None
            if self.node != first and self.values:
                # placeholders.offered_defaults assumes this host is the head (node 0 / router host)
                self.query_one("#review-status", Static).update(
                    f"This machine runs {self.node}: the address placeholders above default to this host's "
                    "address, which is right only on the head / router host — type the head's addresses here "
                    "(ctrl+r checks, ctrl+l launches this machine's part).")

    def on_screen_resume(self) -> None:
        """Back from the monitor (detach): the run goes on; say so and how to get back to it."""
        run_id = getattr(self, "run_id", None)
        if run_id:
            from vllm_deploy_wizard.tui.run_offers import keeps_running_text

            text = keeps_running_text(run_id)
            self.query_one("#review-status", Static).update(
                f"Detached: {text[0].upper()}{text[1:]}. ctrl+l would start this plan again as a new run.")

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id and event.input.id.startswith("ph-") and event.input.name:
            self.values[event.input.name] = event.value.strip()
        elif event.input.id and event.input.id.startswith("port-"):
            self._show_port_conflicts()

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id and event.input.id.startswith("port-") and event.input.name:
            await self._apply_port(event.input.name)

    def commands(self) -> list[tuple[str, str]]:
        """``(process name, command text)`` as displayed, in order."""
        return [(b.block.name, b.block.command) for b in self.query(CommandBlockView)]

    def action_copy(self) -> None:
        """Copy the focused command (else the first) with placeholders filled, via OSC 52."""
        focused = (self.focused if isinstance(self.focused, CommandBlockView)
                   else next(iter(self.query(CommandBlockView)), None))
        if focused is None:
            return
        index = list(self.query(CommandBlockView)).index(focused)
        self.app.copy_to_clipboard(process_blocks(self.app.plan, self.values)[index].text())
        self.notify(f"Copied {focused.block.name}'s command to the clipboard (OSC 52).")

    def _export_dir(self) -> Path:
        """One ./vllm-wizard-<time>/ folder per review screen (plan file and scripts side by side)."""
        if getattr(self, "_dir", None) is None:
            self._dir = default_export_dir()
        return self._dir

    def action_export(self) -> None:
        """Write the plan file (contracts §2) into ./vllm-wizard-<time>/plan.yaml."""
        if not self.plan_json:
            return
        if self._refused_for_edits("Export"):
            return
        path = self._export_dir() / "plan.yaml"
        write_plan_file(self.app, path)
        self.notify(f"Plan written to {path}")

    def action_scripts(self) -> None:
        """Write one bash script per node next to the plan file."""
        if not self.plan_json:
            return
        if self._refused_for_edits("Scripts"):
            return
        paths = write_scripts(self.app.plan, self._export_dir())
        hint = " (export the placeholders before running them)" if self.plan_json.get("placeholders") else ""
        self.notify("Scripts" + hint + ": " + ", ".join(str(p) for p in paths))

    def action_preflight(self) -> None:
        """Run the launcher's preflight for this machine (``self.node``; None = node rank 0) now and show
        every problem (or that all passed)."""
        if not self.plan_json or self.app.launcher is None:
            return
        if self._refused_for_edits("Preflight"):
            return
        self.query_one("#review-status", Static).update(
            "Preflight running (vLLM flag check may take ~12 s the first time)…")
        self._preflight(dict(self.values))

    @work(thread=True, exclusive=True, group="launch", exit_on_error=False)
    def _preflight(self, values: dict[str, str]) -> None:
        import tempfile

        launcher = self.app.launcher
        if launcher is None:  # action_preflight starts this worker only with a launcher
            return
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "plan.yaml"
            try:
                self._set_node_facts()
                write_plan_file(self.app, path)
                problems = launcher.preflight(path, values, node=self.node)
            except Exception as exc:  # noqa: BLE001 — LaunchError: unfilled placeholders etc.
                problems = [str(exc)]
        self.app.preflight_refusals = list(getattr(launcher, "last_refusals", None) or [])
        text = Text("✓ Preflight passed: ports free, executables found, vLLM version and flags OK.", style="green") \
            if not problems else Text("✗ Preflight:\n" + "\n".join(f"  - {p}" for p in problems), style="red")
        for warning in getattr(launcher, "last_warnings", None) or []:  # e.g. an abbreviated vLLM flag
            text.append(f"\n  ⚠ {warning}", style="yellow")
        self.app.call_from_thread(self.query_one("#review-status", Static).update, text)
        self.preflight_problems = problems

    def action_launch(self) -> None:
        """Write the plan file and start a detached run of this machine's part (``self.node``, picked on
        the screen when the plan spans several machines; None = node rank 0) through the launcher seam."""
        if not self.plan_json:
            return
        if self._refused_for_edits("Launch"):
            return
        if self.app.launcher is None:
            self.notify("No launcher available on this install.", severity="error")
            return
        missing = [n for n, v in self.values.items() if not v]
        if missing:
            self.notify("Fill " + ", ".join(f"${m}" for m in missing) + " first.", severity="error")
            return
        where = f" of {self.node}" if self.node else ""
        self.query_one("#review-status", Static).update(
            f"Preflight and launch{where}… (the first check of an installed vLLM runs `vllm --version` and "
            "`vllm serve --help=all`, ~12 s each on a CPU node; later launches use their cached answers)")
        self.app.launch_values = dict(self.values)
        self.app.launch_node = self.node  # the machine label a relaunch must reuse
        self._launch(dict(self.values))

    @work(thread=True, exclusive=True, group="launch", exit_on_error=False)
    def _launch(self, values: dict[str, str]) -> None:
        from vllm_deploy_wizard.tui.plan_export import runs_plan_path

        launcher, plan_json = self.app.launcher, self.plan_json
        if launcher is None or plan_json is None:  # action_launch starts this worker only with both
            return
        try:  # the state dir itself may be unusable (XDG_STATE_HOME a file): say so, never hang
            self._set_node_facts()
            path = runs_plan_path(time.strftime("%Y%m%d-%H%M%S"))
            write_plan_file(self.app, path)
            run_id = launcher.start(path, values, node=self.node)
        except Exception as exc:  # noqa: BLE001 — LaunchError lists every preflight problem
            self.app.preflight_refusals = list(getattr(exc, "refusals", None) or [])  # Fit fix applies them
            self.app.call_from_thread(self._launch_failed, str(exc))
            return
        self.run_id = run_id
        # the monitor's smoke test reads the launched plan (secrets unmasked) for this run
        self.app.launched_plans[run_id] = plan_json
        self.app.call_from_thread(self.app.open_monitor, run_id)

    def _set_node_facts(self) -> None:
        """Give the launcher seam this node's facts for the node checks (memory, devices, /dev/shm)."""
        inventory = getattr(self.app, "inventory", None)
        launcher = self.app.launcher
        if launcher is not None and hasattr(launcher, "facts") and inventory is not None:
            from vllm_deploy_wizard.launcher.launch import node_facts

            launcher.facts = node_facts(inventory.host, inventory)

    def _launch_failed(self, text: str) -> None:
        self.query_one("#review-status", Static).update(Text(f"✗ Launch refused:\n{text}", style="red"))
