"""Why a process failed: classify its last log lines (and exit status, argv, env) into a :class:`Cause`.

The cause names the *root* error line, quoted as the program printed it — never a wrapper such as
"Engine core initialization failed. See root cause above", "Got fatal signal from worker processes",
pydantic's "For further information visit https://errors.pydantic.dev…" or a traceback frame
(:func:`is_wrapper`). When the log holds no root cause (only wrappers and symptoms), the cause says
so and how to get one: ``fix_env`` carries ``VLLM_LOGGING_LEVEL=DEBUG`` or ``NCCL_DEBUG=INFO``.

Fixes are computed from the numbers in the log and expressed as changes the wizard can apply
(docs/supervision.md, causes): ``fix_args`` (flags to append, last wins), ``drop_flags`` (flags to
remove with their values) and ``fix_env`` (environment to set). Examples:

* ``mem_util`` — "Free memory on device (31.44/47.38 GiB) … less than desired GPU memory utilization
  (0.95, …)": ``--gpu-memory-utilization`` = ⌊free/total⌋ to 0.01, minus :data:`UTIL_MARGIN` (0.64);
* ``kv_cache_oom`` — "max seq len (4096) … KV cache (3664)": ``--max-model-len 3664``; vLLM V1's
  "estimated maximum model length is N": ``--max-model-len N``; on the CPU backend also
  ``VLLM_CPU_KVCACHE_SPACE`` = ⌈needed GiB⌉;
* ``divisibility`` — "attention heads (52) … tensor parallel size (8)": the largest power-of-two
  divisor of 52 below 8 (``--tensor-parallel-size 4``); experts vs ``ep_size`` likewise;
* ``device_oom`` (CUDA, HIP, XPU, NPU allocator) — ``--gpu-memory-utilization`` 0.05 below the one
  in use (vLLM's default 0.9), never below 0.5; a sampler warm-up OOM halves ``--max-num-seqs``.

Matching: each rule has a priority; the highest-priority rule matching any line wins, the newest
line among equals. Priorities put explanations above what they explain: a NCCL shared-memory
warning above the generic "NCCL error: unhandled system error", a failed model-architecture
inspection above "architectures … are not supported", specific root causes above pydantic's
generic "Value error", and every root cause above the symptoms (:data:`SYMPTOM`: a worker or
engine-core process that died, which vLLM's API server reports before exiting with status 0).

``retryable`` sorts causes for the policy (:mod:`~vllm_deploy_wizard.launcher.policy`):
deterministic failures (argument and config validation, missing files and models, unsupported,
divisibility, memory sizing for the given flags) fail the same way on every start; transient ones
(:data:`RETRYABLE`: a port race, a network timeout, NCCL/Gloo connection set-up, an engine that died
without a root cause, a signal) may pass on the next.

A vLLM start prints the root cause long before it exits (the API server's own traceback follows,
100+ lines), so callers should pass enough lines (:data:`CLASSIFY_LINES`).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from vllm_deploy_wizard.flags import last_flag_value

#: How many last log lines a caller should classify: a vLLM start that fails in a worker prints
#: ~120 lines of EngineCore/API-server tracebacks after the root cause (vLLM 0.32 CPU).
CLASSIFY_LINES = 400

#: Cause kinds that may pass on a later start (the policy backs off and retries them); every
#: other kind is deterministic for the given flags, model and node.
RETRYABLE: frozenset[str] = frozenset({
    "port_in_use", "network_timeout", "collective_network", "engine_dead", "killed",
    "companion_unreachable", "ready_timeout", "unhealthy", "master_unreachable", "unclassified",
})

#: Margin (utilization fraction) kept below what the free/total figures of a memory refusal allow.
UTIL_MARGIN = 0.02
#: vLLM's default ``--gpu-memory-utilization``.
DEFAULT_GPU_UTIL = 0.9
#: Lowest utilization a device out-of-memory fix lowers to.
MIN_OOM_UTIL = 0.5
#: How much a device out-of-memory fix lowers the utilization.
OOM_UTIL_STEP = 0.05


def is_retryable(kind: str | None) -> bool:
    """True when a failure of ``kind`` may pass on a later start (:data:`RETRYABLE`)."""
    return kind in RETRYABLE


@dataclass(frozen=True)
class Cause:
    """A classified failure.

    ``kind`` (stable id), one-line ``summary``, ``fix`` (advice for a person), ``line`` (the root
    error line, stripped; None when the log holds none), ``fix_args`` (flag/value strings to append
    to the command, last wins), ``drop_flags`` (flags to remove with their values), ``fix_env``
    (environment variables to set), ``facts`` (what the log says: numbers in GiB or counts, flag
    names, ports, paths, model ids) and ``retryable`` (see :data:`RETRYABLE`).
    """

    kind: str
    summary: str
    fix: str
    line: str | None = None
    fix_args: list[str] | None = None
    drop_flags: list[str] | None = None
    fix_env: dict[str, str] | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    retryable: bool | None = None

    def __post_init__(self) -> None:
        if self.retryable is None:
            object.__setattr__(self, "retryable", is_retryable(self.kind))

    def to_dict(self) -> dict:
        """JSON-ready dict."""
        return asdict(self)


# ---------------------------------------------------------------- wrappers (never a root cause)

#: Lines that only point elsewhere: a root cause is never one of these.
WRAPPER = re.compile(
    r"See root cause above|See stack trace (?:\(?above\)?)? for (?:the )?root cause|For further information visit "
    r"https://errors\.pydantic\.dev|EngineCore failed to start|Engine core initialization failed|got fatal signal "
    r"from worker processes|The above exception was the direct cause|During handling of the above exception|"
    r"^\s*Traceback \(most recent call last\)|^\s*File \"|^\s*raise\b|validation errors? for \w+\s*$|"
    r"Error in chat completion stream generator|^\s*\^+\s*$|This might cause deadlock",
    re.I,
)
_PREFIX = re.compile(r"^(?:\s*(?:\(\w[\w-]*(?: \w+=\S+)* pid=\d+(?:, ip=[\d.]+)?\)|\[[^\]]*\]:?|[\w-]+\s+\||"
                     r"(?:ERROR|INFO|WARNING|DEBUG|CRITICAL) \d\d-\d\d [\d:]+(?: \[[^\]]+\])?|\d{4}-\d\d-\d\d[ T][\d:.,]+"
                     r"(?: \| \w+ \| \w+ \|)?(?: \[\w+\] \(\w+\))?)\s*)+")


def strip_prefix(line: str) -> str:
    """``line`` without vLLM's process/log prefixes (``(EngineCore_DP0 pid=1) ERROR 11-30 … [core.py:9]``)."""
    return _PREFIX.sub("", line).strip()


