"""Symptoms, not root causes: a vLLM worker or engine-core process that died (``engine_dead``); the
rules rank them below every root cause (:data:`~vllm_deploy_wizard.launcher.causes.rules.SYMPTOM`).
"""

from __future__ import annotations

import re
from typing import Any

from .context import _Ctx, _Result

_DIED_CODE = re.compile(r"died, exit code: (-?\d+)")


def _engine_dead(c: _Ctx) -> _Result:
    """A worker or engine process that died: vLLM 0.32.0 ``vllm/v1/executor/multiproc_executor.py``
    ("Worker proc … died unexpectedly"), ``vllm/v1/engine/core_client.py`` ("Engine core proc … died
    unexpectedly", ``EngineDeadError``) and Ray's "The actor is dead"."""
    import signal as _signal

    facts: dict[str, Any] = {}
    if m := _DIED_CODE.search(c.line):
        code = int(m.group(1))
        if code < 0:
            try:
                facts["signal"] = _signal.Signals(-code).name
            except ValueError:
                facts["signal"] = f"signal {-code}"
    what = "a vLLM worker process died" if re.search(r"Worker", c.line) else "vLLM's engine core process died"
    summary = f"{what}; the log holds no root cause" + (f" (it got {facts['signal']})" if "signal" in facts else "")
    return (None, summary,
            "run again with VLLM_LOGGING_LEVEL=DEBUG for the worker's own error; if it still shows none, it was killed "
            "from outside — check the kernel OOM killer (`dmesg | grep -i -e oom -e killed`)",
            None, None, {"VLLM_LOGGING_LEVEL": "DEBUG"}, facts)
