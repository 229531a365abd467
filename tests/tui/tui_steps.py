"""Pilot steps shared by the wizard tests: walk start → review the way a person does."""

from __future__ import annotations

import time

from textual.widgets import DataTable, Input, OptionList

from vllm_deploy_wizard.tui.dom_ids import dom_id


async def settle(pilot, rounds: int = 3) -> None:
    """Let workers and posted messages run."""
    for _ in range(rounds):
        await pilot.pause()


async def pick_hardware(pilot, profile_id: str) -> None:
    """Hardware screen: highlight ``profile_id`` in the profile list and press enter."""
    await settle(pilot)
    plist = pilot.app.screen.query_one("#profiles", OptionList)
    plist.focus()
    plist.highlighted = plist.get_option_index(profile_id)
    await pilot.press("enter")
    await settle(pilot)


async def pick_model(pilot, hf_id: str) -> None:
    """Model screen: type the HF id in the search box, enter (one match: enter picks it)."""
    search = pilot.app.screen.query_one("#search", Input)
    search.focus()
    search.value = hf_id
    await settle(pilot)
    table = pilot.app.screen.query_one("#recipes", DataTable)
    assert table.row_count == 1, f"search {hf_id!r} should leave one row, got {table.row_count}"
    await pilot.press("enter")
    await settle(pilot)


async def pick(pilot, axis_key: str, choice_id: str) -> None:
    """Configure screen: highlight ``choice_id`` on row ``axis_key`` and press enter."""
    row = pilot.app.screen.query_one(f"#{dom_id('axis', axis_key)}", OptionList)
    row.focus()
    row.highlighted = row.get_option_index(choice_id)
    await pilot.press("enter")
    await settle(pilot)


async def walk(pilot, hardware: str, model: str, picks: list[tuple[str, str]]) -> None:
    """Hardware → model → the configure ``picks`` in order → ctrl+n to review."""
    await pick_hardware(pilot, hardware)
    await pick_model(pilot, model)
    for axis_key, choice_id in picks:
        await pick(pilot, axis_key, choice_id)
    await pilot.press("ctrl+n")
    await settle(pilot)


async def until(pilot, condition, timeout: float, what: str, interval: float = 0.05, detail=None) -> float:
    """Let the app run (``pilot.pause(interval)``) until ``condition()`` is truthy; the seconds it took.

    The one wait of the TUI tests instead of fixed pauses: workers, posted messages and timers run
    between checks. Raises :class:`AssertionError` ``timed out after {timeout} s waiting for {what}``
    (plus ``detail()`` when given, e.g. what the screen shows instead). The default detail names the
    screen the app is on.
    """
    t0 = time.monotonic()
    deadline = t0 + timeout
    while not condition():
        if time.monotonic() >= deadline:
            extra = detail() if detail is not None else f"the app shows {type(pilot.app.screen).__name__}"
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}; {extra}")
        await pilot.pause(interval)
    return time.monotonic() - t0


def monitor_caught_up(screen) -> bool:
    """True when a monitor screen has every event of its (canned, ``fakes.FakeClient``) run folded in
    and painted: the client replayed them all (or the stream ended) and no UI batch is pending."""
    model = getattr(screen, "model", None)
    if model is None:
        return False
    done = getattr(screen, "ended", False) or getattr(getattr(screen, "client", None), "replayed", False)
    return bool(done) and not model.changed and not model.pending


def detected_app(catalog, inventory, profile: str, quality: str = "exact"):
    """The real app on ``catalog`` whose detection finds ``inventory`` and matches it to ``profile``
    (the real services otherwise; no launcher)."""
    from fakes import FakeCandidate

    from vllm_deploy_wizard.tui.app import make_app
    from vllm_deploy_wizard.tui.services import real_services

    services = real_services()
    services.detect = lambda: inventory
    services.match_profiles = lambda inv, profiles: [FakeCandidate(profile, quality)]
    services.launcher = None
    return make_app(catalog=catalog, inventory=inventory, services=services, stats_sampler=None)