def is_wrapper(line: str | None) -> bool:
    """True for a line that only points at another error (:data:`WRAPPER`) or a traceback frame."""
    return line is not None and bool(WRAPPER.search(strip_prefix(line)))


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


_HF_URL_MODEL = re.compile(r"huggingface\.co/(?:api/models/)?([\w.-]+/[\w.-]+?)(?:/(?:resolve|revision|blob|tree)\b|/?\s|/?$|\.$)")


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


# ---------------------------------------------------------------- per-kind extractors

_FREE_TOTAL = re.compile(r"\((\d+(?:\.\d+)?)/(\d+(?:\.\d+)?) GiB\)")
_REQ_UTIL = re.compile(r"(?:utilization|budget[^(]*)\s*\((\d*\.?\d+), (\d+(?:\.\d+)?) GiB\)")
_SUGGEST = re.compile(r"--gpu-memory-utilization[ =]([0-9]*\.?[0-9]+)")


def _mem_util(c: _Ctx) -> _Result:
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
    fix = (f"lower --gpu-memory-utilization to {fix_args[-1]} (what the free memory allows) or free memory used by "
           "other processes" if fix_args else "free memory used by other processes (vllm-wizard status; nvidia-smi)")
    return None, summary, fix, fix_args, None, None, facts


_KV_TOKENS = re.compile(r"max seq len \((\d+)\) is larger than the maximum number of tokens that can be stored in KV cache \((\d+)\)")
_KV_V1 = re.compile(r"max seq len \((\d+)\), \((\d+(?:\.\d+)?) GiB KV cache is needed, which is larger than the available KV cache memory \((\d+(?:\.\d+)?) GiB\)")
_KV_EST = re.compile(r"estimated maximum model length is (\d+)")


def _kv_cache(c: _Ctx) -> _Result:
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
        facts.update(max_model_len=int(v1.group(1)), kv_needed_gib=_num(v1.group(2)), kv_available_gib=_num(v1.group(3)))
        summary = (f"one request of --max-model-len {v1.group(1)} needs {v1.group(2)} GiB of KV cache, "
                   f"{v1.group(3)} GiB is available")
        if _is_cpu(c.argv, c.env):
            fix_env = {"VLLM_CPU_KVCACHE_SPACE": str(math.ceil(float(v1.group(2))))}
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
        f" ({_fmt(facts['free_gib'])} GiB free of {_fmt(facts['total_gib'])} GiB)" if "free_gib" in facts and "total_gib" in facts else "")
    fix = ((f"set {' '.join(fix_args)}; or " if fix_args else "")
           + "lower --max-model-len / --max-num-seqs, raise --tensor-parallel-size, or free the device")
    return None, summary, fix, fix_args, None, None, facts


_HEADS = re.compile(r"Total number of attention heads \((\d+)\) must be divisible by tensor parallel size \((\d+)\)")
_EXPERTS = re.compile(r"(?:n_physical_experts|num_experts|number of experts)\s*[=(]?\s*(\d+)\)?\s*must be divisible by (?:ep_size|expert parallel size)\s*[=(]?\s*(\d+)", re.I)


