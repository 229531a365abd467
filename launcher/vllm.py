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
        ("kv_cache", r"KV cache|Memory profiling takes|torch\.compile|Capturing CUDA graph|Warming up model|Compiling model"),
        ("api_server", r"Starting vLLM API server|Available routes are|Route: /health"),
        ("ready", r"Application startup complete"),
    )
)
_PERCENT = re.compile(r"checkpoint shards:\s*(\d{1,3})%")


@dataclass
class StartupProgress:
    """Where a vLLM start is: ``phase`` (one of :data:`PHASE_RULES` names) and weight-load ``percent`` (0–100 or None)."""

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
