"""The tests' one poll helper (tests/polling.py): it returns as soon as the condition holds, and
past the deadline fails naming what it waited for."""

from __future__ import annotations

import time

import pytest
from polling import wait_until, wait_until_async


def _true_after(n: int):
    calls = [0]

    def condition() -> bool:
        calls[0] += 1
        return calls[0] > n

    return condition, calls


def test_wait_until_returns_once_the_condition_holds():
    condition, calls = _true_after(3)
    took = wait_until(condition, 5, "the fourth call", interval=0.001)
    assert calls[0] == 4 and 0 <= took < 5


def test_wait_until_fails_at_the_deadline_naming_what_and_the_detail():
    t0 = time.monotonic()
    with pytest.raises(AssertionError, match=r"timed out after 0.2 s waiting for the door to open; door: shut"):
        wait_until(lambda: False, 0.2, "the door to open", interval=0.05, detail=lambda: "door: shut")
    assert 0.2 <= time.monotonic() - t0 < 2


async def test_wait_until_async_awaits_coroutine_conditions():
    condition, calls = _true_after(2)

    async def asked() -> bool:
        return condition()

    await wait_until_async(asked, 5, "the third answer", interval=0.001)
    assert calls[0] == 3
    with pytest.raises(AssertionError, match="waiting for nothing"):
        await wait_until_async(lambda: None, 0.05, "nothing")