def _divisibility(c: _Ctx) -> _Result:
    h = _HEADS.search(c.line)
    e = _EXPERTS.search(c.line)
    if h:
        n, tp = int(h.group(1)), int(h.group(2))
        facts: dict[str, Any] = {"heads": n, "tensor_parallel_size": tp}
        target = _pow2_divisor_below(n, tp)
        summary = f"{n} attention heads cannot be split over --tensor-parallel-size {tp}"
    elif e:
        n, ep = int(e.group(1)), int(e.group(2))
        facts = {"experts": n, "expert_parallel_size": ep}
        target = _pow2_divisor_below(n, ep)
        dp = last_flag_value(c.argv, "--data-parallel-size") or last_flag_value(c.argv, "-dp")
        if target and dp and dp.isdigit() and int(dp) > 1:
            target = target // int(dp) if target % int(dp) == 0 else None
        summary = f"{n} experts cannot be split over an expert-parallel size of {ep} (tensor × data parallel)"
    else:
        facts, target = {}, None
        summary = "a model dimension is not divisible by the parallel size"
    fix_args = ["--tensor-parallel-size", str(target)] if target else None
    fix = (f"set --tensor-parallel-size {target} (a divisor of {facts.get('heads') or facts.get('experts')}); "
           "add --pipeline-parallel-size to use more GPUs" if target else
           "choose a --tensor-parallel-size that divides the model's attention heads and experts")
    return None, summary, fix, fix_args, None, None, facts


_UNRECOGNIZED = re.compile(r"unrecognized arguments?: (.+)$")
#: Flags vLLM removed or never had, with what to use instead.
REPLACED_FLAGS: dict[str, str] = {
    "--task": "--task is not a vllm serve option: for embedding, reranking or reward models use --runner pooling "
              "(and --convert embed|classify|reward to adapt a generative model)",
    "--lora-path": "vllm serve takes LoRA adapters as --enable-lora --lora-modules NAME=PATH",
}


def _unknown_argument(c: _Ctx) -> _Result:
    m = _UNRECOGNIZED.search(c.line)
    tokens = m.group(1).split() if m else []
    flags: list[str] = []
    arguments: list[str] = []
    for i, tok in enumerate(tokens):
        if tok.startswith("-"):
            flags.append(tok.split("=", 1)[0])
        elif not (i > 0 and tokens[i - 1].startswith("-") and "=" not in tokens[i - 1]):
            arguments.append(tok)
    facts: dict[str, Any] = {}
    if flags:
        facts["flags"] = flags
    if arguments:
        facts["arguments"] = arguments
    advice = [REPLACED_FLAGS[f] for f in flags if f in REPLACED_FLAGS]
    if arguments and not flags:
        advice.append(f"{' '.join(arguments)} is a positional argument this program does not take — when the "
                      "command runs inside the vllm/vllm-openai image its entrypoint already is the API server: pass "
                      "the model as --model and drop the leading `serve`")
    summary = ("this program version does not know " + ", ".join(flags or arguments)) if (flags or arguments) else \
        "an argument is unknown to this program version"
    fix = "; ".join(advice) if advice else (
        f"remove {', '.join(flags)} or upgrade vLLM to the version the recipe needs" if flags else
        "remove the argument or upgrade vLLM to the version the recipe needs")
    return None, summary, fix, None, (flags or None), None, facts


_INVALID_CHOICE = re.compile(r"argument (\S+?):? invalid choice: '([^']*)'(?: \(choose from (.*)\))?")
_INVALID_VALUE = re.compile(r"argument (\S+?):? invalid (\w+) value: '([^']*)'")
_EXPECTED = re.compile(r"argument (\S+?):? expected (?:one|\d+) arguments?")
_REQUIRED = re.compile(r"the following arguments are required: (.+)$")


def _invalid_argument(c: _Ctx) -> _Result:
    facts: dict[str, Any] = {}
    if m := _INVALID_CHOICE.search(c.line):
        facts.update(flag=m.group(1).split("/")[-1], value=m.group(2))
        if m.group(3):
            facts["choices"] = [x.strip(" '") for x in m.group(3).split(",")]
        return (None, f"{facts['flag']} does not accept {m.group(2)!r}",
                f"use one of {m.group(3)} for {facts['flag']}, or upgrade vLLM if the recipe needs {m.group(2)!r}"
                if m.group(3) else f"choose a valid value for {facts['flag']}", None, None, None, facts)
    if m := _INVALID_VALUE.search(c.line):
        facts.update(flag=m.group(1).split("/")[-1], value=m.group(3))
        return None, f"{facts['flag']} needs a {m.group(2)} value, got {m.group(3)!r}", \
            f"give {facts['flag']} a {m.group(2)} value", None, None, None, facts
    if m := _EXPECTED.search(c.line):
        facts["flag"] = m.group(1).split("/")[-1]
        return None, f"{facts['flag']} is missing its value", \
            f"give {facts['flag']} a value or remove it", None, [facts["flag"]], None, facts
    if m := _REQUIRED.search(c.line):
        facts["missing"] = [x.strip() for x in m.group(1).split(",")]
        return None, f"required argument missing: {m.group(1)}", \
            f"add {m.group(1)} (for vllm serve: the model as the first argument after `serve`)", None, None, None, facts
    if "`--model` option" in c.line:
        facts["flag"] = "--model"
        return None, "vllm serve takes the model as a positional argument, not --model", \
            "write `vllm serve MODEL …` and drop --model", None, None, None, facts
    return None, "an argument value is invalid", "check the flag values", None, None, None, facts


