"""The base of the wizard's screens: ``self.app`` typed as the wizard app.

Textual types ``Screen.app`` as ``App[Any]``, so every ``self.app.selection`` / ``self.app.catalog``
of a screen would be an attribute the type checker can't see. Screens derive from
:class:`WizardScreen` instead of ``Screen``; its ``app`` is the same object, typed as
:class:`~vllm_deploy_wizard.tui.app.WizardApp`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from textual.screen import Screen

if TYPE_CHECKING:
    from vllm_deploy_wizard.tui.app import WizardApp


class WizardScreen(Screen[Any]):
    """A screen of the wizard; :attr:`app` is the running :class:`WizardApp`."""

    @property
    def app(self) -> WizardApp:  # type: ignore[override]  # narrows Textual's App[Any] to the wizard app
        """The running wizard app (raises textual's NoActiveAppError outside one, like ``Screen.app``)."""
        return cast("WizardApp", super().app)
