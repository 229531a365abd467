"""A Footer that rebuilds its keys only when the keys it shows change.

Textual's ``Footer`` recomposes (unmounts and mounts one widget per key, restyles them, lays out
the screen) on every bindings signal, and every focus move sends one, also when the keys it shows
do not change. In the monitor, ``/`` moves the focus to the log search box and ``escape`` back to
the process table; the rebuilds were most of the CPU those keys took (``python
bench/bench_monitor_flood.py``, search box). :class:`SteadyFooter` compares what the footer would
show (:func:`shown_keys`) and skips the rebuild when nothing differs.

While the log search box is open it covers the footer (and the box, focused, takes the letter keys,
so the footer's keys would change): the monitor holds the footer then (:meth:`~SteadyFooter.hold`), and
:meth:`~SteadyFooter.release` lets the signal of the focus moving back compare again — usually nothing
to rebuild.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


def shown_keys(screen: Screen) -> tuple:
    """What a footer on ``screen`` shows: per binding with ``show``, its key, description, action,
    whether it is enabled and its tooltip (and the same for the command palette's binding)."""
    active = screen.active_bindings
    shown = tuple((b.key, b.key_display, b.description, b.action, b.group, enabled, tooltip)
                  for _, b, enabled, tooltip in active.values() if b.show)
    palette = active.get(screen.app.COMMAND_PALETTE_BINDING)
    return shown, None if palette is None else (palette[1].key, palette[1].description, palette[2], palette[3])


class SteadyFooter(Footer):
    """``Footer`` that recomposes only when :func:`shown_keys` changes (see the module docstring)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._shown: tuple | None = None
        self.held = False

    def hold(self) -> None:
        """Ignore bindings signals until :meth:`release` (something covers the footer)."""
        self.held = True

    def release(self) -> None:
        """Stop ignoring bindings signals; the next one (the focus moving back, which the caller
        starts) compares the keys shown then with those before :meth:`hold`."""
        self.held = False

    def bindings_changed(self, screen: Screen) -> None:
        """Recompose as ``Footer`` does, unless the keys shown are the ones already there or the
        footer is held."""
        if self.held:
            return
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            shown = shown_keys(screen)
            if self._bindings_ready and shown == self._shown:
                return
            self._shown = shown
        super().bindings_changed(screen)