_VALIDATION_FOR = re.compile(r"validation errors? for (\w+)")
_VALUE_ERROR = re.compile(r"Value error, (.+?)(?: \[type=|$)")


def _config_invalid(c: _Ctx) -> _Result:
    facts: dict[str, Any] = {}
    if m := c.near(_VALIDATION_FOR):
        facts["config"] = m.group(1)
    v = _VALUE_ERROR.search(c.line)
    what = v.group(1) if v else c.line
    summary = f"vLLM refused its configuration{' (' + facts['config'] + ')' if 'config' in facts else ''}: {what}"
    fix = "check the flag values this names"
    if "Expecting value" in what or "JSON" in what:
        fix = ("a JSON value could not be parsed: check the JSON-valued flags (--limit-mm-per-prompt, "
               "--speculative-config, --kv-transfer-config, --hf-overrides, …) and the model's config files")
    return None, summary, fix, None, None, None, facts


_TEMPLATE = re.compile(r"chat template string \((.+?)\) appears path-like, but doesn't exist")
_ENOENT = re.compile(r"(?:FileNotFoundError|No such file or directory)[^']*'([^']+)'")
_CACHE_DIR = re.compile(r"Cache directory not found: (\S+?)\.?(?:\s|$)")


def _flag_for_path(argv: Sequence[str], path: str) -> str | None:
    """The flag of ``argv`` whose value names ``path`` (or a folder of it; ``NAME=PATH`` values too)."""
    for i, tok in enumerate(argv):
        flag, value = (tok.split("=", 1) if tok.startswith("--") and "=" in tok else
                       (tok, argv[i + 1] if i + 1 < len(argv) else ""))
        if not flag.startswith("-") or not value:
            continue
        for v in (value, value.split("=", 1)[-1]):
            if v and (path == v or path.startswith(v.rstrip("/") + "/")):
                return flag
    return None


def _missing_file(c: _Ctx) -> _Result:
    facts: dict[str, Any] = {}
    if m := _TEMPLATE.search(c.line):
        path = m.group(1)
        facts.update(path=path, flag="--chat-template")
        fix = (f"{path} is a path relative to a vLLM source checkout; a pip-installed vLLM ships no examples/ folder: "
               f"download it for your installed version (https://github.com/vllm-project/vllm/blob/v<version>/{path}, "
               "`vllm --version`) and pass its absolute path, or run the vllm/vllm-openai docker image, which has it")
        return None, f"--chat-template {path} does not exist", fix, None, None, None, facts
    if m := _CACHE_DIR.search(c.line):
        facts["path"] = m.group(1)
        return None, f"the Hugging Face cache directory {m.group(1)} does not exist", \
            "create it, or point HF_HOME / HF_HUB_CACHE at the existing cache", None, None, None, facts
    m = _ENOENT.search(c.line)
    path = m.group(1) if m else None
    if path and c.argv and (path == c.argv[0] or path.rsplit("/", 1)[-1] == c.argv[0]):
        return "missing_executable", f"the executable {path!r} was not found", \
            "install it in the chosen environment or fix PATH", None, None, None, {"path": path}
    if path:
        facts["path"] = path
        flag = _flag_for_path(c.argv, path)
        if flag:
            facts["flag"] = flag
        where = f" (named by {flag})" if flag else ""
        return None, f"{path} does not exist{where}", f"create {path} or fix the path{where}", None, None, None, facts
    return None, "a file the process needs does not exist", "check the paths in the command", None, None, None, facts


_MODEL_IDS = (
    re.compile(r"Invalid repository ID or local directory specified: '([^']+)'"),
    re.compile(r"namespace/repo_name'?: '([^']+)'"),
    re.compile(r"(?:OSError: |^)(\S+) does not appear to have a file named"),
    re.compile(r"(?:OSError: |^)(\S+) is not a local folder"),
    re.compile(r"Access to model (\S+?) is restricted"),
    re.compile(r"Repo model (\S+?) is gated"),
    _HF_URL_MODEL,
)


def _model_id(c: _Ctx) -> str | None:
    for pat in _MODEL_IDS:
        m = pat.search(c.line)
        if m:
            return m.group(1)
    for other in reversed(c.lines):
        for pat in _MODEL_IDS:
            m = pat.search(other)
            if m:
                return m.group(1)
    return _model_from_argv(c.argv)


def _model_not_found(c: _Ctx) -> _Result:
    model = _model_id(c)
    facts = {"model": model} if model else {}
    return (None, f"the model {model!r} could not be found" if model else "the model could not be found",
            "check the model: a Hugging Face id is 'org/name' (see huggingface.co), a local path must exist and hold "
            "config.json; a private or gated repo also needs HF_TOKEN", None, None, None, facts)


def _gated(c: _Ctx) -> _Result:
    model = _model_id(c)
    facts = {"model": model} if model else {}
    page = f"https://huggingface.co/{model}" if model and "/" in model and not model.startswith("/") else "its huggingface.co page"
    return (None, f"{model or 'the model'} is gated: this Hugging Face account has no access",
            f"accept the model's license on {page}, then give the process HF_TOKEN=<token of that account> "
            "(export it before launching, or set it in the plan's env)", None, None, None, facts)


