"""Waiting for a condition in tests: poll it to a deadline, never sleep a fixed time before asserting.

:func:`wait_until` (blocking) and :func:`wait_until_async` (inside a running event loop) are the one
poll helper of every test outside the TUI pilot (the TUI tests use ``tui_steps.until``, which lets
the app run between checks). Both raise :class:`AssertionError` naming what was waited for.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable


def _timed_out(timeout: float, what: str, detail: Callable[[], str] | None) -> AssertionError:
    extra = ""
    if detail is not None:
        try:
            extra = f"; {detail()}"
        except Exception as exc:  # noqa: BLE001 - the detail must never hide the timeout
            extra = f"; (no detail: {exc!r})"
    return AssertionError(f"timed out after {timeout:g} s waiting for {what}{extra}")


def wait_until(condition: Callable[[], object], timeout: float, what: str, interval: float = 0.02,
               detail: Callable[[], str] | None = None) -> float:
    """Call ``condition()`` every ``interval`` s until it is truthy; the seconds that took.

    Raises :class:`AssertionError` ``timed out after {timeout} s waiting for {what}`` (plus
    ``detail()`` when given, e.g. the states of the runs) once ``timeout`` s passed with it false.
    The condition is checked once more at the deadline, so a slow machine never fails a
    condition that came true during the last interval.
    """
    t0 = time.monotonic()
    deadline = t0 + timeout
    while not condition():
        if time.monotonic() >= deadline:
            raise _timed_out(timeout, what, detail)
        time.sleep(min(interval, max(0.0, deadline - time.monotonic())))
    return time.monotonic() - t0


async def wait_until_async(condition: Callable[[], object], timeout: float, what: str, interval: float = 0.02,
                           detail: Callable[[], str] | None = None) -> float:
    """:func:`wait_until` for a coroutine: the event loop runs between checks (``asyncio.sleep``).
    ``condition`` may be a coroutine function (``async def``, e.g. asking a run's control socket):
    its result is awaited."""
    async def check() -> object:
        value = condition()
        return (await value) if inspect.isawaitable(value) else value

    t0 = time.monotonic()
    deadline = t0 + timeout
    while not await check():
        if time.monotonic() >= deadline:
            raise _timed_out(timeout, what, detail)
        await asyncio.sleep(min(interval, max(0.0, deadline - time.monotonic())))
    return time.monotonic() - t0
