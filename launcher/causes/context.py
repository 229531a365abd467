"""What a rule's extractor reads and returns: :class:`_Ctx` (the line, all lines, argv, env), the
``_Result`` tuple, and the number, flag and model-id helpers the extractors share.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vllm_deploy_wizard.common import backends_registry
from vllm_deploy_wizard.common.flags import last_flag_value

# ---------------------------------------------------------------- helpers for facts and fixes

def _num(s: str) -> float | int:
    v = float(s)
    return int(v) if v.is_integer() and "." not in s else v


def _gib(value: str, unit: str) -> float:
    scale = {"gib": 1.0, "gb": 1.0, "mib": 1 / 1024, "mb": 1 / 1024, "kib": 1 / 1024**2, "kb": 1 / 1024**2,
             "bytes": 1 / 1024**3, "b": 1 / 1024**3}[unit.lower()]
    return round(float(value) * scale, 4)


def _fmt(x: float) -> str:
    return f"{x:g}"


def _util_in(argv: Sequence[str]) -> float | None:
    for flag in ("--gpu-memory-utilization", "--gpu-memory-util", "--gpu_memory_utilization"):
        value = last_flag_value(argv, flag)
        if value is not None:
            try:
                return float(value)
            except ValueError:
                return None
    return None


def _pow2_divisor_below(n: int, limit: int) -> int | None:
    """The largest power of two that divides ``n`` and is below ``limit`` (None when only 1 < limit fits
    and ``limit`` is 1 or less)."""
    best = None
    d = 1
    while d < limit:
        if n % d == 0:
            best = d
        d *= 2
    return best


def _is_cpu(argv: Sequence[str], env: Mapping[str, str]) -> bool:
    return (env.get("VLLM_TARGET_DEVICE", "").lower() == "cpu" or "VLLM_CPU_KVCACHE_SPACE" in env
            or (last_flag_value(argv, "--device") or "").lower() == "cpu")


def _offline(env: Mapping[str, str]) -> bool:
    return str(env.get("HF_HUB_OFFLINE", "")).lower() in ("1", "true", "yes", "on")


_HF_URL_MODEL = re.compile(r"huggingface\.co/(?:api/models/)?([\w.-]+/[\w.-]+?)"
                           r"(?:/(?:resolve|revision|blob|tree)\b|/?\s|/?$|\.$)")


def _model_from_argv(argv: Sequence[str]) -> str | None:
    if "serve" in argv:
        i = list(argv).index("serve")
        if i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            return argv[i + 1]
    return last_flag_value(argv, "--model")


@dataclass
class _Ctx:
    """What a rule's fact extractor may read: the line (prefix stripped), all lines, argv, env."""

    line: str
    lines: Sequence[str]
    argv: Sequence[str]
    env: Mapping[str, str]

    def near(self, pattern: re.Pattern[str]) -> re.Match[str] | None:
        """The pattern on this line, else on the newest other line."""
        m = pattern.search(self.line)
        if m:
            return m
        for other in reversed(self.lines):
            m = pattern.search(other)
            if m:
                return m
        return None


#: A fact extractor returns (kind override or None, summary, fix, fix_args, drop_flags, fix_env, facts);
#: or None when the rule does not apply to this line after all.
_Result = tuple[str | None, str, str, "list[str] | None", "list[str] | None", "dict[str, str] | None", dict]


#: The vendor tool that shows an accelerator's devices, their memory and the processes holding them.
#: Keyed by the device word of :func:`_device_kind`; both come from the backend registry (docs/backends.md §13).
DEVICE_TOOLS: dict[str, str] = backends_registry.device_tools()


def _device_tool(device: str | None) -> str:
    """The command that shows ``device`` kind's devices (:data:`DEVICE_TOOLS`; nvidia-smi by default)."""
    return DEVICE_TOOLS.get((device or "cuda").lower(), DEVICE_TOOLS["cuda"])


def _device_kind(lines: Sequence[str], env: Mapping[str, str]) -> str | None:
    """The accelerator kind a process runs on, from its log and environment: ``npu`` (Ascend), ``xpu``
    (Intel), ``hip`` (ROCm), ``tpu`` or None (unknown; CUDA is the default)."""
    if "ASCEND_RT_VISIBLE_DEVICES" in env or any(_NPU_WORD.search(x) for x in lines):
        return "npu"
    if "ZE_AFFINITY_MASK" in env or any(_XPU_WORD.search(x) for x in lines):
        return "xpu"
    if "HIP_VISIBLE_DEVICES" in env or "ROCR_VISIBLE_DEVICES" in env:
        return "hip"
    if "TPU_VISIBLE_DEVICES" in env:
        return "tpu"
    return None


_NPU_WORD = re.compile(r"\bnpu\b|ascend", re.I)
_XPU_WORD = re.compile(r"\bxpu\b|_xpu_|xpu_worker", re.I)
