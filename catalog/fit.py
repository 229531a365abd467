"""The fit model: what fits on a device for one serve process, predicted from :mod:`.model_facts`.

One module, every term documented in docs/fit.md with its source:

* **KV bytes per token per device** (docs/fit.md §2): per KV layer of a rank,
  ``2 × max(1, kv_heads // TP) × head_dim × dtype_bytes``; MLA stores one latent of
  ``kv_lora_rank + qk_rope_head_dim`` per layer (not per head, replicated on every TP rank).
  ``--kv-cache-dtype`` ``auto`` is the checkpoint dtype, ``fp8*`` one byte. PP splits the layers.
* **Blocks → tokens** (docs/fit.md §3), mirroring vLLM 0.32 ``vllm/v1/core/kv_cache_utils.py``
  (``get_kv_cache_groups``, ``get_kv_cache_config_from_groups``, ``get_kv_cache_capacity``,
  ``_estimate_max_model_len_from_groups``) and ``vllm/v1/kv_cache_interface.py`` (page sizes,
  ``max_memory_usage_bytes``): ``num_blocks = kv_bytes // bytes_per_block``; the logged
  ``KV cache size`` is ``int(num_blocks / blocks_per_request × max_model_len)``.
* **KV memory** (docs/fit.md §4): CPU — exactly ``VLLM_CPU_KVCACHE_SPACE`` GiB
  (``vllm/platforms/cpu.py`` sets ``kv_cache_memory_bytes``; ``vllm/v1/worker/cpu_worker.py``
  returns it). GPU — a prediction, not vLLM's profiler: ``utilization × device − weights per rank
  − activation peak − non-torch − CUDA graphs`` with the per-backend figures of
  :data:`BACKEND_OVERHEAD`.
* **Weights per device** (docs/fit.md §5): safetensors bytes (or parameters × bytes) split by
  TP × PP; with expert parallelism the routed experts split over TP × DP ranks instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from .model_facts import DTYPE_BYTES, FULL, SLIDING, STATE, ModelFacts

GIB = 2**30
#: vLLM 0.32 ``CacheConfig`` defaults: ``gpu_memory_utilization`` 0.92, GPU block size 16.
DEFAULT_GPU_UTILIZATION = 0.92
GPU_BLOCK_SIZE = 16
#: vLLM 0.32 CPU block sizes (``vllm/platforms/cpu.py``): 128, MLA 16.
CPU_BLOCK_SIZE, CPU_MLA_BLOCK_SIZE = 128, 16


@dataclass(frozen=True)
class Overhead:
    """Non-KV memory terms of one backend, per device (docs/fit.md §4).

    ``activation_bytes_per_token(facts, tp)``: the profile run's peak above the weights, per
    batched token; ``non_torch_bytes``: CUDA context, allocator; ``cuda_graph_bytes``: captured
    graphs (0 with ``--enforce-eager``); ``nccl_bytes``: communicator buffers when TP/PP > 1."""

    non_torch_bytes: int
    cuda_graph_bytes: int
    nccl_bytes: int


#: Figures assumed per backend (docs/fit.md §4 for where each comes from).
BACKEND_OVERHEAD = {
    "cuda": Overhead(non_torch_bytes=int(0.35 * GIB), cuda_graph_bytes=int(0.5 * GIB), nccl_bytes=int(0.25 * GIB)),
    "rocm": Overhead(non_torch_bytes=int(0.5 * GIB), cuda_graph_bytes=int(0.5 * GIB), nccl_bytes=int(0.25 * GIB)),
    "cpu": Overhead(non_torch_bytes=0, cuda_graph_bytes=0, nccl_bytes=0),
}


def activation_bytes_per_token(facts: ModelFacts, tp: int = 1) -> int:
    """Peak activation bytes per batched token of the profile run: ``(2·I/TP + 7·h) × dtype``
    (gate/up halves of the MLP plus residual, norm and attention buffers; docs/fit.md §4)."""
    width = DTYPE_BYTES.get(facts.dtype, 2)
    inter = facts.intermediate_size if not facts.is_moe else max(facts.intermediate_size, facts.hidden_size)
    return int((2 * inter / max(1, tp) + 7 * facts.hidden_size) * width)


@dataclass(frozen=True)
class ServeShape:
    """How one serve process runs (units: tokens, bytes). ``backend``: ``cuda``/``rocm``/``cpu``."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    expert_parallel: bool = False
    max_model_len: int | None = None
    max_num_batched_tokens: int | None = None
    gpu_memory_utilization: float = DEFAULT_GPU_UTILIZATION
    kv_cache_dtype: str = "auto"
    block_size: int | None = None
    enforce_eager: bool = False
    backend: str = "cuda"
    device_bytes: int | None = None
    """Memory of one device (GPU), or of one NUMA node on CPU."""
    cpu_kv_space_gib: int | None = None
    """``VLLM_CPU_KVCACHE_SPACE`` (GiB)."""
    cpu_amx: bool = False
    """The CPU has AMX tiles: vLLM's AMX MLA backend is used and the block size stays 128."""