def _token_invalid(c: _Ctx) -> _Result:
    return (None, "the Hugging Face token was refused (missing, expired or mistyped)",
            "create a read token at https://huggingface.co/settings/tokens and give the process HF_TOKEN=<token>",
            None, None, None, {})


def _offline_or_network(c: _Ctx) -> _Result:
    model = _model_id(c)
    facts = {"model": model} if model else {}
    if "OfflineModeIsEnabled" in c.line or _offline(c.env):
        dl = f"`hf download {model}`" if model else "`hf download MODEL`"
        return ("offline_not_cached", f"HF_HUB_OFFLINE=1 and {model or 'the model'} is not in the local Hugging Face cache",
                f"on a machine with network run {dl} (same HF_HOME), or unset HF_HUB_OFFLINE", None, None, None, facts)
    return ("network_timeout", "the Hugging Face Hub could not be reached and the file is not in the local cache",
            "check the network / proxy (HF_ENDPOINT) or pre-download the model with `hf download`", None, None, None, facts)


_ARCH = re.compile(r"Model architectures? \[?'?([\w.]+)'?\]? (?:are|is) not supported")
_INSPECT = re.compile(r"Error in inspecting model architecture '([^']+)'")


def _unsupported_arch(c: _Ctx) -> _Result:
    m = _ARCH.search(c.line)
    facts = {"architecture": m.group(1)} if m else {}
    return (None, f"this vLLM cannot run {m.group(1) if m else 'the model architecture'}",
            "upgrade vLLM (pip install -U vllm) to a version that lists it in its supported models, or pick a model "
            "with a supported architecture (a sentence-transformers export of a base model has no LM head)",
            None, None, None, facts)


def _broken_install(c: _Ctx) -> _Result:
    m = c.near(_INSPECT)
    facts = {"architecture": m.group(1)} if m else {}
    return (None, "vLLM failed to import its own model code (a broken or mismatched install)",
            "reinstall vLLM and its compiled dependencies for this torch/CUDA (flash-attn, xformers); "
            "`python -m vllm.model_executor.models.registry` shows the import error", None, None, None, facts)


def _unsupported(c: _Ctx) -> _Result:
    return None, "this device or platform does not support what vLLM needs here", \
        "use a supported device/driver, or set --kv-cache-memory-bytes instead of relying on free-memory queries", \
        None, None, None, {}


_ADDR = re.compile(r"\('([^']*)', (\d+)\)")
_ZMQ = re.compile(r"addr='[a-z]+://[^:']+:(\d+)'")
_PORT = re.compile(r"\bport:? (\d+)\b")


def _port_in_use(c: _Ctx) -> _Result:
    facts: dict[str, Any] = {}
    fix = "stop the process holding the port (vllm-wizard status shows wizard runs) or choose another --port"
    if m := _MASTER_PORT.search(c.line):  # torch's TCPStore of a multi-node head: the group's master port
        port = m.group(1)
        return (None, f"the group's master port {port} is already in use on this node",
                f"stop what holds port {port} (`ss -ltnp 'sport = :{port}'`), or give every node of the plan another "
                f"master port (`vllm-wizard plan … --arg=--master-port=NNNNN`)", None, None, None, {"port": int(port)})
    if m := _ADDR.search(c.line):
        facts.update(host=m.group(1), port=int(m.group(2)))
    elif m := _ZMQ.search(c.line):
        facts["port"] = int(m.group(1))
    elif m := _PORT.search(c.line):
        facts["port"] = int(m.group(1))
    elif re.search(r"TCPStore|rendezvous|server socket has failed to listen", "\n".join([c.line, *c.lines])):
        facts["what"] = "torch.distributed rendezvous (TCPStore)"
    else:
        port = last_flag_value(c.argv, "--port")
        if port and port.isdigit():
            facts["port"] = int(port)
        elif _model_from_argv(c.argv) is not None:
            facts["port"] = 8000
    context = "\n".join([*c.lines, " ".join(c.argv)]).lower()
    if facts.get("what"):
        fix = ("the torch.distributed rendezvous port is taken (another vLLM on this node, or one still shutting "
               "down): give each instance its own MASTER_PORT / VLLM_PORT, or wait for the old one to exit")
    elif "nixl" in context:
        fix = (f"port {facts.get('port')} is taken: give each vLLM on this node its own VLLM_NIXL_SIDE_CHANNEL_PORT "
               "(NIXL side channel; it also must not meet the KV-events port 5557)")
    elif "port" in facts:
        fix = f"port {facts['port']} is taken: stop its holder (vllm-wizard status shows wizard runs) or choose another --port"
    summary = f"port {facts['port']} is already in use" if "port" in facts else "a port it needs is already in use"
    return None, summary, fix, None, None, None, facts


_CONNECT = re.compile(r"trying to connect to \(([^,]+), (\d+)\)")
_HTTP_HOST = re.compile(r"host='([^']+)'|Connection to (\S+?) timed out")


