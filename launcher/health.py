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
    """Outcome of one probe: ``ok``, HTTP ``status`` (None if no answer), ``detail``, ``elapsed_s``,
    ``body`` (text, when asked)."""

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
                       post: dict | None = None, headers: dict[str, str] | None = None) -> HealthResult:
        """GET ``url`` (or POST the JSON ``post``); ok when the status equals ``expect_status``.
        ``body`` keeps the response text; ``headers`` are sent along (an API key)."""
        t0 = time.monotonic()
        try:
            if post is not None:
                r = await self._client.post(url, json=post, timeout=timeout, headers=headers)
            else:
                r = await self._client.get(url, timeout=timeout, headers=headers)
        except self._httpx.HTTPError as exc:
            return HealthResult(False, None, f"{type(exc).__name__}: {exc}"[:200], time.monotonic() - t0)
        ok = r.status_code == expect_status
        return HealthResult(ok, r.status_code, f"HTTP {r.status_code}", time.monotonic() - t0, r.text if body else None)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()


class EngineWatch:
    """The liveness bookkeeping of one READY process (docs/supervision.md §10) for a
    :class:`~vllm_deploy_wizard.launcher.spec.Liveness` ``lv``; times are the supervisor's clock (s).

    :meth:`due` says whether the next poll is a liveness check (every poll when ``lv.interval_s``
    is None, else once ``interval_s`` passed since the last check began, the first one
    ``interval_s`` after READY). :meth:`metrics` takes each ``/metrics`` snapshot and answers a
    detail when requests ran or waited while the token counters stayed frozen for ``lv.stall_s``.
    :meth:`checked` takes a check's result and answers a detail once ``failure_threshold`` checks in
    a row failed — a check that got no answer while the token counters moved since the previous
    snapshot is a busy engine and does not count.
    """

    def __init__(self, lv, ready_at: float):
        self.lv = lv
        self.last_check = ready_at
        self.failed = 0
        self._tokens: list[tuple[float, float | None]] = []  # (time, prompt+generation tokens)
        self._frozen_since: float | None = None

    def due(self, now: float) -> bool:
        """True when the poll at ``now`` is a liveness check (and records it as begun)."""
        if self.lv.interval_s is None or now - self.last_check >= self.lv.interval_s:
            self.last_check = now
            return True
        return False

    def counters_moved(self) -> bool:
        """True when the last two snapshots show the token counters grew."""
        if len(self._tokens) < 2:
            return False
        (_, a), (_, b) = self._tokens[-2:]
        return a is not None and b is not None and b > a

    def metrics(self, snap, now: float) -> str | None:
        """Feed one :class:`~vllm_deploy_wizard.launcher.metrics.MetricsSnapshot` taken at ``now``;
        a detail when the engine looks hung (``stall_s`` set), else None."""
        from vllm_deploy_wizard.launcher.vllm import REQUEST_GAUGES, TOKEN_COUNTERS

        counts = [getattr(snap, f) for f in TOKEN_COUNTERS]
        tokens = None if any(c is None for c in counts) else sum(counts)
        prev = self._tokens[-1][1] if self._tokens else None
        self._tokens = [*self._tokens[-1:], (now, tokens)]
        pending = sum(getattr(snap, f) or 0.0 for f in REQUEST_GAUGES)
        if tokens is None or pending <= 0 or prev is None or tokens != prev:
            self._frozen_since = now if (tokens is not None and pending > 0) else None
            return None
        if self._frozen_since is None:
            self._frozen_since = now
        stalled = now - self._frozen_since
        if self.lv.stall_s is not None and stalled >= self.lv.stall_s:
            return (f"/metrics: {pending:g} requests running or waiting while the token counters stayed at "
                    f"{tokens:g} for {stalled:.0f} s")
        return None

    def checked(self, res: HealthResult) -> str | None:
        """Count one check result; a detail once ``failure_threshold`` failed in a row, else None."""
        if res.ok or (res.status is None and self.counters_moved()):
            self.failed = 0
            return None
        self.failed += 1
        if self.failed >= self.lv.failure_threshold:
            return f"{self.lv.url} failed {self.failed} checks in a row: {res.detail}"
        return None


def models_url(probe_url: str) -> str:
    """The ``GET /v1/models`` URL on the host/port of a health probe URL (vLLM 0.32.0
    ``vllm/entrypoints/openai/models/api_router.py``)."""
    from urllib.parse import urlsplit, urlunsplit

    u = urlsplit(probe_url)
    return urlunsplit((u.scheme, u.netloc, "/v1/models", "", ""))


async def models_not_listed(probe, probe_url: str, model: str, timeout: float, **auth: dict) -> str | None:
    """None when ``GET /v1/models`` next to ``probe_url`` lists ``model`` (``probe``: the supervisor's
    probe function; ``auth``: ``headers=…`` when the server needs an API key); else a sentence
    saying what it answered instead."""
    from vllm_deploy_wizard.launcher.vllm import models_listed

    url = models_url(probe_url)
    res = await probe(url, 200, timeout, body=True, **auth)
    listed, ids = models_listed(res.body or "", model) if res.ok else (False, [])
    if listed:
        return None
    seen = ("lists " + ", ".join(ids)) if ids else (res.detail if not res.ok else "lists no model")
    return f"{url} does not list {model!r} yet ({seen})"


async def wait_for_answers(probe, urls, clock, deadline: float, stopped, every_s: float = 1.0) -> list[str]:
    """Poll each of ``urls`` (``GET``, expecting 200, 2 s timeout) every ``every_s`` seconds until all
    answered, ``stopped()`` is true or ``clock()`` reaches ``deadline``; returns those that never
    answered (``[]`` = all did)."""
    import asyncio

    pending = list(urls)
    while pending and not stopped() and clock() < deadline:
        t0 = clock()
        for url in list(pending):
            if (await probe(url, 200, 2.0)).ok:
                pending.remove(url)
        if pending:
            await asyncio.sleep(max(0.0, every_s - (clock() - t0)))
    return pending
