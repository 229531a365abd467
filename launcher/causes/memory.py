"""Memory failures: free memory below ``--gpu-memory-utilization`` (``mem_util``), a KV cache too small
for ``--max-model-len`` (``kv_cache_oom``), a device allocator out of memory (``device_oom``), the
kernel's OOM killer (``oom_killed``), LMCache's CPU buffer (``lmcache_alloc``) and host memory (``oom``);
the utilization constants their fixes use (:data:`UTIL_MARGIN`, :data:`DEFAULT_GPU_UTIL`, ...).
"""

from __future__ import annotations

import math
import re
from typing import Any

from .context import _Ctx, _device_kind, _device_tool, _fmt, _gib, _is_cpu, _num, _Result, _util_in

#: Margin (utilization fraction) kept below what the free/total figures of a memory refusal allow.
UTIL_MARGIN = 0.02
#: vLLM's default ``--gpu-memory-utilization``.
DEFAULT_GPU_UTIL = 0.9
#: Lowest utilization a device out-of-memory fix lowers to.
MIN_OOM_UTIL = 0.5
#: How much a device out-of-memory fix lowers the utilization.
OOM_UTIL_STEP = 0.05


# ---------------------------------------------------------------- per-kind extractors

_FREE_TOTAL = re.compile(r"\((\d+(?:\.\d+)?)/(\d+(?:\.\d+)?) GiB\)")
_REQ_UTIL = re.compile(r"(?:utilization|budget[^(]*)\s*\((\d*\.?\d+), (\d+(?:\.\d+)?) GiB\)")
_SUGGEST = re.compile(r"--gpu-memory-utilization[ =]([0-9]*\.?[0-9]+)")


def _mem_util(c: _Ctx) -> _Result:
    """Free memory below the requested utilization: vLLM 0.32.0 ``vllm/v1/worker/utils.py`` ("Free memory
    on device (…/… GiB) on startup is less than desired GPU memory utilization (…)", "less than the
    engine's budget after excluding …") and ``vllm/v1/worker/cpu_worker.py`` (CPU memory)."""
    facts: dict[str, Any] = {}
    m = _FREE_TOTAL.search(c.line)
    r = _REQ_UTIL.search(c.line)
    if r:
        facts["requested_utilization"] = _num(r.group(1))
    where = "CPU memory" if "CPU memory utilization" in c.line or "on node" in c.line else "device memory"
    fix_args = None
    if m:
        free, total = float(m.group(1)), float(m.group(2))
        facts.update(free_gib=_num(m.group(1)), total_gib=_num(m.group(2)))
        if total > 0:
            fits = (math.floor(free / total * 100 + 1e-9) - UTIL_MARGIN * 100) / 100
            if fits >= 0.05:
                fix_args = ["--gpu-memory-utilization", _fmt(round(fits, 2))]
    if fix_args is None:
        s = _SUGGEST.search(c.line)
        if s:
            fix_args = ["--gpu-memory-utilization", s.group(1)]
    summary = (f"free {where} ({m.group(1)}/{m.group(2)} GiB) is below the requested --gpu-memory-utilization"
               + (f" ({r.group(1)}, {r.group(2)} GiB)" if r else "") if m else
               "not enough free memory for the requested memory utilization (--gpu-memory-utilization)")
    tool = _device_tool(_device_kind([c.line, *c.lines], c.env))
    fix = (f"lower --gpu-memory-utilization to {fix_args[-1]} (what the free memory allows) or free memory used by "
           f"other processes ({tool} shows them)" if fix_args else
           f"free memory used by other processes (vllm-wizard status; {tool})")
    return None, summary, fix, fix_args, None, None, facts


_KV_TOKENS = re.compile(r"max seq len \((\d+)\) is larger than the maximum number of tokens that can be stored "
                        r"in KV cache \((\d+)\)")
_KV_V1 = re.compile(r"max seq len \((\d+)\), \((\d+(?:\.\d+)?) GiB KV cache is needed, which is larger than "
                    r"the available KV cache memory \((\d+(?:\.\d+)?) GiB\)")
_KV_EST = re.compile(r"estimated maximum model length is (\d+)")


def kv_length_that_fits(max_model_len: int, needed_gib: float, available_gib: float, block: int = 16) -> int:
    """The ``--max-model-len`` a refused KV cache holds, by the fit model of docs/fit.md §3 (full
    attention: KV memory = blocks × bytes per block, linear in the length): the length scaled by
    available / needed, less 1 % for the two-decimal GiB figures, rounded down to whole blocks (0
    when not one block fits). Older vLLM messages carry no estimated length; newer ones do and win."""
    if needed_gib <= 0 or available_gib <= 0:
        return 0
    return int(max_model_len * available_gib / needed_gib * 0.99) // block * block


