"""Tiny random-weight checkpoints of five architectures, made with the vLLM venv's transformers,
for the fit e2e test (``test_fit_e2e.py``) and ``bench/bench_fit.py``.

Each architecture is a config small enough to load in seconds on the CPU build of vLLM; the head
dims are 32/64 (the CPU attention backend rejects 16). The tokenizer files are copied from the
shared tiny Llama (``e2e_env.tiny_model()``), so ``vocab_size`` is that tokenizer's length.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

#: name → (transformers config class, config kwargs, model class). ``vocab_size`` is filled in.
ARCHITECTURES: dict[str, tuple[str, dict, str]] = {
    "llama-gqa": ("LlamaConfig", dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2,
                                      max_position_embeddings=1024), "LlamaForCausalLM"),
    "qwen3": ("Qwen3Config", dict(hidden_size=128, intermediate_size=256, num_hidden_layers=3,
                                  num_attention_heads=4, num_key_value_heads=1, head_dim=64,
                                  max_position_embeddings=1024), "Qwen3ForCausalLM"),
    "mistral-sliding": ("MistralConfig", dict(hidden_size=128, intermediate_size=256, num_hidden_layers=4,
                                              num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                                              sliding_window=64,
                                              layer_types=["sliding_attention", "full_attention"] * 2,
                                              max_position_embeddings=1024), "MistralForCausalLM"),
    "qwen3-moe": ("Qwen3MoeConfig", dict(hidden_size=128, intermediate_size=256, moe_intermediate_size=64,
                                         num_experts=4, num_experts_per_tok=2, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                                         max_position_embeddings=1024), "Qwen3MoeForCausalLM"),
    "deepseek-v2-mla": ("DeepseekV2Config", dict(hidden_size=128, intermediate_size=256,
                                                 moe_intermediate_size=64, n_routed_experts=4,
                                                 num_experts_per_tok=2, n_shared_experts=1,
                                                 first_k_dense_replace=1, num_hidden_layers=2,
                                                 num_attention_heads=4, num_key_value_heads=4,
                                                 kv_lora_rank=64, q_lora_rank=None, qk_rope_head_dim=32,
                                                 qk_nope_head_dim=32, v_head_dim=32,
                                                 max_position_embeddings=1024), "DeepseekV2ForCausalLM"),
}

_SCRIPT = r'''
import json, sys
import torch, transformers
name_cfg, name_model, kwargs, out = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
torch.manual_seed(0)
cfg = getattr(transformers, name_cfg)(torch_dtype="bfloat16", bos_token_id=1, eos_token_id=2,
                                      pad_token_id=3, **kwargs)
model = getattr(transformers, name_model)(cfg).to(torch.bfloat16)
model.save_pretrained(out, safe_serialization=True)
'''

_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json")


def make_tiny_model(name: str, python: Path, tokenizer_dir: Path, root: Path) -> Path:
    """Directory of the tiny ``name`` checkpoint under ``root`` (made once; a ``.done`` stamp marks it).

    Raises:
        KeyError: unknown architecture name (see :data:`ARCHITECTURES`).
        subprocess.CalledProcessError: transformers could not build it (stderr attached).
    """
    cfg_cls, kwargs, model_cls = ARCHITECTURES[name]
    out = root / f"fit-{name}"
    if (out / ".done").exists():
        return out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    vocab = json.loads((tokenizer_dir / "config.json").read_text())["vocab_size"]
    subprocess.run([str(python), "-c", _SCRIPT, cfg_cls, model_cls, json.dumps({**kwargs, "vocab_size": vocab}),
                    str(out)], check=True, capture_output=True, text=True, timeout=300)
    for f in _TOKENIZER_FILES:
        if (tokenizer_dir / f).exists():
            shutil.copy(tokenizer_dir / f, out / f)
    (out / ".done").write_text("ok\n")
    return out
