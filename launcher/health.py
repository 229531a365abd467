"""HTTP probes (readiness and liveness) with httpx.

One :class:`HttpProber` per supervisor shares a connection pool; every probe is a single ``GET``
with its own timeout and never raises — a refused connection or timeout is a failed probe with a
reason. Polls of one process are sequential (the caller awaits each probe, then sleeps the rest
of the interval), so they never overlap and a slow poll stretches the cycle.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True)
class HealthResult:
    """Outcome of one probe: ``ok``, HTTP ``status`` (None if no answer), ``detail``, ``elapsed_s``, ``body`` (text, when asked)."""

    ok: bool
    status: int | None
    detail: str
    elapsed_s: float
    body: str | None = None


class HttpProber:
    """Async HTTP GET prober; call :meth:`aclose` when done. Connection reuse keeps polls cheap."""

    def __init__(self) -> None:
        import httpx

        self._httpx = httpx
        self._client = httpx.AsyncClient(trust_env=False)

    async def __call__(self, url: str, expect_status: int = 200, timeout: float = 2.0, body: bool = False,
                       post: dict | None = None) -> HealthResult:
        """GET ``url`` (or POST the JSON ``post``); ok when the status equals ``expect_status``.
        ``body`` keeps the response text."""
        t0 = time.monotonic()
        try:
            if post is not None:
                r = await self._client.post(url, json=post, timeout=timeout)
            else:
                r = await self._client.get(url, timeout=timeout)
        except self._httpx.HTTPError as exc:
            return HealthResult(False, None, f"{type(exc).__name__}: {exc}"[:200], time.monotonic() - t0)
        ok = r.status_code == expect_status
        return HealthResult(ok, r.status_code, f"HTTP {r.status_code}", time.monotonic() - t0, r.text if body else None)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()