def _network_timeout(c: _Ctx) -> _Result:
    facts: dict[str, Any] = {}
    if m := _CONNECT.search(c.line):
        facts.update(host=m.group(1), port=int(m.group(2)))
        return (None, f"could not reach {m.group(1)}:{m.group(2)} (torch.distributed rendezvous) in time",
                f"start the head node first and check that {m.group(1)}:{m.group(2)} is reachable from this node "
                "(firewall, MASTER_ADDR/--data-parallel-address, the network interface: GLOO_SOCKET_IFNAME)",
                None, None, None, facts)
    if m := _HTTP_HOST.search(c.line):
        facts["host"] = m.group(1) or m.group(2)
    return (None, f"the network request to {facts.get('host', 'a remote host')} timed out",
            "check the network / proxy; pre-download the model (`hf download`) and set HF_HUB_OFFLINE=1 to run offline",
            None, None, None, facts)


def _collective(c: _Ctx) -> _Result:
    if "Gloo" in c.line:
        return (None, "Gloo could not connect the ranks (connectFullMesh failed)",
                "set GLOO_SOCKET_IFNAME (and NCCL_SOCKET_IFNAME) to the interface the nodes reach each other on; "
                "check firewalls and that every node runs the same versions", None, None, None, {})
    no_root = "NCCL_DEBUG=INFO" in c.line or "unhandled" in c.line
    summary = "NCCL communication between ranks failed" + (
        "; the log holds no root cause (NCCL prints it only with NCCL_DEBUG=INFO)" if no_root else "")
    return (None, summary, "run again with NCCL_DEBUG=INFO to see NCCL's own reason; check NCCL_SOCKET_IFNAME, "
            "shared memory (docker --shm-size / --ipc=host) and that every node runs the same versions",
            None, None, {"NCCL_DEBUG": "INFO"} if no_root else None, {})


_SHM = re.compile(r"shared memory segment (\S+)")


def _shm(c: _Ctx) -> _Result:
    m = _SHM.search(c.line)
    facts = {"path": m.group(1)} if m else {}
    return (None, "shared memory (/dev/shm) is too small for NCCL / the worker processes",
            "in a container run it with --ipc=host or --shm-size=16g (docker), or raise the /dev/shm size",
            None, None, None, facts)


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


_DIED_CODE = re.compile(r"died, exit code: (-?\d+)")


def _engine_dead(c: _Ctx) -> _Result:
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


_IFACE_MISSING = re.compile(r"Unable to find address for: (\S+)")
_MASTER = re.compile(r"to host (\S+):(\d+)|network address of \(([^,]+), (\d+)\)")
_ERRNO = re.compile(r"errno: \d+ - ([^)]+)\)")
_MASTER_PORT = re.compile(r"server socket has failed to listen on any local network address\. port: (\d+)")


def _socket_iface(c: _Ctx) -> _Result:
    m = _IFACE_MISSING.search(c.line)
    facts = {"iface": m.group(1)} if m else {}
    return (None, f"the network interface {m.group(1)!r} named for the group's traffic (GLOO_SOCKET_IFNAME / "
            "NCCL_SOCKET_IFNAME) is not on this node" if m else "the network interface named for the group's "
            "traffic (GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME) is not on this node",
            "set $IFACE_NAME to this node's interface (`ip -br addr`; launch --set IFACE_NAME=…), or leave it to "
            "detection (docs/multi-node.md §2)", None, None, None, facts)


def _master_unreachable(c: _Ctx) -> _Result:
    m = _MASTER.search(c.line)
    addr = (f"{m.group(1)}:{m.group(2)}" if m.group(1) else f"{m.group(3)}:{m.group(4)}") if m else "?"
    # the socket error of the newest attempt (a retry line may end with "Interrupted system call")
    why = next((e[-1] for x in reversed([*c.lines, c.line]) if (e := _ERRNO.findall(x))), "no answer")
    facts: dict[str, Any] = {"address": addr}
    return (None, f"cannot reach the group's master address {addr} ({why})",
            "check $HEAD_IP (launch --set HEAD_IP=<the head's address>) and that the head node's run is up "
            "(`vllm-wizard status` there); the master port must be reachable from this node (docs/multi-node.md §2)",
            None, None, None, facts)


def _companion(c: _Ctx) -> _Result:
    return None, "a companion service (LMCache server, Mooncake, router) could not be reached", \
        "start the companion first (the plan's depends_on) and check its address and port", None, None, None, {}


# ---------------------------------------------------------------- the rules


@dataclass(frozen=True)
class Rule:
    """One failure shape: ``kind``, a ``pattern`` matched on each line (vLLM prefixes stripped),
    a ``priority`` (higher wins; root causes ≥ 1, symptoms < 1) and the ``extract`` function
    computing summary, fix and facts."""

    kind: str
    pattern: re.Pattern[str]
    priority: float
    extract: Callable[[_Ctx], "_Result | None"]


def _r(kind: str, pattern: str, priority: float, extract: Callable[[_Ctx], "_Result | None"]) -> Rule:
    return Rule(kind, re.compile(pattern, re.I), priority, extract)