@dataclass(frozen=True)
class KVCapacity:
    """The KV cache as vLLM lays it out: ``num_blocks`` of ``bytes_per_block``; ``tokens`` is the
    figure vLLM logs as ``KV cache size: N tokens``; ``concurrency`` the logged ``Maximum concurrency``."""

    kv_bytes: int
    block_size: int
    bytes_per_block: int
    num_blocks: int
    blocks_per_request: int
    tokens: int
    concurrency: float
    max_model_len: int
    longest_model_len: int
    """Longest ``--max-model-len`` whose one request fits (vLLM's ``estimated maximum model length``)."""


def kv_bytes_per_token(facts: ModelFacts, shape: ServeShape = ServeShape()) -> int:
    """KV bytes one token takes on one device, over its PP stage's KV layers (docs/fit.md §2)."""
    return _page_bytes(facts, shape, 1) * _stage_layers(facts, shape.pp)


def kv_dtype_bytes(facts: ModelFacts, kv_cache_dtype: str = "auto") -> int:
    """Bytes per KV element: the checkpoint dtype for ``auto``, 1 for ``fp8*``.

    Raises:
        ValueError: an unknown ``--kv-cache-dtype`` (names the valid ones)."""
    name = (kv_cache_dtype or "auto").lower()
    if name == "auto":
        return DTYPE_BYTES.get(facts.dtype, 2)
    if name.startswith("fp8") or name in DTYPE_BYTES:
        return DTYPE_BYTES.get(name, 1)
    raise ValueError(f"--kv-cache-dtype {kv_cache_dtype!r}: unknown; valid: auto, bfloat16, float16, fp8, "
                     "fp8_e4m3, fp8_e5m2")


def block_size_for(facts: ModelFacts, shape: ServeShape) -> int:
    """vLLM 0.32's block size: GPU ``--block-size`` or 16; CPU 128 (``--block-size`` if given),
    MLA without AMX forced to 16 (the reference CPU MLA kernel), MLA with AMX 128
    (``CpuPlatform.check_and_update_config``, ``vllm/platforms/cpu.py``)."""
    if shape.backend == "cpu":
        if facts.is_mla and not shape.cpu_amx:
            return CPU_MLA_BLOCK_SIZE
        return shape.block_size or CPU_BLOCK_SIZE
    if shape.block_size:
        return shape.block_size
    return GPU_BLOCK_SIZE


