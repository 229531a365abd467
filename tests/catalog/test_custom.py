"""Custom models: a recipe derived from ``config.json`` (local directory or the offline HF cache)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_deploy_wizard.catalog.custom import (
    context_length,
    custom_recipe,
    estimate_parameters,
    precision_of,
    resolve_model,
    vram_minimum_gb,
)
from vllm_deploy_wizard.catalog.loader import load_catalog
from vllm_deploy_wizard.common.errors import SelectionError

#: Llama-3-8B's published architecture (dense, GQA, untied head).
LLAMA_8B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "vocab_size": 128256, "max_position_embeddings": 131072, "tie_word_embeddings": False,
    "rope_scaling": {"factor": 8.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "torch_dtype": "bfloat16",
}
#: Mixtral-8x7B (MoE via num_local_experts, experts use intermediate_size).
MIXTRAL = {
    "architectures": ["MixtralForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 32000,
    "num_local_experts": 8, "num_experts_per_tok": 2, "max_position_embeddings": 32768, "torch_dtype": "bfloat16",
}
#: Qwen3-30B-A3B (MoE via num_experts, moe_intermediate_size, explicit head_dim).
QWEN3_MOE = {
    "architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 2048, "intermediate_size": 6144,
    "moe_intermediate_size": 768, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
    "num_hidden_layers": 48, "num_experts": 128, "num_experts_per_tok": 8, "vocab_size": 151936,
    "max_position_embeddings": 40960, "torch_dtype": "bfloat16", "tie_word_embeddings": False,
}


def write_model(folder: Path, config: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize("config, total_b, active_b", [
    (LLAMA_8B, 8.03, 8.03),      # published: 8.03 B
    (MIXTRAL, 46.70, 12.88),     # published: 46.7 B total, 12.9 B active
    (QWEN3_MOE, 30.53, 3.35),    # published: 30.5 B total, 3.3 B active
])
def test_parameter_estimate_matches_published_sizes(config, total_b, active_b):
    total, active = estimate_parameters(config)
    assert total / 1e9 == pytest.approx(total_b, abs=0.01)
    assert active / 1e9 == pytest.approx(active_b, abs=0.01)


def test_dense_local_directory(tmp_path):
    model_dir = write_model(tmp_path / "my-llama", LLAMA_8B)
    r = custom_recipe(str(model_dir))
    assert r.model.model_id == str(model_dir.resolve())  # vllm serve gets the absolute path
    assert r.model.architecture == "dense"
    assert r.model.parameter_count == "8.0B"
    assert r.model.context_length == 131072  # max(131072, 8192 × 8)
    v = r.variants["default"]
    assert v.precision == "bf16"
    assert v.vram_minimum_gb == 20  # ceil(8.03e9 × 2 B × 1.2 / 1e9)
    assert r.compatible_strategies == ["single_node_tp", "multi_node_tp", "multi_node_tp_pp"]


@pytest.mark.parametrize("config", [MIXTRAL, QWEN3_MOE], ids=["mixtral", "qwen3-moe"])
def test_moe_gets_expert_parallel_strategies(tmp_path, config):
    r = custom_recipe(str(write_model(tmp_path / "moe", config)))
    assert r.model.architecture == "moe"
    assert {"single_node_tep", "single_node_dep", "multi_node_tep", "multi_node_dep"} <= set(r.compatible_strategies)


def test_hf_cache_layout_offline(tmp_path, monkeypatch):
    """A model present only in the HF cache (models--org--name/snapshots/<rev>/config.json)."""
    hub = tmp_path / "hub"
    repo = hub / "models--acme--tiny-moe"
    snap = repo / "snapshots" / "0123456789abcdef0123456789abcdef01234567"
    write_model(snap, QWEN3_MOE)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123456789abcdef0123456789abcdef01234567")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    r = custom_recipe("acme/tiny-moe", cache_dir=hub)
    assert r.hf_id == r.model.model_id == "acme/tiny-moe"
    assert r.model.architecture == "moe"
    assert r.variants["default"].vram_minimum_gb == vram_minimum_gb(estimate_parameters(QWEN3_MOE)[0], "bf16") == 74


def test_no_config_names_every_place_tried(tmp_path):
    empty = tmp_path / "empty-model"
    empty.mkdir()
    with pytest.raises(SelectionError) as exc:
        custom_recipe(str(empty))
    assert str(exc.value) == (f"no config.json in {empty} — a local model directory needs the checkpoint's "
                              "config.json (and its weights)")  # no `hf download /path` advice
    hub = tmp_path / "hub"
    hub.mkdir()
    with pytest.raises(SelectionError) as exc:
        custom_recipe("acme/not-downloaded", cache_dir=hub)
    msg = str(exc.value)
    assert f"Hugging Face cache {hub}/models--acme--not-downloaded (model not downloaded)" in msg
    assert "`hf download acme/not-downloaded config.json`" in msg
    assert "plan --model acme/not-downloaded --download" in msg
    assert "huggingface-cli" not in msg  # huggingface_hub no longer ships it


def test_missing_size_fields_named(tmp_path):
    model_dir = write_model(tmp_path / "broken", {"architectures": ["X"], "hidden_size": 64})
    with pytest.raises(SelectionError, match="missing num_hidden_layers, num_attention_heads, vocab_size"):
        custom_recipe(str(model_dir))


def test_precision_from_quantization_config():
    assert precision_of({"quantization_config": {"quant_method": "fp8"}, "torch_dtype": "bfloat16"}) == "fp8"
    assert precision_of({"quantization_config": {"quant_method": "awq", "bits": 4}}) == "int4"
    assert precision_of({"quantization_config": {"quant_method": "mxfp4"}}) == "mxfp4"
    assert precision_of({"torch_dtype": "float16"}) == "fp16"
    assert precision_of({"dtype": "float32"}) == "fp32"


def test_multimodal_uses_text_config(tmp_path):
    config = {"architectures": ["LlavaForConditionalGeneration"], "text_config": LLAMA_8B, "torch_dtype": "bfloat16"}
    r = custom_recipe(str(write_model(tmp_path / "vlm", config)))
    assert r.model.parameter_count == "8.0B"
    assert context_length(LLAMA_8B) == 131072


def test_resolve_model_prefers_the_catalog(tmp_path):
    cat = load_catalog()
    assert resolve_model(cat, "qwen/qwen3-32b").hf_id == "Qwen/Qwen3-32B"
    custom = resolve_model(cat, str(write_model(tmp_path / "m", MIXTRAL)))
    assert custom.model.architecture == "moe"
    with pytest.raises(SelectionError, match="no recipe in the bundled catalog.*\nNot a custom model either"):
        resolve_model(cat, "acme/nope")
    with pytest.raises(SelectionError) as exc:
        resolve_model(cat, str(tmp_path / "nope"))
    assert str(exc.value).endswith(f"Not a custom model either: local model directory {tmp_path / 'nope'} does "
                                   "not exist — pass the folder that holds config.json and the weights")


@pytest.mark.parametrize("model_id", ["", "   "])
def test_empty_model_id(model_id):
    with pytest.raises(SelectionError, match=r"^empty model id: pass a recipe id"):
        resolve_model(load_catalog(), model_id)


def test_relative_path_without_config_is_named(tmp_path, monkeypatch):
    (tmp_path / "ckpt").mkdir()
    monkeypatch.chdir(tmp_path)
    for model_id in ("./ckpt", "ckpt"):
        with pytest.raises(SelectionError) as exc:
            resolve_model(load_catalog(), model_id)
        assert f"Not a custom model either: no config.json in {tmp_path / 'ckpt'} —" in str(exc.value)
        assert "hf download" not in str(exc.value)


def test_edited_config_is_read_again(tmp_path):
    import os

    model_dir = write_model(tmp_path / "m", LLAMA_8B)
    assert custom_recipe(str(model_dir)).variants["default"].precision == "bf16"
    write_model(model_dir, {**LLAMA_8B, "quantization_config": {"quant_method": "fp8"}})
    st = (model_dir / "config.json").stat()
    os.utime(model_dir / "config.json", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    r = custom_recipe(str(model_dir))
    assert (r.variants["default"].precision, r.variants["default"].vram_minimum_gb) == ("fp8", 10)


def test_custom_moe_is_offered_dpa_tp_unverified(tmp_path):
    """A custom MoE model lists no DPA+TP, like every recipe; its hardware_match offers it unverified."""
    from vllm_deploy_wizard.catalog.constraints import options

    r = custom_recipe(str(write_model(tmp_path / "moe", QWEN3_MOE)))
    assert "single_node_dpa_tp" not in r.compatible_strategies
    cat = load_catalog().with_recipe(r)
    row = options(cat, {"model": r.hf_id, "hardware": "h200", "nodes": 1}).choice("strategy", "single_node_dpa_tp")
    assert row.state == "disabled" and row.unverified
    lifted = options(cat, {"model": r.hf_id, "hardware": "h200", "nodes": 1, "allow_unverified": True})
    assert lifted.choice("strategy", "single_node_dpa_tp").available