#: Priority tiers: 3 explains other errors; 2 a root cause; 1 a generic one; below 1 a symptom.
RULES: tuple[Rule, ...] = (
    _r("shm", r"Error while creating shared memory segment|ncclShmOpen|Bus error|/dev/shm.*No space left|No space left on device.*shm", 3, _shm),
    _r("broken_install", r"Error in inspecting model architecture|ImportError: .*(?:undefined symbol|cannot open shared object)|No module named 'vllm\._C'", 3, _broken_install),
    _r("oom_killed", r"Out of memory: Killed process|invoked oom-killer|oom-kill:|running low on memory", 3, _oom_killed),
    _r("mem_util", r"less than desired (?:CPU|GPU) memory utilization|less than the engine's budget after excluding", 2, _mem_util),
    _r("kv_cache_oom", r"No available memory for the cache blocks|is larger than the maximum number of tokens that can be stored in KV cache|KV cache is needed, which is larger than the available KV cache memory", 2, _kv_cache),
    _r("lmcache_alloc", r"can't allocate memory: you tried to allocate \d+ bytes|Failed to allocate memory for tensor\(.*because no (?:memory|free blocks) is available", 2.5, _lmcache_alloc),
    _r("device_oom", r"\b(?:CUDA|HIP|XPU|NPU) out of memory|OutOfMemoryError(?!: Task was killed)|cudaErrorMemoryAllocation|UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY", 2, _device_oom),
    _r("divisibility", r"must be divisible by (?:tensor parallel size|ep_size|expert parallel size)", 2, _divisibility),
    _r("unknown_argument", r"unrecognized arguments?:", 2, _unknown_argument),
    _r("invalid_argument", r"error: argument \S+: (?:invalid choice|invalid \w+ value|expected (?:one|\d+) argument)|the following arguments are required|instead of via the `--model` option", 2, _invalid_argument),
    _r("unsupported_architecture", r"Model architectures? .* (?:are|is) not supported", 2, _unsupported_arch),
    _r("unsupported", r"doesn't support querying the available free memory|is not supported on (?:this|the current) platform", 2, _unsupported),
    _r("missing_file", r"appears path-like, but doesn't exist|FileNotFoundError|No such file or directory: '|Cache directory not found", 2, _missing_file),
    _r("gated_model", r"GatedRepoError|Cannot access gated repo|gated repo\.|Repo model \S+ is gated|Access to model \S+ is restricted", 2, _gated),
    _r("model_not_found", r"RepositoryNotFoundError|Repository Not Found for url|is not a local folder and is not a valid model identifier|does not appear to have a file named|Invalid repository ID or local directory specified|Repo id must (?:be in the (?:form|from)|use alphanumeric)|HFValidationError|Can't load the configuration", 2, _model_not_found),
    _r("offline_not_cached", r"OfflineModeIsEnabled|LocalEntryNotFoundError|cannot find the requested files in the (?:disk|local) cache", 2, _offline_or_network),
    _r("port_in_use", r"address already in use|Errno 98|EADDRINUSE|Address in use", 2, _port_in_use),
    _r("network_timeout", r"DistNetworkError|socket has timed out|Max retries exceeded|Read timed out|ConnectTimeoutError|ReadTimeoutError|Connection to \S+ timed out", 2, _network_timeout),
    _r("missing_executable", r"command not found|executable file not found", 2, lambda c: (
        None, "an executable is missing", "install it in the chosen environment or fix PATH", None, None, None, {})),
    _r("socket_iface", r"Unable to find address for: \S+|no socket interface found|NCCL_SOCKET_IFNAME.*(?:not found|no interface)", 2.5, _socket_iface),
    _r("master_unreachable", r"failed to connect/validate to host \S+:\d+|failed to connect to any network address of \(", 2.5, _master_unreachable),
    _r("companion_unreachable", r"cannot reach (?:the )?lmcache server|Failed to connect to (?:the )?(?:lmcache|mooncake)", 2, _companion),
    _r("collective_network", r"NCCL error|ncclSystemError|ncclInternalError|ncclUnhandledCudaError|ncclRemoteError|Gloo connectFullMesh failed", 1, _collective),
    _r("hf_token_invalid", r"Invalid username or password|Invalid credentials in Authorization header|token seems invalid|Invalid user token|401 Client Error: Unauthorized", 1, _token_invalid),
    _r("config_invalid", r"^\s*Value error, ", 1, _config_invalid),
    _r("oom", r"\bMemoryError\b|Cannot allocate memory|std::bad_alloc", 1, _host_oom),
    # symptoms: only when no root cause is in the log
    _r("engine_dead", r"Worker proc \S+ died unexpectedly|Worker \S+ pid \d+ died, exit code", 0.6, _engine_dead),
    _r("engine_dead", r"Engine core proc \S+ died unexpectedly", 0.5, _engine_dead),
    _r("engine_dead", r"EngineDeadError|EngineCore encountered (?:an issue|a fatal error)|got fatal signal from worker processes|Engine core initialization failed|The actor is dead|actor died", 0.4, _engine_dead),
)

