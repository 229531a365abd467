"""Custom models: a ``--model`` that no recipe covers, described by its Hugging Face ``config.json``.

:func:`resolve_model` is the integration point for the rest of the catalog: the recipe of the
catalog when ``model_id`` is a recipe id (or a variant alias), else :func:`custom_recipe`, which
derives a :class:`~vllm_deploy_wizard.catalog.models.Recipe` from ``config.json`` found

1. in ``model_id`` itself when it is a local directory (the served model id is its absolute path), or
2. in the local Hugging Face cache (``huggingface_hub.try_to_load_from_cache`` through
   :func:`.hf_cache.cached_file` — no network, ever; honours ``HF_HUB_CACHE``/``HF_HOME``).

No ``config.json`` in either place → :class:`~vllm_deploy_wizard.common.errors.SelectionError` naming every place
tried and how to fix it.

What is derived, and how (multimodal configs use their ``text_config`` for the language model):

* **architecture**: ``moe`` when the config names routed experts (``num_experts``,
  ``num_local_experts``, ``n_routed_experts``, ``moe_num_experts``, ``num_experts_per_tok`` > 0 with
  experts), else ``dense``.
* **parameter count** (:func:`estimate_parameters`), per decoder layer:

  - attention: ``q = h·(H·d)``, ``k = v = h·(K·d)``, ``o = (H·d)·h`` with hidden size ``h``, heads
    ``H``, KV heads ``K`` (default ``H``), head dim ``d`` (default ``h/H``); DeepSeek MLA
    (``kv_lora_rank``) uses its low-rank projections instead;
  - dense MLP (gated, 3 matrices): ``3·h·I``;
  - MoE MLP: ``E·3·h·I_e`` routed experts + ``S·3·h·I_s`` shared experts + router ``h·E``
    (``I_e`` = ``moe_intermediate_size`` else ``intermediate_size``); ``first_k_dense_replace`` /
    ``mlp_only_layers`` layers use the dense MLP;
  - two RMSNorm vectors ``2·h``;

  plus embeddings ``V·h``, an untied LM head ``V·h`` and the final norm ``h``. Active parameters use
  ``num_experts_per_tok`` experts instead of ``E``. Biases and vision towers are ignored (< 1–2 %).
  Checked against published sizes: Llama-3-8B 8.03 B, Mixtral-8x7B 46.7 B, Qwen3-30B-A3B 30.5 B.
* **context length**: ``max_position_embeddings`` (or ``max_sequence_length`` / ``seq_length`` /
  ``n_positions``); when ``rope_scaling`` has a ``factor`` and ``original_max_position_embeddings``,
  the larger of that and ``original × factor``.
* **precision**: ``quantization_config.quant_method`` (fp8 → ``fp8``, mxfp4, nvfp4/modelopt fp4,
  awq/gptq by ``bits``) else ``torch_dtype``/``dtype`` (bfloat16 → ``bf16``, float16 → ``fp16``,
  float32 → ``fp32``).
* **VRAM minimum** (:func:`vram_minimum_gb`): ``params × bytes_per_param × 1.2`` GB, rounded up. The
  1.2 factor (weights + ~20 % for activations, CUDA graphs and runtime buffers, KV cache excluded)
  is what the snapshot's hand-written recipes imply: Llama-3.3-70B BF16 141 GB → 170, FP8 70.6 → 84,
  Qwen3-30B-A3B BF16 61 → 74.
* **strategies**: dense → ``single_node_tp, multi_node_tp, multi_node_tp_pp``; MoE adds
  ``single_node_tep, single_node_dep, multi_node_tep, multi_node_dep``.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any, overload

from vllm_deploy_wizard.common.errors import SelectionError

from .models import Recipe

#: Bytes per parameter by precision (4-bit formats count their scales as ~0.5 B).
BYTES_PER_PARAM = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0,
                   "int4": 0.5, "mxfp4": 0.5, "nvfp4": 0.5, "fp4": 0.5}
#: Load-footprint overhead over the raw weights (see module docstring for the calibration).
VRAM_OVERHEAD = 1.2
#: Strategies offered to every custom model.
DENSE_STRATEGIES = ("single_node_tp", "multi_node_tp", "multi_node_tp_pp")
#: Extra strategies for MoE custom models.
MOE_STRATEGIES = ("single_node_tep", "single_node_dep", "multi_node_tep", "multi_node_dep")

_EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")


def resolve_model(catalog: Any, model_id: str, *, cache_dir: str | Path | None = None) -> Recipe:
    """The recipe for ``model_id``: the catalog's (case-insensitive, variant aliases included) or a
    custom recipe derived from ``config.json``.

    Raises:
        SelectionError: not a recipe and no readable config.json (message lists every place tried
            and the closest recipe ids).
    """
    if not str(model_id).strip():
        raise SelectionError("empty model id: pass a recipe id (e.g. Qwen/Qwen3-8B), a Hugging Face "
                             "'org/name' id or a local model directory")
    try:
        return catalog.recipe(model_id)
    except SelectionError as exc:
        catalog_error = str(exc)
    try:
        return custom_recipe(model_id, cache_dir=cache_dir)
    except SelectionError as exc:
        raise SelectionError(f"{catalog_error}\nNot a custom model either: {exc}") from None


def is_local_path(model_id: str) -> bool:
    """True when ``model_id`` names a filesystem path rather than an HF id: it starts with ``/``,
    ``.`` or ``~``, has more than one ``/``, or is a slash-less name of an existing directory. An
    ``org/name`` id stays an HF id even when such a folder exists (it may be a local download of
    the recipe's model — the catalog is asked first, the folder second)."""
    text = str(model_id)
    return (text.startswith(("/", ".", "~")) or text.count("/") > 1
            or ("/" not in text and bool(text.strip()) and Path(text).is_dir()))


def find_config(model_id: str, *, cache_dir: str | Path | None = None) -> Path:
    """Path of the ``config.json`` for a local directory or an HF id in the local cache.

    Raises:
        SelectionError: naming every place tried.
    """
    if not str(model_id).strip():
        raise SelectionError("empty model id: pass a Hugging Face 'org/name' id or a local model directory")
    tried: list[str] = []
    local = Path(model_id).expanduser()
    if local.is_dir():
        cfg = local / "config.json"
        if cfg.is_file():
            return cfg
        if is_local_path(model_id):
            raise SelectionError(f"no config.json in {local.absolute()} — a local model directory needs "
                                 "the checkpoint's config.json (and its weights)")
        tried.append(f"{cfg} (directory exists, no config.json)")
    elif is_local_path(model_id):
        what = "is a file, not a model directory" if local.exists() else "does not exist"
        raise SelectionError(f"local model directory {local.absolute()} {what} — pass the folder that "
                             "holds config.json and the weights")
    if model_id.count("/") == 1 and not model_id.startswith(("/", ".", "~")):
        from huggingface_hub import constants

        from .hf_cache import cached_file

        where = Path(cache_dir) if cache_dir else Path(constants.HF_HUB_CACHE)
        try:
            hit = cached_file(model_id, "config.json", cache_dir=cache_dir)
        except Exception as exc:  # invalid repo id and the like
            hit = None
            tried.append(f"Hugging Face cache {where} ({type(exc).__name__}: {exc})")
        else:
            if isinstance(hit, str) and Path(hit).is_file():
                return Path(hit)
            folder = where / ("models--" + model_id.replace("/", "--"))
            state = "no config.json cached" if folder.is_dir() else "model not downloaded"
            tried.append(f"Hugging Face cache {folder} ({state})")
    elif not tried:
        raise SelectionError(f"{model_id!r} is neither a local directory nor an 'org/name' Hugging Face id")
    raise SelectionError(
        f"no config.json for custom model {model_id!r}; tried: " + "; ".join(tried)
        + f". Download it first (`hf download {model_id} config.json` for what planning reads, or the whole "
        f"model: `vllm-wizard plan --model {model_id} --download`, ctrl+d in the wizard's model step) "
        "or pass a local model directory."
    )


def custom_recipe(model_id: str, *, cache_dir: str | Path | None = None) -> Recipe:
    """Derive a :class:`Recipe` for ``model_id`` from its ``config.json`` (see module docstring).

    The recipe's ``hf_id`` is ``model_id`` (an HF id, or the absolute path of a local directory, which
    is also the served ``model.model_id``); ``meta.tasks`` is ``[text]``; one ``default`` variant.

    Raises:
        SelectionError: no config.json (places tried), or it is not valid JSON / lacks the size
            fields (names the file and the missing keys).
    """
    cfg_path = find_config(model_id, cache_dir=cache_dir)
    try:
        stamp = cfg_path.stat().st_mtime_ns
    except OSError:
        stamp = 0
    return _cached_recipe(str(cfg_path), stamp, model_id)


@functools.lru_cache(maxsize=64)
def _cached_recipe(cfg_path: str, mtime_ns: int, model_id: str) -> Recipe:
    """Parse + derive once per (file, mtime): the TUI recomputes options on every keystroke."""
    path = Path(cfg_path)
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SelectionError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(config, dict):
        raise SelectionError(f"{path}: expected a JSON object")
    return recipe_from_config(config, model_id=model_id, source=path)


def recipe_from_config(config: dict[str, Any], *, model_id: str, source: Path | str = "config.json") -> Recipe:
    """Build the :class:`Recipe` from a parsed ``config.json`` dict (pure; no I/O).

    Raises:
        SelectionError: required size fields missing (names ``source`` and the keys).
    """
    text = _text_config(config)
    total, active = estimate_parameters(text, source=source)
    moe = is_moe(text)
    precision = precision_of(config)
    local = Path(model_id).expanduser()
    served = str(local.resolve()) if local.is_dir() else model_id
    org, _, repo = served.strip("/").rpartition("/")
    vram = vram_minimum_gb(total, precision)
    strategies = list(DENSE_STRATEGIES) + (list(MOE_STRATEGIES) if moe else [])
    arch_names = ", ".join(config.get("architectures") or []) or config.get("model_type", "unknown")
    data = {
        "hf_org": org, "hf_repo": repo, "hf_id": served,
        "meta": {
            "title": repo or served, "slug": (repo or served).lower(), "provider": org or "local",
            "description": (f"Custom {'MoE' if moe else 'dense'} model ({arch_names}) derived from "
                            f"{source}: ~{_billions(total)} parameters"
                            + (f", ~{_billions(active)} active" if moe else "")
                            + f", {precision}, VRAM minimum estimated."),
            "tasks": ["text"],
            "hardware": {},
        },
        "model": {
            "model_id": served, "architecture": "moe" if moe else "dense",
            "parameter_count": _billions(total), "active_parameters": _billions(active),
            "context_length": context_length(text), "base_args": [], "base_env": {},
        },
        "variants": {"default": {
            "precision": precision, "vram_minimum_gb": vram,
            "description": (f"{precision.upper()} weights ≈ "
                            f"{total * BYTES_PER_PARAM.get(precision, 2.0) / 1e9:.1f} GB; "
                            f"minimum {vram} GB = weights × {VRAM_OVERHEAD} (estimate)"),
        }},
        "compatible_strategies": strategies,
        "features": {},
        "guide": f"Custom model read from {source}.",
        "custom_source": str(source),
    }
    return Recipe.model_validate(data)


def _text_config(config: dict[str, Any]) -> dict[str, Any]:
    """The language-model part of a (possibly multimodal) config: ``text_config`` / ``llm_config``."""
    for key in ("text_config", "llm_config", "language_config"):
        sub = config.get(key)
        if isinstance(sub, dict) and sub.get("hidden_size"):
            return sub
    return config


def is_moe(config: dict[str, Any]) -> bool:
    """True when the config declares routed experts (> 1)."""
    return any(isinstance(config.get(k), int) and config[k] > 1 for k in _EXPERT_KEYS)


@overload
def _int(config: dict[str, Any], *keys: str, default: int) -> int: ...
@overload
def _int(config: dict[str, Any], *keys: str, default: None = None) -> int | None: ...


def _int(config: dict[str, Any], *keys: str, default: int | None = None) -> int | None:
    """The first of ``keys`` whose value is a number (bools excluded), as an int; else ``default``."""
    for k in keys:
        v = config.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return int(v)
    return default


def estimate_parameters(config: dict[str, Any], *, source: Path | str = "config.json") -> tuple[int, int]:
    """``(total, active)`` parameter counts from a text config (formula in the module docstring).

    Raises:
        SelectionError: ``hidden_size``, ``num_hidden_layers``, ``num_attention_heads`` or
            ``vocab_size`` missing (names ``source`` and every missing key).
    """
    required = {"hidden_size": ("hidden_size", "d_model", "n_embd"),
                "num_hidden_layers": ("num_hidden_layers", "num_layers", "n_layer"),
                "num_attention_heads": ("num_attention_heads", "n_head"),
                "vocab_size": ("vocab_size",)}
    vals: dict[str, int] = {}
    for name, keys in required.items():
        v = _int(config, *keys)
        if v:
            vals[name] = v
    missing = [name for name in required if name not in vals]
    if missing:
        raise SelectionError(f"{source}: can't size the model, missing {', '.join(missing)}")
    h, layers, heads, vocab = (vals["hidden_size"], vals["num_hidden_layers"],
                               vals["num_attention_heads"], vals["vocab_size"])
    kv_heads = _int(config, "num_key_value_heads", "num_kv_heads", default=heads)
    head_dim = _int(config, "head_dim", default=h // heads)
    inter = _int(config, "intermediate_size", "ffn_hidden_size", "n_inner", default=4 * h)

    if config.get("kv_lora_rank"):  # DeepSeek MLA
        rope, nope = _int(config, "qk_rope_head_dim", default=64), _int(config, "qk_nope_head_dim", default=128)
        v_dim, kv_rank = _int(config, "v_head_dim", default=128), int(config["kv_lora_rank"])
        q_rank = _int(config, "q_lora_rank")
        q = (h * q_rank + q_rank * heads * (nope + rope)) if q_rank else h * heads * (nope + rope)
        attn = q + h * (kv_rank + rope) + kv_rank * heads * (nope + v_dim) + heads * v_dim * h
    else:
        attn = h * heads * head_dim + 2 * h * kv_heads * head_dim + heads * head_dim * h

    dense_mlp = 3 * h * inter
    experts = next((config[k] for k in _EXPERT_KEYS if isinstance(config.get(k), int) and config[k] > 1), 0)
    moe_total = moe_active = dense_mlp
    moe_layers = 0
    if experts:
        e_inter = _int(config, "moe_intermediate_size", "expert_intermediate_size", default=inter)
        per_tok = _int(config, "num_experts_per_tok", "num_experts_per_token", "moe_top_k", "top_k", default=2)
        shared = _int(config, "n_shared_experts", "num_shared_experts", default=0)
        s_inter = _int(config, "shared_expert_intermediate_size", default=e_inter)
        shared_params = (shared * 3 * h * e_inter) if shared else (3 * h * s_inter if config.get(
            "shared_expert_intermediate_size") else 0)
        router = h * experts
        moe_total = experts * 3 * h * e_inter + shared_params + router
        moe_active = per_tok * 3 * h * e_inter + shared_params + router
        dense_layers = set(range(_int(config, "first_k_dense_replace", default=0)))
        dense_layers |= {i for i in config.get("mlp_only_layers") or [] if isinstance(i, int)}
        moe_layers = layers - len([i for i in dense_layers if i < layers])
    dense_layers_n = layers - moe_layers
    norms = 2 * h
    embed = vocab * h
    head = 0 if config.get("tie_word_embeddings", False) else vocab * h
    base = embed + head + h + layers * (attn + norms) + dense_layers_n * dense_mlp
    return base + moe_layers * moe_total, base + moe_layers * moe_active


def context_length(config: dict[str, Any]) -> int | None:
    """Longest context: ``max_position_embeddings`` (or aliases), widened by a rope-scaling factor
    over ``original_max_position_embeddings`` when the config declares one."""
    ctx = _int(config, "max_position_embeddings", "max_sequence_length", "seq_length", "n_positions")
    rs = config.get("rope_scaling")
    if isinstance(rs, dict):
        factor, orig = rs.get("factor"), rs.get("original_max_position_embeddings")
        if isinstance(factor, (int, float)) and isinstance(orig, (int, float)) and factor > 1:
            ctx = max(ctx or 0, int(orig * factor))
    return ctx


def precision_of(config: dict[str, Any]) -> str:
    """The checkpoint precision, a recipes precision name (``bf16``, ``fp8``, ``int4``, …)."""
    q = config.get("quantization_config")
    if isinstance(q, dict):
        method = str(q.get("quant_method", "")).lower()
        algo = str(q.get("quant_algo", "")).lower()
        if method == "mxfp4":
            return "mxfp4"
        if "fp4" in method or "fp4" in algo:
            return "nvfp4"
        if method == "fp8" or "fp8" in algo:
            return "fp8"
        bits = q.get("bits") or q.get("w_bit") or q.get("weight_bits")
        if isinstance(bits, int):
            return {4: "int4", 8: "int8"}.get(bits, "int4")
    dtype = str(config.get("torch_dtype") or config.get("dtype") or _text_config(config).get("torch_dtype")
                or "bfloat16").lower()
    return {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32",
            "float": "fp32"}.get(dtype, "fp8" if "float8" in dtype else "bf16")


def vram_minimum_gb(params: int, precision: str) -> int:
    """``ceil(params × bytes_per_param(precision) × 1.2 / 1e9)`` — the load footprint in GB."""
    return math.ceil(params * BYTES_PER_PARAM.get(precision, 2.0) * VRAM_OVERHEAD / 1e9)


def _billions(n: int) -> str:
    return f"{n / 1e9:.1f}B" if n >= 1e9 else f"{n / 1e6:.0f}M"
