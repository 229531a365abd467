"""vLLM-specific observation: startup phase and weight-loading progress from its log lines.

docs/architecture.md §2 lets vLLM knowledge live here (the launcher supervises named commands; it doesn't know
recipes). Phases, in the order a `vllm serve` start goes through them, with the log text that
marks each (vLLM 0.1x–0.3x wording; matched loosely so small rewordings still match):
config → engine init → loading weights (with % from the tqdm "Loading safetensors checkpoint
shards" bar) → weights loaded → KV cache / compile → API server up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: (phase, pattern) in start order; a later phase never goes back to an earlier one.
PHASE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(p, re.I))
    for name, p in (
        ("config", r"non-default args|Resolved architecture|vLLM API server version"),
        ("engine_init", r"Initializing a V1 LLM engine|EngineCore|Waiting for init message"),
        ("loading_weights", r"Starting to load model|Loading safetensors checkpoint shards|Loading weights"),
        ("weights_loaded", r"Loading weights took|Model loading took"),
        ("kv_cache", r"KV cache|Memory profiling takes|torch\.compile|Capturing CUDA graph|Warming up model"
                     r"|Compiling model"),
        ("api_server", r"Starting vLLM API server|Available routes are|Route: /health"),
        ("ready", r"Application startup complete"),
    )
)
_PERCENT = re.compile(r"checkpoint shards:\s*(\d{1,3})%")


@dataclass
class StartupProgress:
    """Where a vLLM start is: ``phase`` (one of :data:`PHASE_RULES` names) and weight-load ``percent``
    (0–100 or None)."""

    phase: str | None = None
    percent: int | None = None

    def feed(self, line: str) -> bool:
        """Update from one log line; True when phase or percent changed."""
        changed = False
        m = _PERCENT.search(line)
        if m and int(m.group(1)) != self.percent:
            self.percent = int(m.group(1))
            changed = True
        rank = _rank(self.phase)
        for i, (name, pat) in enumerate(PHASE_RULES):
            if i > rank and pat.search(line):
                self.phase = name
                rank = i
                changed = True
        return changed


def _rank(phase: str | None) -> int:
    for i, (name, _) in enumerate(PHASE_RULES):
        if name == phase:
            return i
    return -1


def is_vllm_serve(argv: tuple[str, ...] | list[str]) -> bool:
    """True for a ``vllm serve …`` command (also ``python -m vllm.entrypoints.openai.api_server``)."""
    a = list(argv)
    return (len(a) >= 2 and a[0].rsplit("/", 1)[-1] == "vllm" and a[1] == "serve") or any(
        x.startswith("vllm.entrypoints") for x in a
    )


def served_model_name(argv: tuple[str, ...] | list[str]) -> str | None:
    """The model id a ``vllm serve`` command lists in ``/v1/models``: the first
    ``--served-model-name`` value, else the model (``vllm serve MODEL`` or ``--model MODEL``);
    None when ``argv`` is no ``vllm serve`` or names no model.

    Mirrors vLLM 0.32.0 ``vllm/entrypoints/launchers/api_server/app_state.py`` (``served_model_names =
    args.served_model_name or [args.model]``, one ``BaseModelPath`` each) and
    ``vllm/entrypoints/openai/models/api_router.py`` (``GET /v1/models`` lists their names).
    """
    a = list(argv)
    if not is_vllm_serve(a):
        return None
    served = model = None
    i = a.index("serve") + 1 if "serve" in a else len(a)
    if i < len(a) and not a[i].startswith("-"):
        model = a[i]
    for j, tok in enumerate(a):
        for flag in ("--served-model-name", "--model"):
            value = None
            if tok == flag and j + 1 < len(a) and not a[j + 1].startswith("-"):
                value = a[j + 1]
            elif tok.startswith(flag + "="):
                value = tok.split("=", 1)[1]
            if value and flag == "--served-model-name" and served is None:
                served = value
            elif value and flag == "--model" and model is None:
                model = value
    return served or model


def models_listed(body: str, model: str) -> tuple[bool, list[str]]:
    """Whether the ``GET /v1/models`` answer ``body`` (OpenAI ``{"data": [{"id": …}, …]}``) lists
    ``model``, and the ids it lists (``[]`` for a body that is not that shape)."""
    import json

    try:
        data = json.loads(body).get("data")
        ids = [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]
    except (ValueError, AttributeError, TypeError):
        return False, []
    return model in ids, ids


#: vLLM's token counters (``vllm/v1/metrics/loggers.py``, 0.32.0: ``vllm:prompt_tokens``,
#: ``vllm:generation_tokens``) and request gauges (``vllm:num_requests_running``,
#: ``vllm:num_requests_waiting``), as :class:`~vllm_deploy_wizard.launcher.metrics.MetricsSnapshot` fields.
TOKEN_COUNTERS = ("prompt_tokens_total", "generation_tokens_total")
REQUEST_GAUGES = ("requests_running", "requests_waiting")


def engine_check(probe_url: str, model: str | None) -> dict:
    """The default engine check of a ``vllm serve`` process probed at ``probe_url``, as plan-file
    ``health.liveness`` data: ``POST /v1/completions`` of one token on the same server.

    Why a completion: vLLM 0.32.0 ``/health`` (``vllm/entrypoints/serve/instrumentator/health.py``)
    awaits ``AsyncLLM.check_health`` (``vllm/v1/engine/async_llm.py``), which only raises once the
    engine core is known dead — a hung engine core answers ``/health`` and ``/v1/models`` from the
    API server while every request waits. A completion is scheduled by the engine core itself.
    """
    from urllib.parse import urlsplit, urlunsplit

    from vllm_deploy_wizard.launcher.timeouts import ENGINE_CHECK_INTERVAL_S, ENGINE_CHECK_TIMEOUT_S, ENGINE_STALL_S

    u = urlsplit(probe_url)
    body: dict = {"prompt": "ping", "max_tokens": 1}
    if model:
        body["model"] = model
    return {"url": urlunsplit((u.scheme, u.netloc, "/v1/completions", "", "")), "body": body,
            "interval_s": ENGINE_CHECK_INTERVAL_S, "timeout_s": ENGINE_CHECK_TIMEOUT_S, "failure_threshold": 1,
            "stall_s": ENGINE_STALL_S}


def auth_headers(argv: tuple[str, ...] | list[str], env: dict | None = None) -> dict[str, str]:
    """``{"Authorization": "Bearer KEY"}`` for the ``/v1`` routes of a ``vllm serve`` that requires an
    API key (the first ``--api-key`` value, else ``VLLM_API_KEY`` in ``env``); ``{}`` otherwise.

    Mirrors vLLM 0.32.0 ``vllm/entrypoints/serve/middleware/register.py`` (``args.api_key or
    [VLLM_API_KEY]``) and ``authenticate.py`` (paths under ``/v1`` need the bearer token, ``/health``
    does not)."""
    a = list(argv)
    if not is_vllm_serve(a):
        return {}
    key = None
    for j, tok in enumerate(a):
        if tok == "--api-key" and j + 1 < len(a) and not a[j + 1].startswith("-"):
            key = a[j + 1]
        elif tok.startswith("--api-key="):
            key = tok.split("=", 1)[1]
        if key:
            break
    key = key or (env or {}).get("VLLM_API_KEY")
    return {"Authorization": f"Bearer {key}"} if key else {}
