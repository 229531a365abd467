"""What the wizard offers at start when runs are already on this node: stop the leftovers of a run whose
supervisor died (one question per stale run, first), then attach to a live run (:class:`AttachPrompt`).

The app's worker finds the runs through the launcher seam (``live_runs``, ``stale_runs``) and hands them
here on the UI thread; stopping a stale run is the app's ``_stop_stale`` worker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

if TYPE_CHECKING:
    from vllm_deploy_wizard.tui.app import WizardApp


class AttachPrompt(ModalScreen[str | None]):
    """"A run is live — attach?" Lists live runs; escape / "new plan" dismisses with None."""

    BINDINGS = [Binding("escape", "dismiss_none", "New plan")]

    def __init__(self, runs: list[str]) -> None:
        super().__init__()
        self.runs = runs

    def compose(self) -> ComposeResult:
        with Vertical(id="attach-box"):
            yield Label("A vllm-wizard run is live on this node. Attach to it?")
            yield OptionList(*[Option(f"Attach to {r}", id=r) for r in self.runs],
                             Option("Start a new plan", id="__new__"), id="attach-list")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(None if event.option.id == "__new__" else event.option.id)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


def keeps_running_text(run_id: str) -> str:
    """What to tell a person leaving the monitor of a live run ``run_id`` (detach, quit)."""
    return (f"run {run_id} keeps running; re-attach with `vllm-wizard attach {run_id}` or `vllm-wizard`, "
            f"stop with `vllm-wizard stop {run_id}`")


def stale_question(stale: Any) -> str:
    """"A previous run <id> lost its supervisor; N processes still run (ports …). Stop them?" """
    n = len(stale.pids)
    ports = f" (ports {', '.join(map(str, stale.ports))})" if stale.ports else ""
    return (f"A previous run {stale.run_id} lost its supervisor; {n} process{'es' if n != 1 else ''} "
            f"still run{'s' if n == 1 else ''}{ports}. Stop them?")


def offer_runs(app: WizardApp, stale: list, runs: list[str]) -> None:
    """Ask about each ``stale`` run in turn, then offer to attach to one of ``runs`` (UI thread)."""
    if stale:
        offer_stop_stale(app, stale[0], lambda: offer_runs(app, stale[1:], runs))
    elif runs:
        offer_attach(app, runs)


def offer_stop_stale(app: WizardApp, stale: Any, then: Callable[[], None]) -> None:
    """Ask whether to stop ``stale``'s leftover processes; ``then`` runs after the answer."""
    from vllm_deploy_wizard.tui.prompts import ConfirmPrompt

    def answer(yes: bool | None) -> None:
        if yes:
            app.notify(f"Stopping the leftovers of run {stale.run_id}…")
            app._stop_stale(stale.run_id)
        else:
            app.notify(f"Left run {stale.run_id} alone; `vllm-wizard stop {stale.run_id}` stops it later.",
                       timeout=10)
        then()

    app.push_screen(ConfirmPrompt(stale_question(stale), yes="stop them", no="ignore"), answer)


def offer_attach(app: WizardApp, runs: list[str]) -> None:
    """Offer to attach to one of the live ``runs`` (the monitor opens on a pick)."""
    app.live_runs = runs

    def answer(run_id: str | None) -> None:
        if run_id:
            app.open_monitor(run_id)

    app.push_screen(AttachPrompt(runs), answer)
