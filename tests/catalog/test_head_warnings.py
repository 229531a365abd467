"""A TP that does not divide the attention heads is warned about for recipe models too, whenever the
served model's config.json is local (here: a Hugging Face cache made for the test), naming the TPs
that divide; without a local config.json nothing is said (heads unknown)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_deploy_wizard.cli import main

#: The config.json keys of deepseek-ai/DeepSeek-V3 that planning reads (its published values).
DEEPSEEK_V3 = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 7168,
               "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
               "vocab_size": 129280, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
               "v_head_dim": 128, "max_position_embeddings": 163840, "n_routed_experts": 256,
               "num_experts_per_tok": 8, "moe_intermediate_size": 2048, "intermediate_size": 18432,
               "torch_dtype": "bfloat16"}


def _hf_cache(root: Path, model: str, config: dict) -> Path:
    """A Hugging Face hub cache holding only ``model``'s config.json (the layout huggingface_hub reads)."""
    repo = root / ("models--" + model.replace("/", "--"))
    snap = repo / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40, encoding="utf-8")
    return root


@pytest.fixture
def hub(monkeypatch, tmp_path: Path) -> Path:
    import huggingface_hub.constants as constants

    root = tmp_path / "hub"
    root.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(root))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return root


def _plan(capsys, nodes: int) -> tuple[int, dict, str]:
    code = main(["plan", "--model", "deepseek-ai/DeepSeek-V3", "--hardware", "h200", "--strategy", "multi_node_tp",
                 "--nodes", str(nodes), "--json", "--skip-flag-check"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else {}), err


def _head_warnings(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if "attention heads" in ln]


def test_a_recipe_model_with_a_local_config_warns_with_the_tps_that_divide(capsys, hub: Path) -> None:
    _hf_cache(hub, "deepseek-ai/DeepSeek-V3", DEEPSEEK_V3)
    code, plan, err = _plan(capsys, 3)
    assert code == 0, err
    tps = {p["argv"][p["argv"].index("--tensor-parallel-size") + 1] for p in plan["processes"]
           if "--tensor-parallel-size" in p["argv"]}
    assert tps == {"24"}
    warned = _head_warnings(err)
    assert len(warned) == 1, err  # one per model and TP, not one per node
    assert "tensor parallel size 24" in warned[0] and "128 attention heads" in warned[0]
    assert "(1, 2, 4, 8, 16;" in warned[0]


def test_a_tp_that_divides_the_heads_is_not_warned(capsys, hub: Path) -> None:
    _hf_cache(hub, "deepseek-ai/DeepSeek-V3", DEEPSEEK_V3)
    code, _, err = _plan(capsys, 2)  # TP 16 divides 128
    assert code == 0, err
    assert _head_warnings(err) == []


def test_without_a_local_config_the_heads_are_unknown_and_nothing_is_said(capsys, hub: Path) -> None:
    code, _, err = _plan(capsys, 3)
    assert code == 0, err
    assert _head_warnings(err) == []
