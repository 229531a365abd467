"""The fit model (catalog/fit.py, docs/fit.md): KV bytes, blocks → tokens as vLLM 0.32 computes them,
the GPU budget, fixes, and the figures public vLLM logs printed (fixtures/fit/cases.json)."""

from __future__ import annotations

import importlib.util
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from vllm_deploy_wizard.catalog.fit import (
    GIB,
    ServeShape,
    fit,
    gpu_kv_bytes,
    kv_bytes_per_token,
    kv_capacity,
    weights_per_device,
)
from vllm_deploy_wizard.catalog.model_facts import SLIDING, facts_from_config

FIXTURES = Path(__file__).with_name("fixtures") / "fit"
ROOT = Path(__file__).resolve().parents[2]


def facts(name: str, **override):
    config = json.loads((FIXTURES / f"{name}.config.json").read_text())
    config.update(override)
    return facts_from_config(config, model=name, source=str(FIXTURES / f"{name}.config.json"))


def _bench():
    spec = importlib.util.spec_from_file_location("bench_fit", ROOT / "bench" / "bench_fit.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_kv_bytes_per_token_dense_gqa_and_tp():
    llama = facts("Llama-3.1-8B-Instruct")
    # 32 layers × 8 KV heads × 128 × (K+V) × 2 bytes
    assert kv_bytes_per_token(llama) == 32 * 8 * 128 * 2 * 2
    assert kv_bytes_per_token(llama, ServeShape(tp=2)) == kv_bytes_per_token(llama) // 2
    # more ranks than KV heads: each rank keeps one head (vLLM replicates), not a fraction
    assert kv_bytes_per_token(llama, ServeShape(tp=16)) == 32 * 1 * 128 * 2 * 2
    assert kv_bytes_per_token(llama, ServeShape(kv_cache_dtype="fp8")) == kv_bytes_per_token(llama) // 2
    assert kv_bytes_per_token(llama, ServeShape(pp=2)) == kv_bytes_per_token(llama) // 2


def test_mla_stores_one_latent_per_layer_replicated_over_tp():
    ds = facts("DeepSeek-V2-Lite-Chat")
    assert ds.is_mla and ds.is_moe
    per_token = 27 * (512 + 64) * 2
    assert kv_bytes_per_token(ds) == per_token
    assert kv_bytes_per_token(ds, ServeShape(tp=4)) == per_token  # not split by heads
    assert kv_bytes_per_token(ds, ServeShape(kv_cache_dtype="fp8_e4m3")) == per_token // 2


def test_unknown_kv_cache_dtype_is_named():
    with pytest.raises(ValueError, match="--kv-cache-dtype 'int3'.*valid: auto"):
        kv_bytes_per_token(facts("Qwen3-14B"), ServeShape(kv_cache_dtype="int3"))


def test_cpu_blocks_to_tokens_mirror_vllm():
    """CPU: block 128 (MLA 16); tokens = int(num_blocks / cdiv(len, bs) × len)."""
    llama = facts("Llama-3.1-8B-Instruct")
    shape = ServeShape(backend="cpu", max_model_len=1000, max_num_batched_tokens=256)
    cap = kv_capacity(llama, shape, 4 * GIB)
    assert cap.block_size == 128 and cap.bytes_per_block == 128 * kv_bytes_per_token(llama)
    assert cap.num_blocks == 4 * GIB // cap.bytes_per_block
    assert cap.blocks_per_request == math.ceil(1000 / 128)
    assert cap.tokens == int(cap.num_blocks / cap.blocks_per_request * 1000)
    assert cap.tokens != cap.num_blocks * 128  # 1000 is no multiple of 128: vLLM's formula differs
    assert kv_capacity(facts("DeepSeek-V2-Lite-Chat"), shape, GIB).block_size == 16  # reference MLA kernel
    assert kv_capacity(facts("DeepSeek-V2-Lite-Chat"), replace(shape, cpu_amx=True), GIB).block_size == 128


def test_sliding_layers_need_only_window_plus_in_flight_blocks():
    gemma_like = facts("Qwen3-14B", model_type="gemma2", sliding_window=4096)
    assert gemma_like.layer_kinds[:4] == (SLIDING, "full", SLIDING, "full")
    shape = ServeShape(max_model_len=32768, max_num_batched_tokens=2048, block_size=16)
    cap = kv_capacity(gemma_like, shape, 8 * GIB)
    full_blocks = 32768 // 16
    window_blocks = math.ceil((4096 - 1 + 2048) / 16) + 1
    # 20 full + 20 sliding layers → two groups of 20 (one page size), one block table each
    assert cap.blocks_per_request == full_blocks + window_blocks
    assert cap.bytes_per_block == 20 * 16 * 8 * 2 * 128 * 2
    dense = kv_capacity(facts("Qwen3-14B"), shape, 8 * GIB)
    assert cap.tokens > dense.tokens  # the window saves memory


def test_sliding_window_without_layer_types_is_full_attention_as_in_vllm():
    f = facts("Qwen3-14B", sliding_window=4096)
    assert set(f.layer_kinds) == {"full"} and f.notes


def test_longest_length_is_a_block_multiple_that_fits():
    coder = facts("Qwen3-Coder-480B-A35B-Instruct-FP8")
    shape = ServeShape(dp=8, expert_parallel=True, max_model_len=262144, block_size=16)
    cap = kv_capacity(coder, shape, 40 * GIB)
    per_block = cap.bytes_per_block
    assert cap.longest_model_len % 16 == 0
    assert per_block * (cap.longest_model_len // 16) <= 40 * GIB - per_block
    assert per_block * (cap.longest_model_len // 16 + 1) > 40 * GIB - per_block


def test_expert_parallel_splits_only_the_experts():
    coder = facts("Qwen3-Coder-480B-A35B-Instruct-FP8")
    dp8 = ServeShape(dp=8, expert_parallel=True)
    dense_share = weights_per_device(coder, ServeShape())
    per_rank = weights_per_device(coder, dp8)
    assert dense_share / 8 < per_rank < dense_share / 4  # attention + embeddings stay whole per rank
    assert weights_per_device(coder, ServeShape(tp=8)) == dense_share // 8


def test_gpu_budget_terms_add_up():
    llama = facts("Llama-3.1-8B-Instruct")
    shape = ServeShape(device_bytes=24 * GIB, max_model_len=8192)
    m = gpu_kv_bytes(llama, shape)
    assert m["budget"] == int(0.92 * 24 * GIB)
    assert m["kv"] == m["budget"] - m["weights"] - m["activation"] - m["non_torch"] - m["cuda_graphs"] - m["nccl"]
    assert m["nccl"] == 0 and gpu_kv_bytes(llama, replace(shape, tp=2))["nccl"] > 0
    assert gpu_kv_bytes(llama, replace(shape, enforce_eager=True))["cuda_graphs"] == 0
    with pytest.raises(ValueError, match="device memory unknown"):
        gpu_kv_bytes(llama, ServeShape())


def test_long_context_on_one_24g_gpu_does_not_fit_and_every_fix_does():
    llama = facts("Llama-3.1-8B-Instruct")
    shape = ServeShape(device_bytes=24 * GIB, max_model_len=131072)
    report = fit(llama, shape)
    assert not report.fits and report.reasons
    fixes = {f.split()[0]: f for f in report.fixes}
    assert set(fixes) == {"--max-model-len", "--tensor-parallel-size", "--kv-cache-dtype"}
    n = int(fixes["--max-model-len"].split()[1])
    assert n == report.capacity.longest_model_len and 0 < n < 131072
    assert fit(llama, replace(shape, max_model_len=n)).fits
    assert not fit(llama, replace(shape, max_model_len=n + 16 * 64)).fits
    tp = int(fixes["--tensor-parallel-size"].split()[1])
    assert fit(llama, replace(shape, tp=tp)).fits
    # fp8 KV alone is not enough for 131072 here: the fix pairs it with the length fp8 allows
    words = fixes["--kv-cache-dtype"].split()
    assert words[:3] == ["--kv-cache-dtype", "fp8", "--max-model-len"] and int(words[3]) > n
    assert not fit(llama, replace(shape, kv_cache_dtype="fp8")).fits
    assert fit(llama, replace(shape, kv_cache_dtype="fp8", max_model_len=int(words[3]))).fits
    block = report.to_json()
    assert block["fits"] is False and block["kv_cache"]["longest_max_model_len"] == n
    assert any(line.startswith("warning: does not fit:") for line in report.lines())


def test_cpu_weights_against_the_numa_node():
    llama = facts("Llama-3.1-8B-Instruct")
    small = fit(llama, ServeShape(backend="cpu", device_bytes=16 * GIB, cpu_kv_space_gib=4, max_model_len=8192))
    assert not small.fits and "NUMA node" in small.reasons[0]
    assert fit(llama, ServeShape(backend="cpu", device_bytes=64 * GIB, cpu_kv_space_gib=4, max_model_len=8192)).fits


ROWS = _bench().published_rows(FIXTURES)


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['id']}:{r['figure']}:{r['how'].split()[1]}" for r in ROWS])
def test_published_vllm_figures_within_5_percent(row):
    """Every expected figure is what a public vLLM log printed (address in cases.json)."""
    assert row["address"].startswith("https://github.com/")
    assert abs(row["error"]) <= 0.05, row


def test_published_cases_cover_dense_moe_and_mla():
    data = json.loads((FIXTURES / "cases.json").read_text())
    kinds = set()
    for case in data["cases"]:
        f = facts(case["config"].removesuffix(".config.json"))
        kinds.add("mla" if f.is_mla else "moe" if f.is_moe else "dense")
    assert kinds == {"dense", "moe", "mla"} and len(data["cases"]) >= 5


def test_kv_cache_oom_fix_agrees_with_the_fit_model():
    """launcher/causes/memory.py sizes --max-model-len from an old vLLM refusal without an estimate
    (vllm-project/vllm#15871: 0.95 GiB needed at 32768, 0.93 GiB available); the fit model from the
    config gives the longest length for the same memory — the fix must fit and be close to it."""
    from vllm_deploy_wizard.launcher.causes.memory import kv_length_that_fits

    fix = kv_length_that_fits(32768, 0.95, 0.93)
    cap = kv_capacity(facts("DeepSeek-V2-Lite-Chat"), ServeShape(max_model_len=32768, block_size=16), int(0.93 * GIB))
    assert fix % 16 == 0 and fix <= cap.longest_model_len
    assert fix >= 0.97 * cap.longest_model_len
    assert kv_length_that_fits(32768, 0.95, 0.0) == 0


def test_cpu_kv_space_unset_follows_vllm_auto_sizing():
    """vLLM 0.32 CPUWorker: no VLLM_CPU_KVCACHE_SPACE → ceil(node × utilization) − resident memory."""
    from vllm_deploy_wizard.catalog.fit import CPU_WORKER_RUNTIME_BYTES, cpu_kv_bytes

    llama = facts("Llama-3.1-8B-Instruct")
    node = ServeShape(backend="cpu", device_bytes=64 * GIB, gpu_memory_utilization=0.5)
    assert cpu_kv_bytes(llama, node) == math.ceil(32 * GIB) - weights_per_device(llama, node) - CPU_WORKER_RUNTIME_BYTES
    assert cpu_kv_bytes(llama, replace(node, cpu_kv_space_gib=3)) == 3 * GIB
    unknown = fit(llama, ServeShape(backend="cpu"))
    assert unknown.capacity is None and "not computed" in unknown.reasons[0]
    assert not any("does not fit" in line for line in unknown.lines())
