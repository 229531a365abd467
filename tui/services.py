"""The seam between the wizard and the headless cores (docs/contracts.md §1, §3, §4).

What goes through this seam: every *effect* and every slow or machine-dependent call — loading the
catalog, detecting the node, planning (options, synthesis), resolving a custom model, and the
launcher (preflight, start, runs, clients). The app reaches them only through one :class:`Services`
object, built by :func:`real_services` with the real modules (imported lazily, so ``import
vllm_deploy_wizard.tui`` stays cheap and the first frame paints before any core is loaded) or by
tests with fakes. One object, not monkeypatching: tests pass it to
:func:`vllm_deploy_wizard.tui.app.make_app` (docs/architecture.md §3 style 5 and 8).

What does not: pure, side-effect-free helpers and constants of the cores and of the workflow
layer (rendering a plan, the planning defaults and plan-file document of
:mod:`vllm_deploy_wizard.workflows.planning`, host readiness, the launcher's log vocabulary), which tui
modules import directly — lazily, inside the function that needs them, so the first frame paints
before any core is loaded — because a fake could only copy them. ``launch_port`` is the real
:class:`LauncherPort` itself and imports the launcher. The layers contract in ``.importlinter`` keeps
the TUI off the CLI and its commands; nothing enforces that a tui module reaches a core only
through this object, and nothing here claims it.

Every function here is *blocking* and *pure* with respect to the UI: the app runs the slow ones
(``load_catalog``, ``detect``) in thread workers and posts the result as a message.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


class LauncherPort(Protocol):
    """What the wizard needs from ``vllm_deploy_wizard.launcher`` (contracts §3).

    ``preflight(plan_file, values)`` lists every problem that would stop the launch (empty = go).
    ``node`` is this machine's plan label (contracts §2: ``prefill-node-0``, ``router``…); None = node
    rank 0 plus the unbound processes (``launch``'s default).
    ``start(plan_file, values, node)`` loads the plan file for that machine with the placeholder ``values``, runs
    the preflight and starts a detached supervisor; returns the run id (str). Raises
    :class:`vllm_deploy_wizard.common.errors.LaunchError` with every preflight problem.
    ``live_runs()`` lists run ids whose supervisor or children are still alive.
    ``client(run_id)`` returns an object with ``events()`` (async iterator of launcher events),
    ``stop()``, ``restart(name)`` (coroutines).
    Optional (looked up with ``getattr``; a fake may leave them out): ``stale_runs()`` lists runs whose
    supervisor is gone but whose processes still run (``run_id``, ``pids``, ``ports``);
    ``stop_stale(run_id)`` stops them (blocking, returns the pids).
    For the head of a cluster launch (``launch --all-nodes``; tui/monitor_nodes.py), all blocking:
    ``cluster_nodes(run_id)`` → its nodes (``label``, ``dest`` None for this machine, ``run_id``) or
    None; ``node_status(run_id, label)`` → that node's ``status`` reply (``ok``, ``error``, ``run``:
    ``status``, ``outcome``, ``processes``); ``node_log_tail(run_id, label, process, lines)`` → its
    last log lines (raises LaunchError).
    """

    def preflight(self, plan_file: Path, values: dict[str, str], node: str | None = None) -> list[str]: ...

    def start(self, plan_file: Path, values: dict[str, str], node: str | None = None) -> str: ...

    def live_runs(self) -> list[str]: ...

    def client(self, run_id: str) -> Any: ...


@dataclass
class Services:
    """The core functions the wizard calls; all blocking, none touches a widget.

    - ``load_catalog(recipes_dir | None) -> Catalog`` (contracts §1; raises CatalogError)
    - ``detect() -> Inventory`` (never raises, contracts §4)
    - ``match_profiles(inventory, profiles) -> [Candidate]`` ranked best first
    - ``make_selection(mapping) -> Selection``; ``options(catalog, selection, detected_profile=,
      host=) -> Options`` (node facts applied, catalog.planner.options_for);
      ``synthesize(catalog, selection) -> LaunchPlan`` (raises SelectionError);
      ``plan(catalog, selection, host, detected_profile=) -> Planned`` (catalog.planner, the one
      entry point ``vllm-wizard plan`` uses too);
      ``plan_to_json(plan) -> dict`` (docs/plan-file.md §3)
    - ``custom_recipe(catalog, id_or_path) -> (catalog', hf_id)``: the catalog with the recipe derived
      from a custom model's config.json added, and the id to select (raises SelectionError naming
      every place tried)
    - ``launcher``: a :class:`LauncherPort`, or ``None`` where launching is unavailable
    - ``extras``: what loading learnt on the way (``source``: the CatalogSource used)
    """

    load_catalog: Callable[[Path | None], Any]
    detect: Callable[[], Any]
    match_profiles: Callable[[Any, Any], list]
    make_selection: Callable[[dict], Any]
    options: Callable[[Any, Any], Any]
    synthesize: Callable[[Any, Any], Any]
    plan_to_json: Callable[[Any], dict]
    plan: Callable[..., Any] | None = None
    """``plan(catalog, selection, host, detected_profile=…) -> Planned`` (catalog.planner); None
    falls back to ``synthesize`` (test fakes)."""
    custom_recipe: Callable[[Any, str], tuple[Any, str]] | None = None
    launcher: LauncherPort | None = None
    download_model: Callable[[str], Any] | None = None
    """``download_model(hf_id) -> Path`` into the HF cache (raises DownloadError with the cause);
    None = :func:`vllm_deploy_wizard.workflows.model_download.download_model` (the model step's ctrl+d)."""
    bench: Any = None
    """The benchmark functions (``target_from_run``, ``run_sweep``, ``list_sweeps``, ``runs_root``);
    None = :mod:`vllm_deploy_wizard.launcher.bench` (tui/screen_bench.py)."""
    extras: dict[str, Any] = field(default_factory=dict)


class DeferredLauncher:
    """The real :class:`LauncherPort` (:class:`vllm_deploy_wizard.tui.launch_port.RealLauncher`),
    imported and built on first use: the wizard needs no launcher until the first look for live runs,
    which it starts only once the first screen is usable (``app.on_mount``).

    Every attribute read or write goes to the real launcher (``facts``, ``last_warnings``, the
    optional ``stale_runs`` / ``stop_stale``); the first one imports ``vllm_deploy_wizard.launcher``
    (thread-safe: the app's workers may race for it). An import failure raises there, as
    :class:`ImportError`.
    """

    def __init__(self) -> None:
        object.__setattr__(self, "_lock", threading.Lock())
        object.__setattr__(self, "_real", None)

    def _target(self) -> Any:
        with self._lock:
            if self._real is None:
                from vllm_deploy_wizard.tui.launch_port import RealLauncher

                object.__setattr__(self, "_real", RealLauncher())
            return self._real

    def preflight(self, plan_file: Path, values: dict[str, str], node: str | None = None) -> list[str]:
        """:meth:`RealLauncher.preflight`: every problem that would stop the launch (empty = go)."""
        return self._target().preflight(plan_file, values, node)

    def start(self, plan_file: Path, values: dict[str, str], node: str | None = None) -> str:
        """:meth:`RealLauncher.start`: the run id; raises LaunchError listing every problem."""
        return self._target().start(plan_file, values, node)

    def live_runs(self) -> list[str]:
        """:meth:`RealLauncher.live_runs`: ids of runs whose supervisor is alive, newest first."""
        return self._target().live_runs()

    def client(self, run_id: str) -> Any:
        """:meth:`RealLauncher.client`: a client attached to ``run_id``."""
        return self._target().client(run_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._target(), name, value)


def real_services() -> Services:
    """:class:`Services` wired to the real cores (imported here, lazily — call from a worker).

    The launcher is optional (``None`` when the ``vllm_deploy_wizard.launcher`` package is not
    installed): the review screen then offers exports only. It is a :class:`DeferredLauncher`, so
    building the services does not import the launcher (~70 ms of CPU that would otherwise delay the
    first usable screen, issue #21).
    """
    from vllm_deploy_wizard import detect as det_mod

    extras: dict[str, Any] = {}

    def load(recipes: Path | None):
        # the same source rules as `plan`: --recipes > remembered recipes_dir > bundled
        from vllm_deploy_wizard.catalog.sources import resolve_source

        source = resolve_source(recipes)
        extras["source"] = source
        from vllm_deploy_wizard.catalog.loader import load_for_source

        return load_for_source(source)

    def custom(catalog, ident: str):
        from vllm_deploy_wizard.catalog.custom import resolve_model

        recipe = resolve_model(catalog, ident)
        return catalog.with_recipe(recipe), recipe.hf_id

    def make_selection(values: dict):
        from vllm_deploy_wizard.catalog.selection import Selection

        clean = {k: v for k, v in values.items() if v is not None}
        return Selection(**clean)

    launcher: LauncherPort | None = None
    if importlib.util.find_spec("vllm_deploy_wizard.launcher") is not None:  # None: not built on this checkout
        launcher = DeferredLauncher()

    def missing(name: str, module: str):
        def call(*_a, **_k):
            raise RuntimeError(f"{module}.{name} is not available in this build")

        return call

    return Services(
        load_catalog=load,
        detect=getattr(det_mod, "detect", None) or missing("detect", "vllm_deploy_wizard.detect"),
        match_profiles=getattr(det_mod, "match_profiles", None) or (lambda inv, profiles: []),
        make_selection=make_selection,
        options=_planner_options,
        plan=_planner_plan,
        synthesize=_synthesize,
        plan_to_json=_plan_to_json,
        custom_recipe=custom,
        launcher=launcher,
        extras=extras,
    )


def _synthesize(catalog, selection):
    """:func:`vllm_deploy_wizard.catalog.synthesis.synthesize` (imported on first use)."""
    from vllm_deploy_wizard.catalog.synthesis import synthesize

    return synthesize(catalog, selection)


def _plan_to_json(plan) -> dict:
    """:func:`vllm_deploy_wizard.catalog.plan.plan_to_json` (imported on first use)."""
    from vllm_deploy_wizard.catalog.plan import plan_to_json

    return plan_to_json(plan)


def _planner_options(catalog, selection, detected_profile=None, host=None):
    """The rows with node facts applied (:func:`vllm_deploy_wizard.catalog.planner.options_for`)."""
    from vllm_deploy_wizard.catalog.planner import options_for

    return options_for(catalog, selection, detected_profile=detected_profile, host=host)


def _planner_plan(catalog, selection, host=None, detected_profile=None):
    """The wizard's plan: :func:`vllm_deploy_wizard.catalog.planner.plan_selection`, not strict (the
    rows already disable what can't be picked; the plan shows the warnings of anything else)."""
    from vllm_deploy_wizard.catalog.planner import plan_selection

    return plan_selection(catalog, selection, host, detected_profile=detected_profile, strict=False)