def _kv_cache(c: _Ctx) -> _Result:
    """A KV cache too small: vLLM 0.32.0 ``vllm/v1/core/kv_cache_utils.py`` ("No available memory for the cache
    blocks", "… GiB KV cache is needed, which is larger than the available KV cache memory", "the estimated
    maximum model length is N"); "larger than the maximum number of tokens that can be stored in KV cache"
    is vLLM V0's (≤ 0.8) wording."""
    facts: dict[str, Any] = {}
    fix_args = None
    fix_env = None
    m = _KV_TOKENS.search(c.line)
    v1 = _KV_V1.search(c.line)
    est = _KV_EST.search(c.line)
    if m:
        facts.update(max_model_len=int(m.group(1)), kv_cache_tokens=int(m.group(2)))
        fix_args = ["--max-model-len", m.group(2)]
        summary = f"--max-model-len {m.group(1)} does not fit the KV cache ({m.group(2)} tokens)"
    elif v1:
        facts.update(max_model_len=int(v1.group(1)), kv_needed_gib=_num(v1.group(2)),
                     kv_available_gib=_num(v1.group(3)))
        summary = (f"one request of --max-model-len {v1.group(1)} needs {v1.group(2)} GiB of KV cache, "
                   f"{v1.group(3)} GiB is available")
        if _is_cpu(c.argv, c.env):
            fix_env = {"VLLM_CPU_KVCACHE_SPACE": str(math.ceil(float(v1.group(2))))}
        elif not est:
            fits = kv_length_that_fits(int(v1.group(1)), float(v1.group(2)), float(v1.group(3)), block=16)
            if fits:
                facts["estimated_max_model_len"] = fits
                fix_args = ["--max-model-len", str(fits)]
    else:
        summary = "no memory left for the KV cache after loading the model"
    if est:
        facts["estimated_max_model_len"] = int(est.group(1))
        fix_args = ["--max-model-len", est.group(1)]
    if fix_args is None:
        util = _util_in(c.argv)
        if util is not None and util < DEFAULT_GPU_UTIL:
            fix_args = ["--gpu-memory-utilization", _fmt(round(min(DEFAULT_GPU_UTIL, util + 0.1), 2))]
    parts = []
    if fix_args:
        parts.append(f"set {' '.join(fix_args)}")
    if fix_env:
        parts.append(" ".join(f"{k}={v}" for k, v in fix_env.items()) + " (CPU backend: KV cache space in GiB)")
    fix = ("; ".join(parts) + "; or " if parts else "") + ("lower --max-model-len / --max-num-seqs or raise "
                                                           "--gpu-memory-utilization (CPU: VLLM_CPU_KVCACHE_SPACE)")
    return None, summary, fix, fix_args, None, fix_env, facts


_TRIED = re.compile(r"Tried to allocate (\d+(?:\.\d+)?) ?(GiB|MiB|KiB|bytes)", re.I)
_CAPACITY = re.compile(r"GPU (\d+) has a total capac\w* of (\d+(?:\.\d+)?) (GiB|MiB)")
_FREE = re.compile(r"of which (\d+(?:\.\d+)?) (GiB|MiB|KiB|bytes) is free")
_NPU = re.compile(r"\(NPU (\d+); (\d+(?:\.\d+)?) (GiB|MiB) total capacity;.*?(\d+(?:\.\d+)?) (GiB|MiB|KiB) free")
_DEVICE_WORD = re.compile(r"\b(CUDA|HIP|XPU|NPU) out of memory", re.I)
_DEVICE_CONTEXT = (("xpu", re.compile(r"\bxpu\b|_xpu_|xpu_worker", re.I)), ("npu", re.compile(r"\bnpu\b|ascend", re.I)),
                   ("hip", re.compile(r"\bhip\b|\brocm\b", re.I)))
_WARMUP = re.compile(r"warming up sampler with (\d+) dummy requests")