def _page_bytes(facts: ModelFacts, shape: ServeShape, block_size: int) -> int:
    """One layer's page of ``block_size`` tokens (vLLM ``AttentionSpec.page_size_bytes``)."""
    width = kv_dtype_bytes(facts, shape.kv_cache_dtype)
    if facts.is_mla:
        return block_size * ((facts.kv_lora_rank or 0) + (facts.qk_rope_head_dim or 0)) * width  # is_mla: rank set
    heads = max(1, facts.kv_heads // max(1, shape.tp))
    return block_size * heads * 2 * facts.head_dim * width


def _stage_layers(facts: ModelFacts, pp: int) -> int:
    """KV layers of the largest pipeline stage."""
    return math.ceil(facts.kv_layers / max(1, pp))


def _groups(facts: ModelFacts, pp: int) -> list[tuple[str, int]]:
    """KV cache groups ``[(kind, layers)]`` as vLLM 0.32 ``get_kv_cache_groups`` forms them for
    full/sliding layers of one page size (``_get_kv_cache_groups_uniform_page_size``)."""
    kinds = [k for k in facts.layer_kinds if k != STATE]
    per_stage = max(1, math.ceil(len(kinds) / max(1, pp)))
    counts = {k: math.ceil(kinds.count(k) * per_stage / max(1, len(kinds))) for k in (FULL, SLIDING) if k in kinds}
    if len(counts) == 1:
        (kind, n), = counts.items()
        return [(kind, per_stage)]
    lo, hi = min(counts.values()), max(counts.values())
    size = hi if hi < lo * 1.5 else lo
    groups = []
    for kind, n in counts.items():
        k = math.ceil(n / size)
        groups += [(kind, len(range(i, n, k))) for i in range(k)]
    return groups


def _blocks_per_request(kind: str, length: int, block_size: int, window: int | None, in_flight: int) -> int:
    """vLLM ``max_memory_usage_bytes`` / page: full ``cdiv(len, bs)``; sliding
    ``cdiv(min(window − 1 + in-flight tokens, len), bs) + 1``."""
    if kind == SLIDING and window:
        return -(-min(window - 1 + in_flight, length) // block_size) + 1
    return -(-length // block_size)


def kv_capacity(facts: ModelFacts, shape: ServeShape, kv_bytes: int) -> KVCapacity:
    """Blocks, logged tokens, concurrency and the longest fitting length for ``kv_bytes`` of KV
    memory on one device (docs/fit.md §3; mirrors vLLM 0.32, module docstring).

    Raises:
        ValueError: the model has no KV layers, or an unknown ``kv_cache_dtype``."""
    if facts.kv_layers == 0:
        raise ValueError(f"{facts.model}: no attention layer keeps a KV cache; nothing to size")
    bs = block_size_for(facts, shape)
    page = _page_bytes(facts, shape, bs)
    groups = _groups(facts, shape.pp)
    per_block = max(n for _, n in groups) * page
    length = shape.max_model_len or facts.context_length or 2048
    batched = shape.max_num_batched_tokens or default_batched_tokens(shape)
    in_flight = batched * max(1, shape.pp)

    def blocks(n: int) -> int:
        return sum(_blocks_per_request(kind, n, bs, facts.sliding_window, in_flight) for kind, _ in groups)

    num_blocks = max(0, kv_bytes // per_block)
    need = blocks(length)
    concurrency = num_blocks / need
    usable = kv_bytes - per_block  # the null block vLLM's BlockPool holds back (get_kv_cache_configs)
    lo, hi, best = 1, max(length, facts.context_length or length), 0
    while lo <= hi:
        mid = (lo + hi) // 2
        if per_block * blocks(mid) <= usable:
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return KVCapacity(kv_bytes, bs, per_block, num_blocks, need, int(concurrency * length), concurrency,
                      length, best)


def default_batched_tokens(shape: ServeShape) -> int:
    """vLLM 0.32 ``EngineArgs.get_batch_defaults`` for ``vllm serve``: 16384 on devices ≥ 160 GiB,
    8192 ≥ 70 GiB, else 2048; CPU 2048 × TP × PP."""
    if shape.backend == "cpu":
        return 2048 * shape.tp * shape.pp
    mem = shape.device_bytes or 0
    return 16384 if mem >= 160 * GIB else 8192 if mem >= 70 * GIB else 2048


def weights_per_device(facts: ModelFacts, shape: ServeShape) -> int:
    """Weight bytes on one device (docs/fit.md §5): the checkpoint bytes (safetensors metadata,
    else parameters × bytes of its precision) / (TP × PP); with ``--enable-expert-parallel`` the
    routed experts split over TP × DP ranks and the rest over TP × PP."""
    from .custom import BYTES_PER_PARAM

    total = facts.weight_bytes or int(facts.parameters * BYTES_PER_PARAM.get(facts.precision, 2.0))
    split = max(1, shape.tp) * max(1, shape.pp)
    if not facts.is_moe or not shape.expert_parallel or facts.parameters <= 0:
        return total // split
    expert_share = expert_parameters(facts) / facts.parameters
    experts = total * expert_share
    ep = max(1, shape.tp) * max(1, shape.dp)
    return int((total - experts) / split + experts / (ep * max(1, shape.pp)))


def expert_parameters(facts: ModelFacts) -> int:
    """Parameters of the routed experts: MoE layers × experts × 3 × hidden × expert width."""
    if not facts.is_moe:
        return 0
    return (facts.layers - facts.dense_layers) * facts.experts * 3 * facts.hidden_size * facts.expert_intermediate_size


#: Worker memory besides the weights when vLLM CPU sizes the KV cache itself (assumed, docs/fit.md §4).
CPU_WORKER_RUNTIME_BYTES = 1 * GIB


def cpu_kv_bytes(facts: ModelFacts, shape: ServeShape) -> int | None:
    """KV bytes of a CPU rank, as vLLM 0.32's ``CPUWorker.determine_available_memory`` sets them:
    ``VLLM_CPU_KVCACHE_SPACE`` GiB exactly; unset, ``ceil(node memory × utilization)`` less the
    worker's resident memory (weights + :data:`CPU_WORKER_RUNTIME_BYTES`). None when neither is known."""
    if shape.cpu_kv_space_gib:
        return shape.cpu_kv_space_gib * GIB
    if not shape.device_bytes:
        return None
    rss = weights_per_device(facts, shape) + CPU_WORKER_RUNTIME_BYTES
    return max(0, math.ceil(shape.device_bytes * shape.gpu_memory_utilization) - rss)


def gpu_kv_bytes(facts: ModelFacts, shape: ServeShape, overhead: Overhead | None = None) -> dict[str, int]:
    """The predicted memory budget of one device (bytes): ``budget`` (utilization × device),
    ``weights``, ``activation``, ``non_torch``, ``cuda_graphs``, ``nccl`` and ``kv`` (what is
    left, ≥ 0). Raises ValueError when ``device_bytes`` is unknown."""
    if not shape.device_bytes:
        raise ValueError("device memory unknown: pass the hardware profile or --gpus of a detected node")
    o = overhead or BACKEND_OVERHEAD.get(shape.backend, BACKEND_OVERHEAD["cuda"])
    batched = shape.max_num_batched_tokens or default_batched_tokens(shape)
    terms = {
        "budget": int(shape.gpu_memory_utilization * shape.device_bytes),
        "weights": weights_per_device(facts, shape),
        "activation": batched * activation_bytes_per_token(facts, shape.tp),
        "non_torch": o.non_torch_bytes,
        "cuda_graphs": 0 if shape.enforce_eager else o.cuda_graph_bytes,
        "nccl": o.nccl_bytes if shape.tp * shape.pp > 1 else 0,
    }
    terms["kv"] = max(0, terms["budget"] - sum(v for k, v in terms.items() if k != "budget"))
    return terms


@dataclass
class FitReport:
    """One serve process's fit: the inputs, the memory terms, the capacity, and computed fixes."""

    facts: ModelFacts
    shape: ServeShape
    memory: dict[str, int]
    capacity: KVCapacity | None
    fits: bool
    reasons: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The ``fit`` block of ``plan --json`` and the plan file (docs/fit.md §6)."""
        cap = self.capacity
        s = self.shape
        return {
            "model": self.facts.to_json(),
            "shape": {"tp": s.tp, "pp": s.pp, "dp": s.dp, "expert_parallel": s.expert_parallel,
                      "backend": s.backend, "kv_cache_dtype": s.kv_cache_dtype,
                      "gpu_memory_utilization": s.gpu_memory_utilization, "device_bytes": s.device_bytes,
                      "cpu_kv_space_gib": s.cpu_kv_space_gib},
            "kv_bytes_per_token": kv_bytes_per_token(self.facts, s),
            "memory": dict(self.memory),
            "kv_cache": None if cap is None else {
                "tokens": cap.tokens, "num_blocks": cap.num_blocks, "block_size": cap.block_size,
                "bytes_per_block": cap.bytes_per_block, "max_model_len": cap.max_model_len,
                "concurrency": round(cap.concurrency, 2), "longest_max_model_len": cap.longest_model_len},
            "fits": self.fits, "reasons": list(self.reasons), "fixes": list(self.fixes),
        }

    def lines(self) -> list[str]:
        """Plan-text lines: the capacity, then ``warning:`` lines for each reason with its fixes."""
        cap, gib = self.capacity, (lambda b: f"{b / GIB:.2f} GiB")
        m = self.memory
        head = (f"fit: weights {gib(m.get('weights', 0))}/device, KV {gib(m.get('kv', 0))}"
                f" → {kv_bytes_per_token(self.facts, self.shape):,} B/token")
        if cap is not None:
            head += (f", {cap.tokens:,} tokens ({cap.concurrency:.2f}× at --max-model-len {cap.max_model_len:,};"
                     f" longest that fits {cap.longest_model_len:,})")
        out = [head]
        for why in self.reasons:
            if self.fits:  # nothing known against it: say what was not computed
                out.append("fit: " + why)
            else:
                out.append("warning: does not fit: " + why + (": " + "; ".join(self.fixes) if self.fixes else ""))
        return out


def fit(facts: ModelFacts, shape: ServeShape) -> FitReport:
    """Fit ``facts`` into ``shape`` (docs/fit.md): KV memory (CPU space or predicted GPU budget),
    the capacity, and when it does not fit the fixes — the ``--max-model-len`` that fits, a TP
    that fits (1–8 dividing the heads), ``--kv-cache-dtype fp8``."""
    reasons: list[str] = []
    if shape.backend == "cpu":
        weights = weights_per_device(facts, shape)
        kv = cpu_kv_bytes(facts, shape)
        if kv is None:
            return FitReport(facts, shape, {"weights": weights}, None, True,
                             ["VLLM_CPU_KVCACHE_SPACE unset and the NUMA node's memory unknown: KV capacity "
                              "not computed"])
        memory = {"weights": weights, "kv": kv}
        if shape.device_bytes and weights + kv > shape.device_bytes:
            reasons.append(f"weights {weights / GIB:.1f} GiB + KV space {kv / GIB:.0f} GiB exceed the NUMA "
                           f"node's {shape.device_bytes / GIB:.1f} GiB")
    elif shape.device_bytes:
        memory = gpu_kv_bytes(facts, shape)
        kv = memory["kv"]
        if memory["weights"] >= memory["budget"]:
            reasons.append(f"weights {memory['weights'] / GIB:.1f} GiB/device exceed "
                           f"{shape.gpu_memory_utilization:g} × {shape.device_bytes / GIB:.0f} GiB")
    else:
        return FitReport(facts, shape, {"weights": weights_per_device(facts, shape)}, None, True,
                         ["device memory unknown: KV capacity not computed"])
    cap = kv_capacity(facts, shape, kv) if kv > 0 else None
    if cap is not None and cap.concurrency < 1 and not reasons:
        reasons.append(f"one {cap.max_model_len:,}-token request needs {cap.blocks_per_request:,} blocks, "
                       f"{cap.num_blocks:,} fit")
    elif cap is None and not reasons:
        reasons.append("no memory left for the KV cache")
    report = FitReport(facts, shape, memory, cap, not reasons, reasons)
    if reasons:
        report.fixes = _fixes(facts, shape, cap)
    return report


def _fixes(facts: ModelFacts, shape: ServeShape, cap: KVCapacity | None) -> list[str]:
    """Computed fixes for a shape that does not fit (each re-checked with :func:`fit`)."""
    out = []
    if cap is not None and cap.longest_model_len > 0:
        out.append(f"--max-model-len {cap.longest_model_len}")
    if shape.backend != "cpu":
        for tp in (2, 4, 8):
            if tp > shape.tp and facts.attention_heads % tp == 0:
                other = fit_quiet(facts, replace(shape, tp=tp))
                if other is not None and other.fits and other.capacity is not None:
                    out.append(f"--tensor-parallel-size {tp} ({other.capacity.tokens:,} tokens)")
                    break
    if not str(shape.kv_cache_dtype).startswith("fp8") and kv_dtype_bytes(facts, shape.kv_cache_dtype) > 1:
        other = fit_quiet(facts, replace(shape, kv_cache_dtype="fp8"))
        if other is not None and other.fits and other.capacity is not None:
            out.append(f"--kv-cache-dtype fp8 ({other.capacity.tokens:,} tokens)")
        elif other is not None and other.capacity is not None and other.capacity.longest_model_len > (
                cap.longest_model_len if cap is not None else 0):
            out.append(f"--kv-cache-dtype fp8 --max-model-len {other.capacity.longest_model_len}")
    return out


def fit_quiet(facts: ModelFacts, shape: ServeShape) -> FitReport | None:
    """:func:`fit` without fixes (None when it raises), for re-checking a candidate fix."""
    try:
        cap_shape = shape
        if shape.backend == "cpu":
            kv = cpu_kv_bytes(facts, shape) or 0
            return FitReport(facts, shape, {"kv": kv}, kv_capacity(facts, cap_shape, kv) if kv > 0 else None, kv > 0)
        memory = gpu_kv_bytes(facts, shape)
        if memory["kv"] <= 0 or memory["weights"] >= memory["budget"]:
            return FitReport(facts, shape, memory, None, False)
        cap = kv_capacity(facts, shape, memory["kv"])
        return FitReport(facts, shape, memory, cap, cap.concurrency >= 1)  # capacity kept when short
    except ValueError:
        return None
