"""The wizard app: ``make_app(catalog=…, inventory=…, launcher=…)`` shared by the CLI and the tests.

Decisions:
- **First paint never waits.** ``compose`` builds the hardware screen with what is known: the
  facts the start-up child (tui/start_up.py, forked before Textual was imported) has sent by then,
  else placeholders. The catalog load and detection (or taking the child's Inventory) run in
  *thread* workers that call one core function each and post the result as a message
  (docs/architecture.md §3 style 2, §4 "Wizard start-up"). The app's handlers store the result and forward a
  :class:`DataChanged` to every screen on the stack; widgets change only in those handlers.
- **One selection, one place.** The selection is a plain ``dict`` of docs/plan-file.md §2 keys (plus product
  extensions ``gpus``, ``connector``, ``router``…) owned by the app; screens call
  :meth:`WizardApp.update_selection`, which recomputes the constraints answer synchronously (it is
  pure and fast — the benchmark pins keystroke→panel p95 ≤ 16 ms) and posts
  :class:`SelectionChanged`.
- **Seams, not monkeypatching.** The cores are reached through :class:`~vllm_deploy_wizard.tui.services.Services`;
  tests inject fakes or pre-built objects through :func:`make_app`.
- NO_COLOR: Textual itself turns the app monochrome when the variable is set (its ``Monochrome``
  filter), so the app only avoids meaning-by-colour: states, marks and warnings carry text/symbols
  (READY, ✓, ⚠, ✗, ●/○, [x]).
- Screens are pushed in wizard order (hardware → model → configure → review → monitor); ``escape``
  goes back one, closes a popup (F1 help, a y/n question) when one is open, and on the first screen
  asks "Quit vllm-wizard?" instead of quitting (ctrl+q quits at once). The command
  palette (ctrl+p) offers jumps to every step and the review's and monitor's actions.
- On start the wizard looks for runs left behind: a run whose supervisor is gone but whose processes
  still run is offered a stop (the launcher's ``stop_stale``, as ``vllm-wizard stop`` does),
  then a live run is offered for attaching.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.driver import Driver
from textual.message import Message
from textual.screen import Screen

from vllm_deploy_wizard.tui.messages import CatalogLoaded, DataChanged, InventoryDetected, SelectionChanged
from vllm_deploy_wizard.tui.run_offers import offer_runs
from vllm_deploy_wizard.tui.services import LauncherPort, Services
from vllm_deploy_wizard.tui.start_up import GC_PAUSE_MAX_S, PARTIAL_SETTLE_S, StartLoads, resume_gc


class WizardApp(App):
    """The Textual wizard. Construct through :func:`make_app`.

    Public state read by screens: ``catalog`` (None until loaded), ``inventory`` (None until
    detected), ``candidates`` (ranked detect candidates), ``selection`` (dict), ``options``
    (constraints answer for ``selection``, None until a model is chosen), ``errors`` (load errors
    keyed ``catalog``/``detect``), ``services``.
    """

    CSS_PATH = "wizard.tcss"
    TITLE = "vllm-wizard"
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", priority=True),
        Binding("f1", "help", "Help"),
    ]

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver for this platform, except on Linux/macOS without ``TEXTUAL_DRIVER``:
        :class:`~vllm_deploy_wizard.tui.key_driver.PromptEscapeDriver` (Escape after the escape
        timeout, the wizard's default of which it sets unless ``ESCDELAY`` is set)."""
        import sys

        from textual import constants

        if constants.DRIVER is not None or sys.platform == "win32":
            return super().get_driver_class()
        from vllm_deploy_wizard.tui.key_driver import PromptEscapeDriver, apply_escape_delay

        apply_escape_delay()
        return PromptEscapeDriver

    async def action_quit(self) -> None:
        """Quit (ctrl+q). Live runs go on, and the terminal is told how to re-attach or stop each once
        the app has closed: the monitor (also under a popup) says it for its run; elsewhere every live
        run the launcher knows is named (a run launched, then detached from, included)."""
        for screen in reversed(self.screen_stack):
            quit_keep_running = getattr(screen, "action_quit_keep_running", None)
            if quit_keep_running is not None:
                quit_keep_running()
                return
        self.exit(message=self._live_runs_text())

    def _live_runs_text(self) -> str | None:
        """One "run … keeps running; …" line per live run, or None when there is none (or no launcher)."""
        from vllm_deploy_wizard.tui.run_offers import keeps_running_text

        launcher = self.launcher
        try:
            runs = launcher.live_runs() if launcher is not None else []
        except Exception:  # noqa: BLE001 — no run dir yet etc.
            runs = []
        return "\n".join(keeps_running_text(r) for r in runs) or None

    def __init__(
        self,
        services: Services | None = None,
        catalog: Any = None,
        inventory: Any = None,
        recipes: Path | None = None,
        model: str | None = None,
        attach: str | None = None,
        clock: Callable[[], float] = time.time,
        stats_sampler: Callable[[], dict] | None = None,
        opened: Any = None,
        start_loads: StartLoads | None = None,
    ) -> None:
        super().__init__()
        self.start_loads = start_loads  # the forked start-up child (tui/start_up.py), or None
        self.start_facts: Any = None  # its latest HardwareFacts, shown until the app's own loads are in
        self._facts_memo: tuple[tuple, Any] | None = None
        self.opened = opened  # --open: a saved selection (workflows.saved_selections) to land on review with
        self.clock = clock
        self.stats_sampler = stats_sampler
        self._services = services
        self._services_lock = threading.Lock()
        self.catalog = catalog
        self.inventory = inventory
        self.recipes = recipes
        self.initial_model = model
        self.attach_run = attach
        self.candidates: list = []
        self.selection: dict[str, Any] = {}
        self.options: Any = None
        self.resolved_features: list[str] = []
        self.plan_warnings: list[str] = []  # the synthesized plan's gate warnings (see recompute)
        self.fit_fixes: dict[str, int] = {}  # companion values that fit this node (planner fixes)
        self.preflight_refusals: list = []  # the last preflight's node refusals, each with its fix
        self.frontend_default: str | None = None  # the frontend the plan runs with when none is picked
        self.errors: dict[str, str] = {}
        self.plan_json: dict | None = None
        self.plan: Any = None
        self.launched_plans: dict[str, dict] = {}  # run id → plan JSON this wizard launched it from
        self.launch_values: dict[str, str] = {}  # the last launch's placeholder values (monitor's smoke test)
        self.launch_node: str | None = None  # the machine label the last launch ran (a relaunch reuses it)
        self.port_edits: dict[str, int] = {}  # review's port edits, {"process|flag": port} (tui/port_edits.py)
        self.live_runs: list[str] = []
        self.stopped_stale: tuple[str, list[int]] | None = None  # (run id, pids) of the last stale stop
        self._gpus_typed = False  # devices per node typed by the person (kept across hardware picks)

    # ------------------------------------------------------------------ services and loading
    @property
    def services(self) -> Services:
        """The core seam; built on first use (in a worker thread) from the real modules."""
        with self._services_lock:
            if self._services is None:
                from vllm_deploy_wizard.tui.services import real_services

                self._services = real_services()
            return self._services

    def get_default_screen(self) -> Screen:
        """The hardware step is the base screen (no blank screen underneath)."""
        from vllm_deploy_wizard.tui.screen_hardware import HardwareScreen

        return HardwareScreen()

    def on_mount(self) -> None:
        self.set_timer(GC_PAUSE_MAX_S, resume_gc)  # at the latest (a load that hangs)

    def on_ready(self) -> None:
        """Textual's Ready: the first frame is on the terminal. Start-up order
        (bench/bench_terminal_start.py: first text, then the first *usable* screen — the detected profile
        preselected): the hardware screen painted what the start-up child had sent by its mount — on a
        CPU node all of it, so the first frame is the usable one; what arrived since is painted now (only
        the two panels change, with no new layout), and what comes later (a slow NVML start) by the
        detection worker. Then the workers start — after this paint, as their imports (pydantic models,
        vendor libraries) would hold the GIL while it runs: detection first (the smaller job), one settle
        and re-render once both are in (_load_done), and the look for live and stale runs (launcher
        imports, a process scan) only once both are in."""
        if self.take_start_frames():
            self.broadcast(DataChanged())
        self.screen.call_after_refresh(self._start_workers)

    def _start_workers(self) -> None:
        self._pending_loads = {k for k, v in (("catalog", self.catalog), ("detect", self.inventory)) if v is None}
        if self.inventory is None:
            self._detect()
        if self.catalog is None:
            self._load_catalog()
        if self.catalog is not None or self.inventory is not None:
            self._settle()
        if self.attach_run:  # --attach RUN: straight to its monitor (the client reports a dead run)
            self.call_after_refresh(self.open_monitor, self.attach_run)
        elif not self._pending_loads:
            self._find_live_runs()

    @property
    def loading(self) -> bool:
        """True until both start-up loads (catalog, detection) are in, or have failed."""
        pending = getattr(self, "_pending_loads", None)
        return pending is None or bool(pending)

    def _load_done(self, key: str) -> None:
        """One start-up load finished (or failed). The screens are settled and re-rendered once, when
        the last start-up load is in (each re-render of the first screen costs 20–30 ms of CPU, so
        one per load would delay the first usable screen); once that screen is painted, the look for
        runs left behind starts. An earlier load is shown on its own only if the rest take longer than
        :data:`PARTIAL_SETTLE_S` (NVML/amdsmi init on a GPU node can take seconds: the profile list
        must not wait for it). A load outside start-up (none pending) settles at once."""
        pending: set[str] = getattr(self, "_pending_loads", set())
        if key not in pending:
            self._settle()
            return
        pending.discard(key)
        timer = getattr(self, "_partial_settle", None)
        if pending:
            if timer is None:
                self._partial_settle = self.set_timer(PARTIAL_SETTLE_S, self._settle)
            return
        if timer is not None:
            timer.stop()
        self._settle()
        self.screen.call_after_refresh(resume_gc)  # the first usable screen is painted with it
        if not self.attach_run:  # its launcher imports and process scan would hold the GIL while that paints;
            # queued on the screen, behind the DataChanged just posted there (not before its refresh)
            self.screen.call_after_refresh(self._find_live_runs)

    @work(thread=True, group="load", exit_on_error=False)
    def _load_catalog(self) -> None:
        try:
            catalog = self.services.load_catalog(self.recipes)
        except Exception as exc:  # noqa: BLE001 — shown to the person, never a crash
            self.post_message(CatalogLoaded(None, f"{type(exc).__name__}: {exc}"))
            return
        model = self.initial_model
        if model and self.services.custom_recipe is not None:
            try:  # --model names a recipe (case-insensitive) or a custom model's config.json
                catalog.recipe(model)
            except Exception:  # noqa: BLE001
                try:
                    catalog, self.initial_model = self.services.custom_recipe(catalog, model)
                except Exception as exc:  # noqa: BLE001
                    self.errors["model"] = f"--model {model}: {exc}"
                    self.initial_model = None
        self.post_message(CatalogLoaded(catalog))

    @work(thread=True, group="load", exit_on_error=False)
    def _detect(self) -> None:
        loads = self.start_loads
        if loads is not None:  # the start-up child detects: its frames as they come, then its Inventory
            while frames := loads.more():
                self.call_from_thread(self._start_frames_arrived, frames)
            try:
                inventory = loads.inventory()
            except Exception:  # noqa: BLE001 — an Inventory that doesn't unpickle: detect here instead
                inventory = None
            if inventory is not None:
                self.post_message(InventoryDetected(inventory))
                return
            if loads.closed:  # the app is ending (run_wizard closed the child): detect nothing here
                return
        try:
            self.post_message(InventoryDetected(self.services.detect()))
        except Exception as exc:  # noqa: BLE001
            self.post_message(InventoryDetected(None, f"{type(exc).__name__}: {exc}"))

    @work(thread=True, group="runs", exit_on_error=False)
    def _find_live_runs(self) -> None:
        """Look for live runs (offer to attach) and stale runs with leftovers (offer to stop them);
        stale offers come first, one per run."""
        launcher = self.launcher
        if launcher is None:
            return
        try:
            runs = launcher.live_runs()
        except Exception:  # noqa: BLE001 — no run dir yet etc.
            runs = []
        try:
            stale = list(getattr(launcher, "stale_runs", lambda: [])())
        except Exception:  # noqa: BLE001
            stale = []
        if runs or stale:
            self.call_from_thread(offer_runs, self, stale, runs)

    @work(thread=True, group="stale", exit_on_error=False)
    def _stop_stale(self, run_id: str) -> None:
        stop_stale = getattr(self.launcher, "stop_stale", None)  # optional on the port (LauncherPort)
        if stop_stale is None:  # stale runs are offered only by a port with stale_runs / stop_stale
            self.call_from_thread(self.notify, f"Could not stop run {run_id}: this launcher cannot stop stale runs",
                                  severity="error", timeout=15)
            return
        try:
            pids = stop_stale(run_id)
        except Exception as exc:  # noqa: BLE001 — LaunchError: the run vanished meanwhile
            self.call_from_thread(self.notify, f"Could not stop run {run_id}: {exc}", severity="error", timeout=15)
            return
        self.stopped_stale = (run_id, list(pids))
        self.call_from_thread(self.notify, f"Run {run_id}: stopped {len(pids)} leftover processes {list(pids)}.",
                              timeout=10)

    def _start_frames_arrived(self, frames: list[dict]) -> None:
        """The start-up child's frames that came after the first screen (a slow detection): show them."""
        if self.take_start_frames(frames=frames):
            self.broadcast(DataChanged())

    def on_catalog_loaded(self, message: CatalogLoaded) -> None:
        if message.error:
            self.errors["catalog"] = message.error
        else:
            self.catalog = message.catalog
        if "model" in self.errors:  # --model named nothing usable: said where it can't be missed too
            self.notify(f"{self.errors['model']}. Pick a model on the next step instead.", severity="error",
                        timeout=15, markup=False)
        self._load_done("catalog")

    def on_inventory_detected(self, message: InventoryDetected) -> None:
        if message.error:
            self.errors["detect"] = message.error
        else:
            self.inventory = message.inventory
        self._load_done("detect")

    def _settle(self) -> None:
        """Derive candidates and defaults once both inputs are known; notify every screen."""
        changed = False
        if self.catalog is not None and self.inventory is not None and not self.candidates:
            try:
                profiles = self.catalog.taxonomy.hardware_profiles
                self.candidates = list(self.services.match_profiles(self.inventory, profiles))
            except Exception as exc:  # noqa: BLE001
                self.errors["match"] = f"{type(exc).__name__}: {exc}"
            if "hardware" not in self.selection:
                best = self.detected_profile
                if best is not None:
                    self.selection["hardware"] = best
                    self._default_gpus()
                    changed = True
        if self.catalog is not None and self.initial_model and "model" not in self.selection:
            self.selection["model"] = self.initial_model
            self.initial_model = None
            changed = True
        if changed and self.selection.get("model"):
            # --model can arrive before detection: recompute once the detected hardware is known, so
            # configure checks the choices against the profile the bottom bar names (not the default)
            self.recompute()
        self.broadcast(DataChanged())
        detected = self.inventory is not None or "detect" in self.errors
        if self.opened is not None and self.catalog is not None and detected:
            opened, self.opened = self.opened, None
            self.open_saved(opened)

    def open_saved(self, entry: Any) -> None:
        """Make ``entry``'s selection (and port edits) the wizard's and land on the review, with the model
        and configure steps beneath it (escape goes back through them). A custom model is derived again
        from its config.json; a selection that cannot be planned shows its error on the review."""
        if self.catalog is None:
            self.opened = entry  # opened once the catalog is loaded (_settle)
            return
        selection = dict(entry.selection)
        model = selection.get("model")
        if model and self.services.custom_recipe is not None:
            try:
                self.catalog.recipe(model)
            except Exception:  # noqa: BLE001 — not a recipe: a custom model
                try:
                    self.catalog, selection["model"] = self.services.custom_recipe(self.catalog, model)
                except Exception as exc:  # noqa: BLE001
                    self.errors["model"] = f"{model}: {exc}"
        self._gpus_typed = "gpus" in selection
        self.selection = selection
        self.port_edits = dict(getattr(entry, "port_edits", None) or {})
        self.recompute()
        self.broadcast(SelectionChanged())
        from vllm_deploy_wizard.tui.screen_configure import ConfigureScreen
        from vllm_deploy_wizard.tui.screen_model import ModelScreen
        from vllm_deploy_wizard.tui.screen_review import ReviewScreen

        for screen in (ModelScreen(), ConfigureScreen(), ReviewScreen()):
            self.push_screen(screen)

    @property
    def detected_profile(self) -> str | None:
        """The best detection candidate's profile id (quality other than ``none``), or None."""
        from vllm_deploy_wizard.tui.hardware_view import best_candidate

        best = best_candidate(self.candidates)
        return best.profile_id if best is not None else None

    def hardware_facts(self) -> Any:
        """What the hardware step shows of the catalog and the node
        (:class:`~vllm_deploy_wizard.tui.hardware_view.HardwareFacts`): the start-up child's until the
        app's own catalog and inventory are both in, then computed from them (memoised per catalog,
        inventory and candidates)."""
        from vllm_deploy_wizard.tui.hardware_view import hardware_facts

        if (self.catalog is None or self.inventory is None) and self.start_facts is not None:
            return self.start_facts
        key = (id(self.catalog), id(self.inventory), id(self.candidates))
        if self._facts_memo is None or self._facts_memo[0] != key:
            self._facts_memo = (key, hardware_facts(self.catalog, self.inventory, self.candidates))
        return self._facts_memo[1]

    def take_start_frames(self, frames: list[dict] | None = None) -> bool:
        """Apply the start-up child's frames not taken yet (``frames``, or what has arrived; never
        waits): its facts are shown, and its detected profile and devices-per-node default are
        preselected, as :meth:`_settle` does with the app's own loads, unless the person picked
        already. Returns True when a frame was applied."""
        if self.start_loads is None:
            return False
        if frames is None:
            frames = self.start_loads.frames()
        facts = next((f["facts"] for f in reversed(frames) if f.get("facts") is not None), None)
        if facts is None:
            return False
        self.start_facts = facts
        if facts.best and "hardware" not in self.selection:
            self.selection["hardware"] = facts.best
            if facts.start_gpus is not None and "gpus" not in self.selection:
                self.selection["gpus"] = facts.start_gpus
        return True

    def _default_gpus(self) -> None:
        """Devices per node default — the rule ``vllm-wizard plan --detect`` applies
        (:func:`~vllm_deploy_wizard.workflows.planning.apply_detected_defaults`), so both plan the
        same node alike. A count the person typed (``_gpus_typed``) is kept."""
        if getattr(self, "_gpus_typed", False) or self.catalog is None:
            return
        from vllm_deploy_wizard.workflows.planning import apply_detected_defaults

        data = {k: v for k, v in self.selection.items() if k != "gpus"}
        best = next((c for c in self.candidates if c.profile_id == self.detected_profile), None)
        if best is not None and data.get("hardware"):
            apply_detected_defaults(self.catalog, data, best, self.inventory)
        if "gpus" in data:
            self.selection["gpus"] = int(data["gpus"])
        else:
            self.selection.pop("gpus", None)

    def hardware_snapshot(self) -> dict | None:
        """The detect summary a plan file records (:func:`workflows.planning.hardware_snapshot`, the
        same keys ``plan --detect`` records); None without an inventory or candidates, or when the
        inventory can't be summarised (a node that can't be read plans off-node)."""
        if self.inventory is None or not self.candidates:
            return None
        from vllm_deploy_wizard.workflows.planning import hardware_snapshot

        try:
            return hardware_snapshot(self.inventory, self.candidates[0])
        except Exception:  # noqa: BLE001 — facts are advice; a node that can't be read plans off-node
            return None

    def broadcast(self, message_type: Message) -> None:
        """Post a fresh copy of ``message_type``'s class to every screen on the stack."""
        for screen in self.screen_stack:
            screen.post_message(type(message_type)())

    # ------------------------------------------------------------------ selection
    def update_selection(self, **changes: Any) -> None:
        """Set selection keys (``None`` removes one), recompute the constraints answer, notify.

        Changing ``hardware`` or ``model`` drops the dependent axes so defaults apply again
        (docs/synthesis.md §2.14); picking the same one again (back, then forward) keeps every choice.
        """
        changes = {k: v for k, v in changes.items()
                   if not (k in ("model", "hardware") and v is not None and self.selection.get(k) == v)}
        if not changes:
            return
        for key, value in changes.items():
            if value is None:
                self.selection.pop(key, None)
            else:
                self.selection[key] = value
        if "gpus" in changes:
            self._gpus_typed = changes["gpus"] is not None
            if not self._gpus_typed:  # cleared: back to the default for the profile
                self._default_gpus()
        elif "hardware" in changes:
            self._default_gpus()
        if "model" in changes or "hardware" in changes:
            for dep in ("variant", "strategy", "features", "feature_modes", "kv_offload", "pd", "connector", "router"):
                if dep not in changes:
                    self.selection.pop(dep, None)
        self.recompute()
        self.broadcast(SelectionChanged())

    def set_selection(self, selection: dict[str, Any]) -> None:
        """Replace the whole selection (configure screen picks), recompute, notify."""
        self.selection = dict(selection)
        self.recompute()
        self.broadcast(SelectionChanged())

    def recompute(self) -> None:
        """``self.options`` := options(catalog, selection); errors land in ``self.errors['options']``."""
        self.errors.pop("options", None)
        if self.catalog is None or not self.selection.get("model"):
            self.options = None
            self.plan_warnings = []
            return
        try:
            sel = self.services.make_selection(self.selection)
            host = self._host()
            self.options = self.services.options(self.catalog, sel, **self._detected_kw(),
                                                 **({"host": host} if host is not None else {}))
        except Exception as exc:  # noqa: BLE001 — a SelectionError the person must see
            self.options = None
            self.plan_warnings = []
            self.errors["options"] = str(exc)
            return
        try:  # the resolved feature list (defaults) marks the feature row; a plan error shows on review
            plan = self._plan(self.services.make_selection(self.planned_selection()))
            self.resolved_features = list(getattr(plan, "resolved", {}).get("features") or [])
            # the plan's own "warning: …" notes (gate rules H1, N5, S3…, docs/constraints.md §3.1), shown
            # by the configure pane as review and `vllm-wizard plan` show them
            # not the open-listener warning (catalog/listeners.py): it is about the deployment, not a
            # choice of this screen, and would stand in the panel for nearly every plan; review shows it
            from vllm_deploy_wizard.catalog.listeners import listener_note_set

            listening = listener_note_set(plan)
            self.plan_warnings = [n.removeprefix("warning: ") for n in getattr(plan, "notes", []) or []
                                  if isinstance(n, str) and n.startswith("warning: ") and n not in listening]
            rust = any((getattr(p, "env", None) or {}).get("VLLM_USE_RUST_FRONTEND") == "1"
                       for p in getattr(plan, "processes", []) or [])
            self.frontend_default = "rust" if rust else "python"
        except Exception:  # noqa: BLE001
            self.resolved_features = []
            self.plan_warnings = []
            self.frontend_default = None

    def _detected_kw(self) -> dict[str, str]:
        """``detected_profile=<best candidate>`` for options() (H1 exception), when detected."""
        best = self.detected_profile
        return {"detected_profile": best} if best is not None else {}

    def planned_selection(self) -> dict[str, Any]:
        """The selection review synthesizes: the person's picks plus the values the configure screen
        shows as resolved (:func:`~vllm_deploy_wizard.catalog.planner.landing_selection`), so both
        screens agree."""
        from vllm_deploy_wizard.catalog.planner import landing_selection

        return landing_selection(self.selection, self.options)

    def build_plan(self) -> dict:
        """Synthesize :meth:`planned_selection`; returns docs/plan-file.md §3 dict. Raises WizardError."""
        from vllm_deploy_wizard.tui.port_edits import apply_port_edits

        sel = self.services.make_selection(self.planned_selection())
        self.plan = apply_port_edits(self._plan(sel), self.port_edits)
        self.plan_json = self.services.plan_to_json(self.plan)
        return self.plan_json

    def _host(self) -> Any:
        """This node's facts (catalog.hostfit.HostCapacity) when the plan is for this node — the
        hardware picked is the detected profile (another profile means planning for another
        machine) — else None (:func:`workflows.planning.host_capacity`)."""
        hw = self.selection.get("hardware")
        if hw is None or hw != self.detected_profile:
            return None
        from vllm_deploy_wizard.workflows.planning import host_capacity

        return host_capacity(self.hardware_snapshot(), hw)

    def _plan(self, sel: Any) -> Any:
        """The plan of ``sel`` from the one planner (catalog.planner.plan_selection): node facts,
        gate and host-fit warnings, unverified marks — exactly what `vllm-wizard plan` prints."""
        if self.services.plan is None:
            self.fit_fixes = {}
            return self.services.synthesize(self.catalog, sel)
        planned = self.services.plan(self.catalog, sel, self._host(), **self._detected_kw())
        self.fit_fixes = dict(getattr(planned, "fixes", {}) or {})
        from vllm_deploy_wizard.workflows.planning import node_plan_warnings

        plan = planned.plan
        plan.notes += node_plan_warnings(planned.catalog, plan, self.hardware_snapshot())
        return plan

    def apply_fit_fixes(self) -> dict[str, Any]:
        """Take the companion values the host-fit warnings suggest (``fit_fixes``: LMCache
        ``l1_size_gb`` / ``max_cpu_workers``) into ``selection.companion_args``, and the flags the last
        preflight refusal named (``preflight_refusals``, e.g. ``--gpu-memory-utilization 0.74``) into
        ``advanced_args`` (tui.fixes.refusal_fix); returns what was set, flag → value for the latter."""
        from vllm_deploy_wizard.tui.fixes import apply_fix, refusal_fix

        fixes: dict[str, Any] = dict(getattr(self, "fit_fixes", {}) or {})
        if fixes:
            self.update_selection(companion_args={**(self.selection.get("companion_args") or {}), **fixes})
        cause, _ = refusal_fix(getattr(self, "preflight_refusals", None))
        if cause is not None:
            args, _ = apply_fix(list(self.selection.get("advanced_args") or []), cause)
            self.preflight_refusals = []
            self.update_selection(advanced_args=args)
            flags = cause["fix_args"]
            fixes.update({flags[i]: flags[i + 1] if i + 1 < len(flags) else "" for i in range(0, len(flags), 2)})
        return fixes

    @property
    def launcher(self) -> LauncherPort | None:
        """The launcher seam, or None where launching is unavailable."""
        try:
            return self.services.launcher
        except Exception:  # noqa: BLE001
            return None

    def open_monitor(self, run_id: str) -> None:
        """Push the monitor attached to ``run_id``."""
        from vllm_deploy_wizard.tui.screen_monitor import MonitorScreen

        self.push_screen(MonitorScreen(run_id))

    # ------------------------------------------------------------------ palette, help
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        from vllm_deploy_wizard.tui import (
            screen_configure,
            screen_hardware,
            screen_model,
            screen_monitor,
            screen_review,
        )

        steps = [
            ("Step: hardware", "Pick the hardware profile", screen_hardware.HardwareScreen),
            ("Step: model", "Pick the model", screen_model.ModelScreen),
            ("Step: configure", "Variant, strategy, nodes, PD, KV offload, features", screen_configure.ConfigureScreen),
            ("Step: review", "Commands, install steps, export, launch", screen_review.ReviewScreen),
        ]
        for title, helptext, cls in steps:
            yield SystemCommand(title, helptext, lambda cls=cls: self.push_screen(cls()))
        if isinstance(screen, screen_review.ReviewScreen):  # its actions, for a person who forgot the keys
            for action, title, helptext, ctrl, _ in screen_review.REVIEW_ACTIONS:
                yield SystemCommand(f"Review: {title}", f"{helptext} ({ctrl})",
                                    lambda action=action: self.run_action(action, screen))
        if isinstance(screen, screen_monitor.MonitorScreen):
            for action, title, helptext in screen_monitor.MONITOR_ACTIONS:
                yield SystemCommand(f"Monitor: {title}", helptext,
                                    lambda action=action: self.run_action(action, screen))

    def action_help(self) -> None:
        """F1: the keys of the screen in front (:func:`~vllm_deploy_wizard.tui.help_text.help_text`) in a
        popup that wraps to the terminal and closes with escape/F1; F1 on
        an open help closes it."""
        from vllm_deploy_wizard.tui.help_text import help_text
        from vllm_deploy_wizard.tui.prompts import HelpPrompt

        if isinstance(self.screen, HelpPrompt):
            self.screen.dismiss(None)
            return
        title = getattr(self.screen, "HELP_TITLE", None) or type(self.screen).__name__.removesuffix("Screen")
        self.push_screen(HelpPrompt(f"Help · {title}", help_text(self.screen, self)))

    def action_confirm_quit(self) -> None:
        """Ask "Quit vllm-wizard? (y/n)" and exit on yes (escape on the first screen; ctrl+q quits
        at once)."""
        from vllm_deploy_wizard.tui.prompts import ConfirmPrompt

        def answer(yes: bool | None) -> None:
            if yes:
                self.exit()

        self.push_screen(ConfirmPrompt("Quit vllm-wizard?", yes="quit", no="stay"), answer)


