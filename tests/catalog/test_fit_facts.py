"""Model facts from config.json and safetensors metadata (catalog/model_facts.py, docs/fit.md §1),
and the fit block / notes a plan carries (catalog/plan_fit.py, docs/fit.md §6)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from vllm_deploy_wizard.catalog import load_catalog, plan_to_json
from vllm_deploy_wizard.catalog.model_facts import (
    ConfigUnavailable,
    facts_from_config,
    load_model_facts,
    safetensors_payload_bytes,
)
from vllm_deploy_wizard.catalog.planner import plan_selection
from vllm_deploy_wizard.catalog.render import plan_text
from vllm_deploy_wizard.catalog.selection import Selection

FIXTURES = Path(__file__).with_name("fixtures") / "fit"


def config(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.config.json").read_text())


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> int:
    """A safetensors file with zero-filled tensors; returns the payload bytes."""
    width = {"BF16": 2, "F32": 4, "F8_E4M3": 1}
    header, offset = {}, 0
    for name, (dtype, shape) in tensors.items():
        n = width[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)
    return offset


def test_multimodal_text_config_and_checkpoint_dtype():
    vlm = {"architectures": ["Qwen2_5_VLForConditionalGeneration"], "torch_dtype": "bfloat16",
           "text_config": dict(config("Qwen3-14B"), model_type="qwen2_5_vl_text"), "vision_config": {"depth": 32}}
    f = facts_from_config(vlm, model="acme/vlm")
    assert f.multimodal and f.layers == 40 and f.kv_heads == 8 and f.head_dim == 128 and f.dtype == "bfloat16"


def test_mla_moe_and_quantization_read_from_config():
    ds = facts_from_config(config("DeepSeek-V2-Lite-Chat"), model="ds")
    assert (ds.kv_lora_rank, ds.qk_rope_head_dim, ds.experts, ds.experts_per_token) == (512, 64, 64, 6)
    q = facts_from_config(config("Qwen3-235B-A22B-FP8"), model="q")
    assert q.quant_method == "fp8" and q.precision == "fp8" and q.experts == 128


def test_layer_types_drive_sliding_and_state_layers():
    hybrid = dict(config("Qwen3-14B"), num_hidden_layers=4, sliding_window=1024,
                  layer_types=["sliding_attention", "full_attention", "linear_attention", "full_attention"])
    f = facts_from_config(hybrid, model="h")
    assert f.layer_kinds == ("sliding", "full", "state", "full") and f.kv_layers == 3


def test_weight_bytes_from_safetensors_headers_and_index(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(config("Qwen3-14B")))
    a = write_safetensors(d / "model-00001-of-00002.safetensors", {"w": ("BF16", [64, 32])})
    b = write_safetensors(d / "model-00002-of-00002.safetensors", {"x": ("F32", [10]), "y": ("F8_E4M3", [7, 3])})
    assert safetensors_payload_bytes(d / "model-00001-of-00002.safetensors") == 64 * 32 * 2
    assert load_model_facts(str(d)).weight_bytes == a + b
    (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 123456}}))
    f = load_model_facts(str(d))
    assert f.weight_bytes == 123456 and f.weight_source.endswith("index.json")
    (d / "broken.safetensors").write_bytes(b"\x01")
    assert safetensors_payload_bytes(d / "broken.safetensors") is None


def test_config_from_the_hf_cache_and_the_fetch_command_when_absent(tmp_path):
    hub = tmp_path / "hub"
    snap = hub / "models--acme--tiny" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(config("Llama-3.1-8B-Instruct")))
    (hub / "models--acme--tiny" / "refs").mkdir()
    (hub / "models--acme--tiny" / "refs" / "main").write_text("abc")
    assert load_model_facts("acme/tiny", cache_dir=hub).layers == 32
    with pytest.raises(ConfigUnavailable) as exc:
        load_model_facts("acme/absent", cache_dir=hub)
    assert "`hf download acme/absent config.json`" in str(exc.value) and "huggingface-cli" not in str(exc.value)


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_plan_carries_the_fit_block_text_and_fixes(tmp_path, cat):
    d = tmp_path / "llama8b"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(config("Llama-3.1-8B-Instruct")))
    planned = plan_selection(cat, Selection(model=str(d), hardware="rtx_5090", allow_unverified=True,
                                            advanced_args=["--max-model-len=131072"]))
    block = plan_to_json(planned.plan)["fit"]
    assert block["available"] and block["fits"] is False
    assert block["kv_cache"]["max_model_len"] == 131072
    longest = block["kv_cache"]["longest_max_model_len"]
    assert f"--max-model-len {longest}" in block["fixes"]
    text = plan_text(planned.plan)
    assert "# note: fit: weights" in text and "# warning: does not fit:" in text
    ok = plan_selection(cat, Selection(model=str(d), hardware="rtx_5090", allow_unverified=True,
                                       advanced_args=[f"--max-model-len={longest}"]))
    assert plan_to_json(ok.plan)["fit"]["fits"] is True


def test_plan_without_a_local_config_names_the_fetch_command(cat, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_CACHE", str(tmp_path))
    planned = plan_selection(cat, Selection(model="Qwen/Qwen3-8B", hardware="h100"))
    assert planned.plan.fit == {"available": False, "fetch": "hf download Qwen/Qwen3-8B config.json"}
    assert any("hf download Qwen/Qwen3-8B config.json" in n for n in planned.plan.notes)


def test_detected_host_gets_offload_sizes_in_the_fit_block(tmp_path, cat):
    from vllm_deploy_wizard.catalog.hostfit import HostCapacity

    d = tmp_path / "llama8b"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(config("Llama-3.1-8B-Instruct")))
    host = HostCapacity(ram_bytes=23 * 2**30, available_bytes=20 * 2**30)
    planned = plan_selection(cat, Selection(model=str(d), hardware="rtx_5090", allow_unverified=True), host)
    sizes = planned.plan.fit["host"]
    assert sizes["lmcache_l1_size_gb"] == 17  # floor(0.75 × 23 GiB), below the 20 GiB free
    assert sizes["offloading_cpu_bytes_to_use"] == 17 * 2**30 < 512 * 2**30


def test_the_fit_reads_the_config_of_the_model_vllm_loads_not_the_recipe_id(cat, monkeypatch, tmp_path):
    """The recipe ``Google/gemma-4-12B-it`` serves ``google/gemma-4-12B-it`` (its model_id, issue #20):
    the HF cache folder keeps the case given (``models--google--…``), so the fit looks up the served
    id — the recipe id missed a config.json vLLM had downloaded, and its fetch command filled another
    folder. A variant with its own checkpoint is looked up by that id."""
    import huggingface_hub.constants as c

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(c, "HF_HUB_CACHE", str(tmp_path))
    snap = tmp_path / "models--google--gemma-4-12B-it" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(config("Qwen3-14B")))
    (tmp_path / "models--google--gemma-4-12B-it" / "refs").mkdir()
    (tmp_path / "models--google--gemma-4-12B-it" / "refs" / "main").write_text("abc")
    sel = Selection(model="Google/gemma-4-12B-it", hardware="h200", install_mode="pip")
    planned = plan_selection(cat, sel)
    assert planned.plan.processes[0].argv[:3] == ["vllm", "serve", "google/gemma-4-12B-it"]
    assert planned.plan.fit is not None and planned.plan.fit["available"] is True, planned.plan.fit
    other = plan_selection(cat, sel.model_copy(update={"variant": "w4a16"})).plan.fit
    assert other == {"available": False, "fetch": "hf download google/gemma-4-12B-it-qat-w4a16-ct config.json"}
    assert cat.served_model_id("GOOGLE/Gemma-4-12b-IT") == "google/gemma-4-12B-it"
    assert cat.served_model_id("Google/gemma-4-12B-it", "w4a16") == "google/gemma-4-12B-it-qat-w4a16-ct"
