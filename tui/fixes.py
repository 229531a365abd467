"""Flag fixes the monitor can apply with one key after a classified failure (issue 5, Monitor).

The launcher classifies a failure (``launcher/causes.py``: ``kind``, ``summary``, ``fix`` text); the
fix text is advice for a person. Where the advice is *a flag change on the serve command* the wizard
can apply it itself — append the flag to the selection's ``advanced_args`` (last wins, recipes-synthesis
§2.5 dedupe) and relaunch. Only memory-shaped failures have such a fix; the rest (gated model, port in
use, missing executable, NCCL) need the person.

- ``kv_cache_oom``: halve ``--max-model-len`` (from the argv when numeric, else start at 8192);
- ``cuda_oom``: lower ``--gpu-memory-utilization`` by 0.05 (from the argv, else from vLLM's 0.9),
  never below 0.5.
- ``mem_util`` (free memory below the requested utilization, CPU or GPU backend): lower
  ``--gpu-memory-utilization`` to the value vLLM's message suggests (the cause's ``fix_args``, else
  0.5). When the process already ran at or below that, use what the message says is free: the
  "(free/total GiB)" ratio minus 0.05, rounded down to 0.01 (None when that is below 0.1).
"""

from __future__ import annotations

import math
import re

from vllm_deploy_wizard.launcher.argv import last_flag_value

#: Fallback context length to halve from when the argv sets none (or ``auto``).
DEFAULT_MAX_MODEL_LEN = 16384
#: vLLM's default ``--gpu-memory-utilization``.
DEFAULT_GPU_UTIL = 0.9
#: Utilization to lower to for ``mem_util`` when the cause carries no suggestion.
DEFAULT_SUGGESTED_UTIL = 0.5
#: "(11.0/12.59 GiB)" in vLLM's mem_util message: free and total memory.
_FREE_TOTAL = re.compile(r"\((\d+(?:\.\d+)?)/(\d+(?:\.\d+)?) GiB\)")



def _util(value: str | None, default: float) -> float:
    try:
        return float(value) if value else default
    except ValueError:
        return default


def flag_fix(kind: str | None, argv: list[str], cause: dict | None = None) -> list[str] | None:
    """Args to append for failure ``kind`` of a process started with ``argv``; None = no flag fix.

    ``cause`` is the classified failure dict (``launcher/causes.py``: ``fix_args``, ``line``); only
    ``mem_util`` reads it.
    """
    if kind == "mem_util":
        cause = cause or {}
        current = _util(last_flag_value(argv, "--gpu-memory-utilization"), DEFAULT_GPU_UTIL)
        suggested = list(cause.get("fix_args") or [])
        target = _util(suggested[-1] if suggested else None, DEFAULT_SUGGESTED_UTIL)
        if target < current:
            return ["--gpu-memory-utilization", f"{target:g}"]
        m = _FREE_TOTAL.search(cause.get("line") or "")
        if m and float(m.group(2)) > 0:
            fits = math.floor((float(m.group(1)) / float(m.group(2)) - 0.05) * 100) / 100
            if 0.1 <= fits < current:
                return ["--gpu-memory-utilization", f"{fits:g}"]
        return None
    if kind == "kv_cache_oom":
        current = last_flag_value(argv, "--max-model-len")
        base = int(current) if current and current.isdigit() else DEFAULT_MAX_MODEL_LEN
        return ["--max-model-len", str(max(512, base // 2))]
    if kind == "cuda_oom":
        current = last_flag_value(argv, "--gpu-memory-utilization")
        try:
            util = float(current) if current else DEFAULT_GPU_UTIL
        except ValueError:
            util = DEFAULT_GPU_UTIL
        new = round(util - 0.05, 2)
        return ["--gpu-memory-utilization", f"{new:g}"] if new >= 0.5 else None
    return None
