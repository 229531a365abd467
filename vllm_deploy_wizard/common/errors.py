"""Errors shared by every package.

Every error the user can cause derives from :class:`WizardError`; the CLI prints its message
(never a traceback) and exits with :attr:`WizardError.exit_code`. Messages name the file, field or
flag at fault and say what would be valid.
"""

from __future__ import annotations


class WizardError(Exception):
    """Base class for errors a person can fix. ``exit_code`` is the CLI exit status (default 2)."""

    exit_code: int = 2


class CatalogError(WizardError):
    """A catalog file (taxonomy, strategy, kv_store, recipe) is malformed.

    ``problems`` holds every problem found, each as ``"file:line: message"``.
    """

    def __init__(self, problems: list[str] | str):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


class SelectionError(WizardError):
    """A selection (flags or ``--selection`` file) names something that does not exist or can't be planned."""


class DetectionError(WizardError):
    """A detection input (``--replay`` file) is unreadable. Probes themselves never raise."""


class LaunchError(WizardError):
    """A plan cannot be launched (preflight failed, run not found, supervisor unreachable)."""


def not_utf8(path: object, exc: UnicodeDecodeError, expected: str) -> str:
    """Message for an input file that is not UTF-8 text (e.g. a binary given by mistake).

    ``"{path}: is not UTF-8 text (byte 0xd0 at offset 24); expected {expected}"`` — the byte and
    its offset come from ``exc`` (offset counted from the start of the file, as ``read_text``
    decodes it whole). Shared by every reader of user files (plan, selection, detect fixture) so
    the wording is the same everywhere; each raises its own :class:`WizardError` subclass.
    """
    byte = exc.object[exc.start] if exc.start < len(exc.object) else None
    what = f"byte 0x{byte:02x} at offset {exc.start}" if isinstance(byte, int) else f"offset {exc.start}"
    return f"{path}: is not UTF-8 text ({what}); expected {expected}"