def make_app(
    catalog: Any = None,
    inventory: Any = None,
    launcher: LauncherPort | None = None,
    services: Services | None = None,
    recipes: Path | None = None,
    model: str | None = None,
    attach: str | None = None,
    clock: Callable[[], float] = time.time,
    stats_sampler: Callable[[], dict] | None | str = "host",
    opened: Any = None,
    start_loads: StartLoads | None = None,
) -> WizardApp:
    """Build the wizard.

    ``catalog``/``inventory``: pre-built objects (tests, ``--replay``); None = load/detect in
    workers after the first paint. ``launcher``: a :class:`LauncherPort` replacing the real one
    (tests pass a fake with canned events). ``services``: the whole core seam (default: the real
    modules, imported lazily). ``recipes``: a recipes checkout replacing the bundled catalog.
    ``model``: preselect a recipe HF id or custom model. ``attach``: open the monitor on that run.
    ``clock``: wall-clock seconds for uptimes (tests pass a fixed one). ``stats_sampler``: the
    monitor's CPU/RAM/GPU sampler (default ``"host"`` = :func:`vllm_deploy_wizard.tui.host_stats.sample`;
    tests pass a fixed one; None = no host panel; another string raises ValueError). ``opened``: a saved selection
    (:class:`~vllm_deploy_wizard.workflows.saved_selections.SavedSelection`, ``wizard --open``) to land
    on the review with. ``start_loads``: the forked start-up child
    (:class:`~vllm_deploy_wizard.tui.start_up.StartLoads`, started by
    :func:`~vllm_deploy_wizard.tui.start_up.run_wizard` before Textual is imported); the first screen
    paints its facts, and the app takes its Inventory instead of detecting.
    """
    if isinstance(stats_sampler, str):
        if stats_sampler != "host":
            raise ValueError(f"stats_sampler: {stats_sampler!r} is not valid; use 'host', a callable or None")
        from vllm_deploy_wizard.tui.host_stats import sample as host_sample

        stats_sampler = host_sample
    if launcher is not None:
        if services is None:
            from vllm_deploy_wizard.tui.services import real_services

            services = real_services()
        services.launcher = launcher
    return WizardApp(services=services, catalog=catalog, inventory=inventory, recipes=recipes, model=model,
                     attach=attach, clock=clock, stats_sampler=stats_sampler, opened=opened, start_loads=start_loads)
