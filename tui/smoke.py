"""The monitor's smoke request: one short completion to the served endpoint, with latency and text.

The endpoint comes from the plan: the router when the plan has one (it is what clients talk to;
its health URL, else its ``--host``/``--port`` — placeholders such as ``$ROUTER_HOST`` are filled
by the monitor with the values given at launch), else the first serve/head/decode process with a
health URL, whose base URL is that URL without ``/health``; the model name is ``--served-model-name`` if given, else the ``vllm serve`` positional model (plan-json §3.4).
Uses ``/v1/completions`` (works for base and chat models alike) with ``max_tokens`` 16.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from vllm_wizard.launcher.spec import last_flag_value


@dataclass(frozen=True)
class SmokeResult:
    """``ok`` (HTTP 200 with a choice), ``latency_s`` (seconds), ``text`` (the completion or the
    error body/explanation), ``url`` (where it was sent)."""

    ok: bool
    latency_s: float
    text: str
    url: str


def endpoint_of(plan_json: dict) -> tuple[str, str] | None:
    """``(base_url, model)`` to send the smoke request to, or None when the plan serves nothing."""
    procs = plan_json.get("processes", [])
    model = None
    for p in procs:
        argv = p.get("argv") or []
        if "serve" in argv[:3]:
            idx = argv.index("serve")
            model = argv[idx + 1] if idx + 1 < len(argv) else None
            if "--served-model-name" in argv:
                model = argv[argv.index("--served-model-name") + 1]
            break
    router = next((p for p in procs if p.get("role") == "router"), None)
    if router is not None and model is not None:
        if router.get("health"):
            return _base(router["health"]["url"]), model
        argv = router.get("argv") or []
        host = last_flag_value(argv, "--host") or "127.0.0.1"
        port = last_flag_value(argv, "--port")
        if port:
            return f"http://{'127.0.0.1' if host == '0.0.0.0' else host}:{port}", model
    target = next((p for p in procs if p.get("role") in ("serve", "head", "decode") and p.get("health")), None)
    if target is None or model is None:
        return None
    return _base(target["health"]["url"]), model


def _base(url: str) -> str:
    return url.rsplit("/health", 1)[0] if "/health" in url else url.rsplit("/", 1)[0]



async def smoke_request(base_url: str, model: str, prompt: str = "The capital of France is", timeout: float = 60.0) -> SmokeResult:
    """POST ``{base_url}/v1/completions``; never raises (errors become ``ok=False`` results)."""
    import httpx

    url = f"{base_url}/v1/completions"
    started = time.perf_counter()
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            resp = await client.post(url, json={"model": model, "prompt": prompt, "max_tokens": 16, "temperature": 0})
        latency = time.perf_counter() - started
        if resp.status_code != 200:
            return SmokeResult(False, latency, f"HTTP {resp.status_code}: {resp.text[:300]}", url)
        choices = resp.json().get("choices") or []
        text = choices[0].get("text", "") if choices else ""
        return SmokeResult(bool(choices), latency, text, url)
    except Exception as exc:  # noqa: BLE001 — connection refused etc. is an answer too
        return SmokeResult(False, time.perf_counter() - started, f"{type(exc).__name__}: {exc}", url)
