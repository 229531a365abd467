"""What a TCP port typed by a person may be: one rule for the wizard's port edits (tui/port_edits.py)
and ``plan --arg=--port=N`` (workflows/plan_checks.py).

A port is a whole number 1–65535 written in decimal digits (blanks around it ignored); 0 (let the
kernel pick) is not accepted, since the plan must know the port to probe and to point clients at.
"""

from __future__ import annotations

#: The highest TCP port number.
MAX_PORT = 65535


def check_port(text: str) -> int:
    """``text`` as a TCP port (``" 8001 "`` → 8001); raises ``ValueError`` saying what is valid
    (``'8000x' is not a port: a whole number 1–65535``)."""
    t = str(text).strip()
    if not (t.isascii() and t.isdigit()) or not 1 <= int(t) <= MAX_PORT:
        raise ValueError(f"{text!r} is not a port: a whole number 1–{MAX_PORT}")
    return int(t)