#: Kinds of :data:`RULES` that are symptoms, not root causes.
SYMPTOM = frozenset({"engine_dead"})

#: A line that looks like an error: a Python exception line (``ValueError: …``, ``…Error``,
#: ``…Exception``), ``Traceback``, or a program's ``error:``/``ERROR``/``FATAL`` line.
ERROR_LINE = re.compile(r"\w*(?:Error|Exception)\b|^Traceback|\berror\b|\bERROR\b|\bFATAL\b|\bfatal\b", re.I)


def describe_exit(rc: int | None) -> str:
    """``exited with status N`` or ``killed by SIGNAME`` for an exit status (negative = signal)."""
    if rc is not None and rc < 0:
        import signal

        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exited with status {rc}"


def last_error_line(lines: Sequence[str]) -> str | None:
    """The newest line of ``lines`` that looks like an error (:data:`ERROR_LINE`) and is no wrapper
    (:func:`is_wrapper`), supervisor notes (``[wizard] …``) excluded; None when there is none."""
    for line in reversed(lines):
        text = line.strip()
        if text and not text.startswith("[wizard]") and ERROR_LINE.search(text) and not is_wrapper(text):
            return text[:500]
    return None


def unclassified(lines: Iterable[str], rc: int | None) -> Cause:
    """The cause when no rule matches (kind ``unclassified``): the exit status and the last
    error-looking line of ``lines`` (this start's output, oldest first); without one, it says the log
    holds no root cause and how to get one (``VLLM_LOGGING_LEVEL=DEBUG``)."""
    line = last_error_line(list(lines))
    if line:
        return Cause("unclassified", describe_exit(rc) + f"; last error line: {line}",
                     "read the process's full log (`vllm-wizard logs RUN PROCESS`) for what happened before the exit",
                     line)
    return Cause("unclassified", describe_exit(rc) + "; the log holds no error line (no root cause)",
                 "run again with VLLM_LOGGING_LEVEL=DEBUG (vLLM) for the process's own error, and read its full log "
                 "(`vllm-wizard logs RUN PROCESS`)", None, fix_env={"VLLM_LOGGING_LEVEL": "DEBUG"})


def explain(lines: Iterable[str], rc: int | None = None, argv: Sequence[str] = (),
            env: Mapping[str, str] | None = None) -> Cause:
    """Always a cause: :func:`classify`, else :func:`unclassified`. What the supervisor records for
    an exit (the policy uses it only when the exit counts as a failure)."""
    lines = list(lines)
    return classify(lines, rc, argv, env) or unclassified(lines, rc)


def classify(lines: Iterable[str], rc: int | None = None, argv: Sequence[str] = (),
             env: Mapping[str, str] | None = None) -> Cause | None:
    """The cause explaining ``lines`` (a process's last output, oldest first), or None.

    Pass the last :data:`CLASSIFY_LINES` lines. ``argv`` and ``env`` (the command and environment the
    process ran with, optional) give context the output may lack: the flag values fixes start from,
    which flag named a missing path, ``HF_HUB_OFFLINE``, the CPU backend, an ``lmcache`` command.
    ``rc`` 127 (shell's "not found") maps to missing_executable and a negative status (a signal) with
    no other clue to ``killed``. None when nothing matches (see :func:`explain`).
    """
    raw = [x for x in lines if not x.lstrip().startswith("[wizard]")]
    stripped = [strip_prefix(x) for x in raw]
    env = dict(env or {})
    best: tuple[float, int, Rule] | None = None
    for i in range(len(stripped) - 1, -1, -1):
        text = stripped[i]
        if not text:
            continue
        for rule in RULES:
            if (best is None or rule.priority > best[0]) and rule.pattern.search(text):
                best = (rule.priority, i, rule)
    tried: set[tuple[int, str]] = set()
    while best is not None:
        _, i, rule = best
        ctx = _Ctx(stripped[i], stripped, list(argv), env)
        result = rule.extract(ctx)
        if result is not None:
            kind, summary, fix, fix_args, drop_flags, fix_env, facts = result
            kind = kind or rule.kind
            line = None if is_wrapper(stripped[i]) else stripped[i][:1000]
            return Cause(kind, summary, fix, line, fix_args, drop_flags, fix_env, facts)
        tried.add((i, rule.kind))
        best = None
        for j in range(len(stripped) - 1, -1, -1):
            for r in RULES:
                if (j, r.kind) not in tried and (best is None or r.priority > best[0]) and r.pattern.search(stripped[j]):
                    best = (r.priority, j, r)
    if rc == 127:
        return Cause("missing_executable", "the executable was not found", "install it or fix PATH", None)
    if rc is not None and rc < 0:
        name = describe_exit(rc).replace("killed by ", "")
        hint = " (possibly the kernel OOM killer)" if rc == -9 else ""
        return Cause("killed", f"killed by {name}{hint}; the log holds no root cause",
                     "check `dmesg | grep -i -e oom -e killed` and who sends signals to it; lower memory use",
                     None, facts={"signal": name})
    return None
