"""Reading log lines: vLLM's process/log prefixes (:func:`strip_prefix`), lines that only point at
another error (:data:`WRAPPER`, :func:`is_wrapper`) and the newest error-looking line
(:data:`ERROR_LINE`, :func:`last_error_line`).
"""

from __future__ import annotations

import re
from typing import Sequence


# ---------------------------------------------------------------- wrappers (never a root cause)

#: Lines that only point elsewhere: a root cause is never one of these.
WRAPPER = re.compile(
    r"See root cause above|See stack trace (?:\(?above\)?)? for (?:the )?root cause|For further information visit "
    r"https://errors\.pydantic\.dev|EngineCore failed to start|Engine core initialization failed|got fatal signal "
    r"from worker processes|The above exception was the direct cause|During handling of the above exception|"
    r"^\s*Traceback \(most recent call last\)|^\s*File \"|^\s*raise\b|validation errors? for \w+\s*$|"
    r"Error in chat completion stream generator|^\s*\^+\s*$|This might cause deadlock",
    re.I,
)
_PREFIX = re.compile(r"^(?:\s*(?:\(\w[\w-]*(?: \w+=\S+)* pid=\d+(?:, ip=[\d.]+)?\)|\[[^\]]*\]:?|[\w-]+\s+\||"
                     r"(?:ERROR|INFO|WARNING|DEBUG|CRITICAL) \d\d-\d\d [\d:]+(?: \[[^\]]+\])?|\d{4}-\d\d-\d\d[ T][\d:.,]+"
                     r"(?: \| \w+ \| \w+ \|)?(?: \[\w+\] \(\w+\))?)\s*)+")


def strip_prefix(line: str) -> str:
    """``line`` without vLLM's process/log prefixes (``(EngineCore_DP0 pid=1) ERROR 11-30 … [core.py:9]``)."""
    return _PREFIX.sub("", line).strip()


def is_wrapper(line: str | None) -> bool:
    """True for a line that only points at another error (:data:`WRAPPER`) or a traceback frame."""
    return line is not None and bool(WRAPPER.search(strip_prefix(line)))

#: A line that looks like an error: a Python exception line (``ValueError: …``, ``…Error``,
#: ``…Exception``), ``Traceback``, or a program's ``error:``/``ERROR``/``FATAL`` line.
ERROR_LINE = re.compile(r"\w*(?:Error|Exception)\b|^Traceback|\berror\b|\bERROR\b|\bFATAL\b|\bfatal\b", re.I)


def last_error_line(lines: Sequence[str]) -> str | None:
    """The newest line of ``lines`` that looks like an error (:data:`ERROR_LINE`) and is no wrapper
    (:func:`is_wrapper`), supervisor notes (``[wizard] …``) excluded; None when there is none."""
    for line in reversed(lines):
        text = line.strip()
        if text and not text.startswith("[wizard]") and ERROR_LINE.search(text) and not is_wrapper(text):
            return text[:500]
    return None
