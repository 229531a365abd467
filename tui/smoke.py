"""The monitor's smoke request: one short completion to the served endpoint, with latency and text.

The endpoint comes from the plan: the router when the plan has one (it is what clients talk to;
its health URL, else its ``--host``/``--port`` — placeholders such as ``$ROUTER_HOST`` are filled
by the monitor with the values given at launch), else the first serve/head/decode process with a
health URL, whose base URL is that URL without ``/health`` (without a health URL: its
``--host``/``--port``, vLLM's default port 8000); the model name is ``--served-model-name`` if given,
else the ``vllm serve`` positional model (docs/plan-file.md §3.4).
Uses ``/v1/completions`` (works for base and chat models alike) with ``max_tokens`` 16.

Where the plan comes from (:func:`find_target`), first that serves something:

1. the plan the wizard launched (in memory, placeholders filled with the launch values);
2. the run's ``spec.json`` (``<run dir>/spec.json``: what was launched, processes with ``probe.url``)
   — this is what a run the wizard *attached* to has;
3. the processes of the live snapshot (argv and ports only).

The API key: vLLM refuses ``/v1/*`` with 401 when started with ``--api-key K``
(several keys may follow; any one is accepted, the first is sent) or with ``VLLM_API_KEY`` in its
environment. The key is read from the served process's argv/env in the plan; the launcher masks
secrets (``***``) in ``spec.json`` and snapshots, so where the plan's value is masked or absent it is
read from the live process itself (``psutil`` cmdline/environ of the recorded pid — same user).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_deploy_wizard.common.contract import VLLM_DEFAULT_PORT
from vllm_deploy_wizard.common.flags import flag_values, last_flag_value

#: What the launcher writes in place of a secret value (launcher/logs.py ``MASK``).
MASKED = "***"
#: The roles that serve the OpenAI API themselves (docs/plan-file.md §3.4).
SERVE_ROLES = ("serve", "head", "decode")


@dataclass(frozen=True)
class SmokeResult:
    """``ok`` (HTTP 200 with a choice), ``latency_s`` (seconds), ``text`` (the completion or the
    error body/explanation), ``url`` (where it was sent)."""

    ok: bool
    latency_s: float
    text: str
    url: str


@dataclass(frozen=True)
class SmokeTarget:
    """Where to send the smoke request: ``base_url`` (``http://host:port``), ``model`` (the served
    name), ``api_key`` (None = no ``Authorization`` header), ``source`` (which of the
    :func:`find_target` sources gave it, in words), ``note`` (a caveat worth showing, e.g. a masked
    key that could not be read from the live process; empty when none)."""

    base_url: str
    model: str
    api_key: str | None = None
    source: str = "plan"
    note: str = ""


def _served(procs: list[dict]) -> tuple[dict | None, str | None]:
    """The first process running ``… serve MODEL`` and the model name it serves."""
    for p in procs:
        argv = list(p.get("argv") or [])
        if "serve" in argv[:3]:
            idx = argv.index("serve")
            model = argv[idx + 1] if idx + 1 < len(argv) else None
            model = last_flag_value(argv, "--served-model-name") or model
            return p, model
    return None, None


def endpoint_of(plan_json: dict) -> tuple[str, str] | None:
    """``(base_url, model)`` to send the smoke request to, or None when the plan serves nothing.

    ``plan_json`` is a docs/plan-file.md §3 mapping (``processes`` with ``argv``, ``role``, ``health.url``);
    see the module docstring for the order tried."""
    procs = plan_json.get("processes", [])
    _, model = _served(procs)
    if model is None:
        return None
    router = next((p for p in procs if p.get("role") == "router"), None)
    if router is not None:
        if router.get("health"):
            return _base(router["health"]["url"]), model
        base = _from_flags(router.get("argv") or [], None)
        if base:
            return base, model
    target = next((p for p in procs if p.get("role") in SERVE_ROLES and p.get("health")), None)
    if target is not None:
        return _base(target["health"]["url"]), model
    target = next((p for p in procs if p.get("role") in SERVE_ROLES), None) or _served(procs)[0]
    base = _from_flags(target.get("argv") or [], str(VLLM_DEFAULT_PORT)) if target is not None else None
    return (base, model) if base else None


def _from_flags(argv: list[str], default_port: str | None) -> str | None:
    host = last_flag_value(argv, "--host") or "127.0.0.1"
    port = last_flag_value(argv, "--port") or default_port
    if not port:
        return None
    return f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"


def _base(url: str) -> str:
    return url.rsplit("/health", 1)[0] if "/health" in url else url.rsplit("/", 1)[0]


def api_key_of(argv: Iterable[str], env: Mapping[str, str] | None = None) -> str | None:
    """The key vLLM would accept: the first value of ``--api-key K…`` / ``--api-key=K`` in ``argv``,
    else ``env['VLLM_API_KEY']``; None when neither is set or the value is masked (``***``)."""
    for key in flag_values(list(argv), "--api-key"):
        if key and not key.startswith("-") and MASKED not in key:
            return key
    env_key = (env or {}).get("VLLM_API_KEY")
    return env_key if env_key and MASKED not in env_key else None


def wants_api_key(argv: Iterable[str], env: Mapping[str, str] | None = None) -> bool:
    """True when ``argv``/``env`` set an API key at all (masked or not)."""
    argv = list(argv)
    return any(a == "--api-key" or a.startswith("--api-key=") for a in argv) or bool((env or {}).get("VLLM_API_KEY"))


def live_argv_env(pid: int | None) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of live process ``pid`` (``psutil``); empty when it is gone
    or not readable (another user's process)."""
    if not pid:
        return [], {}
    import psutil

    try:
        proc = psutil.Process(int(pid))
        return list(proc.cmdline()), dict(proc.environ())
    except (psutil.Error, OSError, ValueError):
        return [], {}


