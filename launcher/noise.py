"""Which process output lines are noise a person watching a run does not want to see.

vLLM's API server (uvicorn) writes an access-log line for every request, and the launcher itself
makes one every few seconds per process: the health probe (``GET /health``, ``/healthcheck``
for LMCache) and, for vLLM, the ``/metrics`` scrape (spec ``Probe`` cadence). Once a server is
READY that is a line every ~5 s that buries everything else, so the viewers —
the TUI log pane, ``attach`` and ``launch --foreground`` — hide those lines. They stay in the
run's log files and in what the supervisor sends: hiding is the viewer's choice (``attach
--all-lines`` shows them). One definition here so the TUI and the CLI hide the same lines.

Only *successful* polls are noise: a failing health check (``503``) is exactly what a person
wants to see, and so is any request from a real client (``POST /v1/completions``).
"""

from __future__ import annotations

import re

#: A uvicorn access-log line for a successful ``GET`` of a health or metrics endpoint, e.g.
#: ``INFO:     127.0.0.1:51234 - "GET /health HTTP/1.1" 200 OK``.
POLL_NOISE = re.compile(r'"GET /(?:health|metrics|healthcheck) HTTP/[\d.]+" 200')


def is_poll_noise(line: str) -> bool:
    """True for the access-log line of a successful health/metrics poll (:data:`POLL_NOISE`)."""
    return POLL_NOISE.search(line) is not None
