"""Flag fixes the monitor can apply with one key after a classified failure (issue 5, Monitor).

The launcher classifies a failure (``launcher/causes.py``: ``kind``, ``summary``, ``fix`` text); the
fix text is advice for a person. Where the advice is *a flag change on the serve command* the wizard
can apply it itself — append the flag to the selection's ``advanced_args`` (last wins, recipes-synthesis
§2.5 dedupe) and relaunch. Only memory-shaped failures have such a fix; the rest (gated model, port in
use, missing executable, NCCL) need the person.

- ``kv_cache_oom``: halve ``--max-model-len`` (from the argv when numeric, else start at 8192);
- ``cuda_oom``: lower ``--gpu-memory-utilization`` by 0.05 (from the argv, else from vLLM's 0.9),
  never below 0.5.
"""

from __future__ import annotations

#: Fallback context length to halve from when the argv sets none (or ``auto``).
DEFAULT_MAX_MODEL_LEN = 16384
#: vLLM's default ``--gpu-memory-utilization``.
DEFAULT_GPU_UTIL = 0.9


def _value(argv: list[str], flag: str) -> str | None:
    """The value of the *last* ``flag`` in ``argv`` (``--f v`` or ``--f=v``), or None."""
    found = None
    for i, tok in enumerate(argv):
        if tok == flag and i + 1 < len(argv):
            found = argv[i + 1]
        elif tok.startswith(flag + "="):
            found = tok.split("=", 1)[1]
    return found


def flag_fix(kind: str | None, argv: list[str]) -> list[str] | None:
    """Args to append for failure ``kind`` of a process started with ``argv``; None = no flag fix."""
    if kind == "kv_cache_oom":
        current = _value(argv, "--max-model-len")
        base = int(current) if current and current.isdigit() else DEFAULT_MAX_MODEL_LEN
        return ["--max-model-len", str(max(512, base // 2))]
    if kind == "cuda_oom":
        current = _value(argv, "--gpu-memory-utilization")
        try:
            util = float(current) if current else DEFAULT_GPU_UTIL
        except ValueError:
            util = DEFAULT_GPU_UTIL
        new = round(util - 0.05, 2)
        return ["--gpu-memory-utilization", f"{new:g}"] if new >= 0.5 else None
    return None
