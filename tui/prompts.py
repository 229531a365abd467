"""The wizard's small modal dialogs: a yes/no question and the F1 help popup.

Decisions:
- **Escape closes what is open.** Both dialogs are modal screens, so escape always closes the popup in
  front and never reaches the screen underneath (on the first screen it would otherwise quit the app
  while people press it to close the help).
- **Confirm before acting on a live server.** :class:`ConfirmPrompt` answers ``True`` on ``y``/``enter``
  and ``False`` on ``n``/``escape``; the question names what happens ("Stop the run (vllm, router)?").
- **The help wraps.** :class:`HelpPrompt` is at most the screen's width (minus a margin) and scrolls,
  so at 80×24 nothing is cut on the right (the toast it replaces was clipped).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static


class ConfirmPrompt(ModalScreen[bool]):
    """``question`` with ``y``/``enter`` (dismiss ``True``) and ``n``/``escape`` (dismiss ``False``).

    ``yes``/``no`` are the words shown for the two answers (e.g. "stop" / "ignore")."""

    DEFAULT_CSS = """
    ConfirmPrompt { align: center middle; }
    ConfirmPrompt #confirm-box { width: 64; max-width: 100%; height: auto; border: thick $warning;
                                 padding: 1 2; background: $surface; }
    ConfirmPrompt #confirm-question { width: 100%; }
    ConfirmPrompt #confirm-keys { width: 100%; margin: 1 0 0 0; color: $text-muted; }
    """
    BINDINGS = [
        Binding("y,enter", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, question: str, yes: str = "yes", no: str = "no") -> None:
        super().__init__()
        self.question = question
        self.yes = yes
        self.no = no

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Label(self.question, id="confirm-question")
            yield Label(f"y / enter: {self.yes}    n / escape: {self.no}", id="confirm-keys")

    def action_answer(self, yes: bool) -> None:
        """Close with the answer."""
        self.dismiss(bool(yes))


class HelpPrompt(ModalScreen[None]):
    """The F1 help of a screen: ``title`` and ``text`` (plain, wrapped to the popup's width);
    escape, F1 or q closes it."""

    DEFAULT_CSS = """
    HelpPrompt { align: center middle; }
    HelpPrompt #help-box { width: 84; max-width: 100%; height: auto; max-height: 100%;
                           border: thick $accent; padding: 0 1; background: $surface; }
    HelpPrompt #help-text { width: 100%; height: auto; }
    """
    BINDINGS = [Binding("escape,f1,q", "close", "Close")]

    def __init__(self, title: str, text: str) -> None:
        super().__init__()
        self.title_text = title
        self.text = text

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box") as box:
            box.border_title = self.title_text
            box.border_subtitle = "escape closes"
            yield Static(self.text, id="help-text", markup=False)

    def action_close(self) -> None:
        """Close the help."""
        self.dismiss(None)