def spec_as_plan(spec: Mapping[str, Any]) -> dict:
    """A launcher ``spec.json`` mapping (``RunSpec.to_dict``: processes with ``probe.url``) in the
    docs/plan-file.md §3 shape :func:`endpoint_of` reads (``health.url``)."""
    procs = []
    for p in spec.get("processes") or []:
        q = dict(p)
        probe = p.get("probe") or {}
        q["health"] = {"url": probe["url"]} if probe.get("url") else None
        procs.append(q)
    return {"processes": procs}


def read_spec(run_dir: Path | str | None) -> dict | None:
    """``<run_dir>/spec.json`` as a dict, or None when there is none or it is unreadable."""
    if run_dir is None:
        return None
    try:
        data = json.loads((Path(run_dir) / "spec.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def find_target(
    plan_json: dict | None,
    spec: dict | None,
    live_procs: list[dict] | None,
    pids: Mapping[str, int | None] | None = None,
) -> SmokeTarget | str:
    """Where to smoke-test, or a sentence saying why nothing was found (naming what was tried).

    ``plan_json``: the plan the wizard launched (placeholders already filled), or None after an
    attach. ``spec``: the run's ``spec.json`` (:func:`read_spec`). ``live_procs``: the snapshot's
    process dicts (``name``, ``argv``, ``role``, ``pid``). ``pids``: the monitor's current pid per
    process name (preferred to the snapshot's; a restart changes it). The key rules are
    :func:`api_key_of`'s, falling back to the live process (:func:`live_argv_env`)."""
    absent: list[str] = []  # why a source could not be read
    empty: list[str] = []  # sources read that serve nothing
    sources = (("the launched plan", "this wizard did not launch the run (no plan in memory)", plan_json),
               ("the run's spec.json", "the run has no readable spec.json", spec_as_plan(spec) if spec else None),
               ("the live processes", "no live process list",
                {"processes": list(live_procs or [])} if live_procs else None))
    for label, why_absent, plan in sources:
        if not plan:
            absent.append(why_absent)
            continue
        found = endpoint_of(plan)
        if found is None:
            empty.append(label)
            continue
        served, _ = _served(plan.get("processes", []))
        assert served is not None  # endpoint_of found a model, which only a served process gives
        argv, env = list(served.get("argv") or []), dict(served.get("env") or {})
        key, note = api_key_of(argv, env), ""
        if key is None:
            name = served.get("name")
            pid = ((pids or {}).get(name) if name is not None else None) or served.get("pid")
            if pid is None:
                pid = next((p.get("pid") for p in live_procs or [] if p.get("name") == name), None)
            live_argv, live_env = live_argv_env(pid)
            key = api_key_of(live_argv, live_env)
            if key is None and wants_api_key(argv, env):
                note = (f"process {served.get('name')} was started with an API key, masked in {label}, and its "
                        f"live command line (pid {pid}) could not be read; the request goes without it")
        return SmokeTarget(found[0], found[1], key, label, note)
    parts = ([f"no `vllm serve` process with a health URL or --port in {' or '.join(empty)}"] if empty else []) + absent
    return "No served endpoint found: " + "; ".join(parts) + "."


async def smoke_request(base_url: str, model: str, prompt: str = "The capital of France is", timeout: float = 60.0,
                        api_key: str | None = None) -> SmokeResult:
    """POST ``{base_url}/v1/completions`` (``Authorization: Bearer <api_key>`` when given); never
    raises (errors become ``ok=False`` results)."""
    import httpx

    url = f"{base_url}/v1/completions"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    started = time.perf_counter()
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            resp = await client.post(url, json={"model": model, "prompt": prompt, "max_tokens": 16, "temperature": 0},
                                     headers=headers)
        latency = time.perf_counter() - started
        if resp.status_code != 200:
            return SmokeResult(False, latency, f"HTTP {resp.status_code}: {resp.text[:300]}", url)
        choices = resp.json().get("choices") or []
        text = choices[0].get("text", "") if choices else ""
        return SmokeResult(bool(choices), latency, text, url)
    except Exception as exc:  # noqa: BLE001 — connection refused etc. is an answer too
        return SmokeResult(False, time.perf_counter() - started, f"{type(exc).__name__}: {exc}", url)