def _device_oom(c: _Ctx) -> _Result:
    """A device allocator out of memory: torch's "CUDA/HIP/XPU out of memory" (``torch.OutOfMemoryError``),
    torch_npu's "NPU out of memory", Level Zero's ``UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY``; vLLM 0.32.0
    ``vllm/v1/worker/gpu_model_runner.py`` adds "warming up sampler with N dummy requests"."""
    facts: dict[str, Any] = {}
    w = _DEVICE_WORD.search(c.line)
    device = w.group(1).lower() if w else None
    if device is None:
        for name, pat in _DEVICE_CONTEXT:
            if any(pat.search(x) for x in c.lines):
                device = name
                break
    if device is None:
        env = c.env
        device = ("npu" if "ASCEND_RT_VISIBLE_DEVICES" in env else "hip" if "HIP_VISIBLE_DEVICES" in env
                  or "ROCR_VISIBLE_DEVICES" in env else "xpu" if "ZE_AFFINITY_MASK" in env else "cuda")
    facts["device"] = device
    t = _TRIED.search(c.line)
    if t:
        facts["tried_gib"] = _gib(t.group(1), t.group(2))
    cap = _CAPACITY.search(c.line)
    if cap:
        facts.update(gpu=int(cap.group(1)), total_gib=_gib(cap.group(2), cap.group(3)))
    f = _FREE.search(c.line)
    if f:
        facts["free_gib"] = _gib(f.group(1), f.group(2))
    n = _NPU.search(c.line)
    if n:
        facts.update(gpu=int(n.group(1)), total_gib=_gib(n.group(2), n.group(3)), free_gib=_gib(n.group(4), n.group(5)))
    warm = _WARMUP.search(c.line)
    fix_args = None
    if warm:
        fix_args = ["--max-num-seqs", str(max(1, int(warm.group(1)) // 2))]
    else:
        util = _util_in(c.argv)
        new = round((util if util is not None else DEFAULT_GPU_UTIL) - OOM_UTIL_STEP, 2)
        if new >= MIN_OOM_UTIL:
            fix_args = ["--gpu-memory-utilization", _fmt(new)]
    summary = f"the {device.upper()} device ran out of memory" + (
        f" allocating {t.group(1)} {t.group(2)}" if t else "") + (
        f" ({_fmt(facts['free_gib'])} GiB free of {_fmt(facts['total_gib'])} GiB)"
        if "free_gib" in facts and "total_gib" in facts else "")
    fix = ((f"set {' '.join(fix_args)}; or " if fix_args else "")
           + "lower --max-model-len / --max-num-seqs, raise --tensor-parallel-size, or free the device "
           + f"(`{_device_tool(device)}` shows what holds it)")
    return None, summary, fix, fix_args, None, None, facts


_OOM_KILL = re.compile(r"Out of memory: Killed process (\d+) \(([^)]+)\)(?:.*?anon-rss:(\d+)kB)?")


def _oom_killed(c: _Ctx) -> _Result:
    facts: dict[str, Any] = {}
    if m := _OOM_KILL.search(c.line):
        facts.update(pid=int(m.group(1)), process=m.group(2))
        if m.group(3):
            facts["rss_gib"] = round(int(m.group(3)) / 2**20, 1)
    return (None, "the kernel's OOM killer ended the process: host memory ran out"
            + (f" ({m.group(2)} held {facts['rss_gib']} GiB)" if m and "rss_gib" in facts else ""),
            "lower host memory use: a smaller --max-model-len / --max-num-seqs, fewer "
            "--max-parallel-loading-workers, a smaller VLLM_CPU_KVCACHE_SPACE / --l1-size-gb, or stop other processes",
            None, None, None, facts)


_ALLOC = re.compile(r"you tried to allocate (\d+) bytes")
_LMCACHE = re.compile(r"lmcache", re.I)


def _free_ram() -> str:
    import psutil

    return f"{psutil.virtual_memory().available / 2**30:.1f} GiB"


def _lmcache_alloc(c: _Ctx) -> _Result | None:
    if "Failed to allocate memory for tensor" in c.line:
        return (None, "LMCache's CPU buffer is full (no memory available for a KV chunk)",
                "raise LMCache's CPU buffer (LMCACHE_MAX_LOCAL_CPU_SIZE, or --l1-size-gb for `lmcache server`) within "
                "the host's free RAM, or lower the load", None, None, None, {})
    if not any(_LMCACHE.search(x) for x in [*c.lines, " ".join(c.argv)]):
        return None
    m = _ALLOC.search(c.line)
    size = f"{int(m.group(1)) / 2**30:.1f} GiB" if m else "its memory"
    facts = {"size_gib": round(int(m.group(1)) / 2**30, 1)} if m else {}
    return (None, f"LMCache could not allocate {size} for its L1 (CPU) cache",
            f"lower --l1-size-gb below the host's free RAM ({_free_ram()})", None, None, None, facts)


def _host_oom(c: _Ctx) -> _Result:
    return None, "the process ran out of host memory", \
        "use a smaller model or context length, or free host memory", None, None, None, {}
