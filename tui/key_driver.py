"""The wizard's terminal driver: a lone Escape is delivered after the escape timeout, not up to 100 ms later.

A terminal sends the Escape key as the byte ``ESC`` alone, and arrow, function and Alt keys as
sequences that start with ``ESC``; a reader can tell the two apart only by waiting a little after a
lone ``ESC`` for the rest of a sequence (curses' ``ESCDELAY``, tmux's ``escape-time``, Vim's
``ttimeoutlen``). Textual 8 waits ``ESCDELAY`` ms (default 100; ``textual.constants.ESCAPE_DELAY``),
but its Linux input thread checks that timeout only when its ``select`` returns, and it selects
with a fixed 0.1 s timeout: a lone Escape reaches the app 100–200 ms after the key, whatever
``ESCDELAY`` says (``python bench/bench_monitor_flood.py``: the minimal app's Escape took 110 ms
against 11 ms for ``/``, with ``ESCDELAY=25`` too). The monitor's ``escape`` closes the log search
box, so every search paid it.

:class:`PromptEscapeDriver` is Textual's ``LinuxDriver`` whose input thread waits in ``select`` only
until the parser's pending timeout (at most the 0.1 s Textual uses otherwise), so Escape arrives
``ESCDELAY`` after the key. :func:`apply_escape_delay` sets the wizard's default escape timeout,
:data:`DEFAULT_ESCAPE_DELAY_MS`, when the person has not set ``ESCDELAY``; the trade-off (docs/supervision.md
§14): over a link that splits one key's bytes more than that apart, an arrow key would read as
Escape followed by letters; ``ESCDELAY=100`` (or more) restores Textual's wait.
"""

from __future__ import annotations

import os
import selectors
from codecs import getincrementaldecoder

from textual import constants
from textual._parser import ParseError
from textual._time import get_time
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

#: The wizard's escape timeout (ms) when ``ESCDELAY`` is not set: what ncurses programs such as
#: newsbeuter/newsboat default to, and well above the gap between the bytes of one key on a local
#: terminal or ssh (they arrive in one write).
DEFAULT_ESCAPE_DELAY_MS = 25
#: Longest ``select`` wait of the input thread (s) when no escape timeout is pending (Textual's).
IDLE_SELECT_S = 0.1


def apply_escape_delay(environ: os._Environ[str] | dict[str, str] = os.environ) -> float:
    """Set Textual's escape timeout to :data:`DEFAULT_ESCAPE_DELAY_MS` unless ``ESCDELAY`` is in
    ``environ`` (then Textual's own reading of it stands); returns the timeout in seconds."""
    if "ESCDELAY" not in environ:
        constants.ESCAPE_DELAY = DEFAULT_ESCAPE_DELAY_MS / 1000.0  # type: ignore[misc]  # Final in Textual
    return float(constants.ESCAPE_DELAY)


def select_timeout(parser: XTermParser, now: float | None = None) -> float:
    """Seconds the input thread may wait for input: until ``parser``'s pending timeout (a lone
    ``ESC`` waiting to be told from a sequence), else :data:`IDLE_SELECT_S`; never negative."""
    due = getattr(parser, "_timeout_time", None)
    if due is None:
        return IDLE_SELECT_S
    return max(0.0, min(IDLE_SELECT_S, due - (get_time() if now is None else now)))


class PromptEscapeDriver(LinuxDriver):
    """Textual's Linux driver whose input thread honours the escape timeout (module docstring)."""

    def run_input_thread(self) -> None:
        """Textual 8.2's ``LinuxDriver.run_input_thread`` with ``select`` bounded by
        :func:`select_timeout` instead of a fixed 0.1 s (the rest as Textual has it)."""
        selector = selectors.SelectSelector()
        selector.register(self.fileno, selectors.EVENT_READ)
        fileno = self.fileno
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode

        def process(selector_events: list, final: bool = False) -> None:
            for index, (_key, mask) in enumerate(selector_events):
                if mask & selectors.EVENT_READ:
                    last = index == len(selector_events) - 1
                    data = decode(os.read(fileno, 1024 * 4), final=final and last)
                    if not data:  # stdin is piped
                        break
                    for event in parser.feed(data):
                        self.process_message(event)
            for event in parser.tick():
                self.process_message(event)

        try:
            while not self.exit_event.is_set():
                process(selector.select(select_timeout(parser)))
            selector.unregister(self.fileno)
            process(selector.select(IDLE_SELECT_S), final=True)
        finally:
            selector.close()
            try:
                for _event in parser.feed(""):
                    pass
            except (EOFError, ParseError):
                pass
