"""The wizard's terminal driver: Escape and key sequences read from a real pty, and the escape timeout."""

from __future__ import annotations

import asyncio
import os
import pty
import threading
import time
import tty

import pytest
from textual import constants, events
from textual._xterm_parser import XTermParser

from vllm_deploy_wizard.tui.app import make_app
from vllm_deploy_wizard.tui.key_driver import (
    DEFAULT_ESCAPE_DELAY_MS,
    IDLE_SELECT_S,
    PromptEscapeDriver,
    apply_escape_delay,
    select_timeout,
)


@pytest.fixture
def escape_delay():
    """Restore Textual's escape timeout after the test."""
    before = constants.ESCAPE_DELAY
    yield
    constants.ESCAPE_DELAY = before  # type: ignore[misc]


def test_the_wizard_default_applies_only_without_escdelay(escape_delay) -> None:
    constants.ESCAPE_DELAY = 0.1  # type: ignore[misc]
    assert apply_escape_delay({"ESCDELAY": "100"}) == 0.1  # the person's setting stands
    assert apply_escape_delay({}) == DEFAULT_ESCAPE_DELAY_MS / 1000


def test_select_waits_only_until_a_lone_escape_is_due(escape_delay) -> None:
    constants.ESCAPE_DELAY = 0.025  # type: ignore[misc]
    parser = XTermParser()
    assert select_timeout(parser) == IDLE_SELECT_S  # nothing pending: Textual's own wait
    list(parser.feed("\x1b"))
    wait = select_timeout(parser)
    assert 0 < wait <= 0.025
    assert select_timeout(parser, now=time.perf_counter() + 1) == 0.0  # overdue: never negative
    list(parser.feed("[B"))  # the rest of a Down key: nothing pending again
    assert select_timeout(parser) == IDLE_SELECT_S


async def test_the_driver_reads_escape_and_sequences_from_a_terminal(escape_delay) -> None:
    """A lone ESC is the Escape key; ESC [ B in one write is Down, not Escape then letters."""
    constants.ESCAPE_DELAY = 0.025  # type: ignore[misc]
    master, slave = pty.openpty()
    tty.setraw(slave)  # as the driver's application mode sets it: bytes as typed, no line editing
    driver = PromptEscapeDriver(make_app(stats_sampler=None), mouse=False)
    driver.fileno = slave
    keys: list[str] = []
    got = threading.Event()

    def collect(message) -> None:
        if isinstance(message, events.Key):
            keys.append(message.key)
            if len(keys) == 2:
                got.set()

    driver.process_message = collect  # type: ignore[method-assign]
    thread = threading.Thread(target=driver.run_input_thread, daemon=True)
    thread.start()
    try:
        os.write(master, b"\x1b")
        await asyncio.sleep(0.2)
        os.write(master, b"\x1b[B")
        assert await asyncio.to_thread(got.wait, 5), keys
        assert keys == ["escape", "down"]
    finally:
        driver.exit_event.set()
        thread.join(5)
        os.close(master)
        os.close(slave)


def test_the_wizard_runs_on_the_driver_unless_textual_driver_is_set(monkeypatch, escape_delay) -> None:
    monkeypatch.setattr(constants, "DRIVER", None)
    assert make_app(stats_sampler=None).driver_class is PromptEscapeDriver
    monkeypatch.setattr(constants, "DRIVER", "textual.drivers.headless_driver:HeadlessDriver")
    assert make_app(stats_sampler=None).driver_class.__name__ == "HeadlessDriver"
