"""Model facts read from the model itself: its ``config.json`` and its safetensors metadata.

What the fit model (:mod:`.fit`, docs/fit.md §1) needs to know about a checkpoint, never guessed
from its name:

* **where**: :func:`.custom.find_config` — a local model directory, or the local Hugging Face cache
  through ``huggingface_hub.try_to_load_from_cache`` (offline, never a download). When neither has
  it, :class:`ConfigUnavailable` says so and names the command that fetches only the config:
  ``hf download MODEL config.json`` (the CLI current huggingface_hub ships).
* **the language model**: multimodal configs keep it under ``text_config`` / ``llm_config`` /
  ``language_config`` (:func:`.custom._text_config`); the checkpoint dtype and quantization stay
  top-level facts.
* **attention**: layers, attention heads, KV heads (``num_key_value_heads``, default the heads),
  head dim (``head_dim``, default hidden / heads). MLA (DeepSeek-V2/V3, Kimi: ``kv_lora_rank``)
  stores one latent of ``kv_lora_rank + qk_rope_head_dim`` per token per layer.
* **layer kinds**: ``layer_types`` (``full_attention`` / ``sliding_attention`` / ``linear_attention``
  / ``mamba``) as vLLM's model code reads it; Gemma-2 (no ``layer_types``) slides on even layers,
  Gemma-3 configs with ``sliding_window_pattern`` P keep every P-th layer full. A ``sliding_window``
  with no per-layer list applies to no layer in vLLM's Llama/Mistral code (vLLM 0.32,
  ``vllm/model_executor/models/llama.py``), so it is recorded but not applied.
* **MoE**: routed experts and experts per token (:data:`.custom._EXPERT_KEYS`).
* **weights**: bytes from ``model.safetensors.index.json`` ``metadata.total_size``, else the sum of
  the tensors' byte ranges in each ``*.safetensors`` header (8-byte length + JSON; the weights are
  never read); None when no weight file is at hand (the fit model then estimates from the
  parameter count, :func:`.custom.estimate_parameters`).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vllm_deploy_wizard.common.errors import SelectionError

from . import custom

#: Bytes per element of a torch dtype name as configs and ``--kv-cache-dtype`` spell them.
DTYPE_BYTES = {"float32": 4, "float": 4, "fp32": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "half": 2,
               "fp16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_inc": 1, "fp8_ds_mla": 1,
               "int8": 1, "uint8": 1}
#: Layer kinds (docs/fit.md §1): attention over every token, over a window, or a fixed-size state.
FULL, SLIDING, STATE = "full", "sliding", "state"
_STATE_TYPES = ("linear_attention", "mamba", "mamba2", "gated_deltanet", "linear")


class ConfigUnavailable(SelectionError):
    """No ``config.json`` for the model here; the message names the places tried and the fetch command."""


@dataclass(frozen=True)
class ModelFacts:
    """What one checkpoint is, per its config (units: counts, bytes; dims in elements)."""

    model: str
    source: str
    """Path of the ``config.json`` read."""
    architectures: tuple[str, ...]
    model_type: str
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    vocab_size: int
    dtype: str
    """Checkpoint compute dtype (``bfloat16``, ``float16``, ``float32``); the default KV cache dtype."""
    precision: str
    """Weight precision name (:func:`.custom.precision_of`: ``bf16``, ``fp8``, ``int4``, …)."""
    quant_method: str | None
    intermediate_size: int
    layer_kinds: tuple[str, ...]
    """One of :data:`FULL`, :data:`SLIDING`, :data:`STATE` per decoder layer."""
    sliding_window: int | None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    experts: int = 0
    experts_per_token: int = 0
    expert_intermediate_size: int = 0
    """Width of one routed expert's MLP (``moe_intermediate_size``, else ``intermediate_size``)."""
    dense_layers: int = 0
    """Leading layers with a dense MLP in a MoE model (``first_k_dense_replace``)."""
    parameters: int = 0
    active_parameters: int = 0
    weight_bytes: int | None = None
    """Checkpoint bytes from the safetensors metadata; None when no weight file was found."""
    weight_source: str | None = None
    context_length: int | None = None
    multimodal: bool = False
    tie_word_embeddings: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def is_mla(self) -> bool:
        """True for DeepSeek-style multi-head latent attention (``kv_lora_rank`` set)."""
        return bool(self.kv_lora_rank)

    @property
    def is_moe(self) -> bool:
        """True when the config routes tokens over more than one expert."""
        return self.experts > 1

    @property
    def kv_layers(self) -> int:
        """Layers that keep a per-token KV cache (full + sliding)."""
        return sum(1 for k in self.layer_kinds if k != STATE)

    def to_json(self) -> dict[str, Any]:
        """The facts as a JSON-ready dict (the ``fit.model`` block of ``plan --json``)."""
        out = {k: getattr(self, k) for k in (
            "model", "source", "model_type", "layers", "hidden_size", "attention_heads", "kv_heads",
            "head_dim", "vocab_size", "dtype", "precision", "quant_method", "sliding_window",
            "kv_lora_rank", "qk_rope_head_dim", "experts", "experts_per_token", "parameters",
            "active_parameters", "weight_bytes", "weight_source", "context_length", "multimodal")}
        out["architectures"] = list(self.architectures)
        out["layer_kinds"] = {k: self.layer_kinds.count(k) for k in (FULL, SLIDING, STATE) if k in self.layer_kinds}
        return out


def fetch_command(model: str) -> str:
    """The command that downloads only ``config.json`` of ``model`` into the local HF cache."""
    return f"hf download {model} config.json"


def load_model_facts(model: str, *, cache_dir: str | Path | None = None) -> ModelFacts:
    """Facts of ``model`` (a local directory or an HF id in the local cache).

    Raises:
        ConfigUnavailable: no config.json found (message: places tried + :func:`fetch_command`).
        SelectionError: the config is not JSON or lacks the size fields (names the file and keys).
    """
    try:
        path = custom.find_config(model, cache_dir=cache_dir)
    except SelectionError as exc:
        text = str(exc).split(". Download it first")[0]
        local = custom.is_local_path(model)
        how = ("pass the folder that holds config.json" if local
               else f"fetch it with `{fetch_command(model)}` (config only, no weights)")
        raise ConfigUnavailable(f"{text}; {how}") from None
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SelectionError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(config, dict):
        raise SelectionError(f"{path}: expected a JSON object")
    weights, wsrc = weight_bytes(path.parent, model=model, cache_dir=cache_dir)
    return facts_from_config(config, model=model, source=str(path), weight_bytes=weights, weight_source=wsrc)


def facts_from_config(config: dict[str, Any], *, model: str, source: str = "config.json",
                      weight_bytes: int | None = None, weight_source: str | None = None) -> ModelFacts:
    """:class:`ModelFacts` from a parsed ``config.json`` (pure; see the module docstring for each rule).

    Raises:
        SelectionError: hidden size, layers, heads or vocab missing (names ``source`` and the keys).
    """
    text = custom._text_config(config)
    total, active = custom.estimate_parameters(text, source=source)
    get = custom._int
    h, layers = get(text, "hidden_size", "d_model", "n_embd"), get(text, "num_hidden_layers", "num_layers", "n_layer")
    heads = get(text, "num_attention_heads", "n_head")
    assert h and layers and heads, "estimate_parameters raises SelectionError when any of them is missing"
    kv_heads = get(text, "num_key_value_heads", "num_kv_heads", default=heads)
    head_dim = get(text, "head_dim", default=None) or h // heads
    dtype = str(config.get("torch_dtype") or config.get("dtype") or text.get("torch_dtype")
                or text.get("dtype") or "bfloat16").lower().replace("torch.", "")
    quant = config.get("quantization_config") or text.get("quantization_config")
    experts = next((text[k] for k in custom._EXPERT_KEYS if isinstance(text.get(k), int) and text[k] > 1), 0)
    per_tok = (get(text, "num_experts_per_tok", "num_experts_per_token", "moe_top_k", "top_k", default=0)
               if experts else 0)
    kinds, window, notes = _layer_kinds(text, layers)
    return ModelFacts(
        model=model, source=str(source), architectures=tuple(config.get("architectures") or ()),
        model_type=str(text.get("model_type") or config.get("model_type") or "unknown"),
        layers=layers, hidden_size=h, attention_heads=heads, kv_heads=kv_heads or heads, head_dim=head_dim,
        vocab_size=get(text, "vocab_size") or 0, dtype=dtype, precision=custom.precision_of(config),
        quant_method=str(quant.get("quant_method")) if isinstance(quant, dict) and quant.get("quant_method") else None,
        intermediate_size=get(text, "intermediate_size", "ffn_hidden_size", default=4 * h),
        layer_kinds=kinds, sliding_window=window,
        kv_lora_rank=get(text, "kv_lora_rank"), qk_rope_head_dim=get(text, "qk_rope_head_dim", default=64)
        if text.get("kv_lora_rank") else None,
        experts=experts, experts_per_token=per_tok,
        expert_intermediate_size=get(text, "moe_intermediate_size", "expert_intermediate_size",
                                     default=get(text, "intermediate_size", default=4 * h)) if experts else 0,
        dense_layers=get(text, "first_k_dense_replace", default=0) or 0,
        parameters=total, active_parameters=active,
        weight_bytes=weight_bytes, weight_source=weight_source, context_length=custom.context_length(text),
        multimodal=text is not config, tie_word_embeddings=bool(text.get("tie_word_embeddings",
                                                                         config.get("tie_word_embeddings"))),
        notes=tuple(notes),
    )


def _layer_kinds(text: dict[str, Any], layers: int) -> tuple[tuple[str, ...], int | None, list[str]]:
    """Per-layer kinds, the sliding window, and notes on what was assumed (module docstring)."""
    window = custom._int(text, "sliding_window") or None
    notes: list[str] = []
    types = text.get("layer_types")
    if isinstance(types, list) and len(types) >= layers:
        kinds = []
        for t in types[:layers]:
            t = str(t)
            kinds.append(SLIDING if t.startswith("sliding") and window else
                         STATE if t in _STATE_TYPES or "linear" in t or "mamba" in t else FULL)
        return tuple(kinds), window, notes
    pattern = custom._int(text, "sliding_window_pattern")
    if window and text.get("model_type") == "gemma2":
        return tuple(SLIDING if i % 2 == 0 else FULL for i in range(layers)), window, notes
    if window and pattern and pattern > 1:
        return tuple(FULL if (i + 1) % pattern == 0 else SLIDING for i in range(layers)), window, notes
    if window:
        notes.append(f"sliding_window {window} without layer_types: every layer counted as full attention "
                     "(vLLM 0.32 applies a window only to layers layer_types marks sliding)")
    return tuple(FULL for _ in range(layers)), window, notes


def weight_bytes(folder: Path, *, model: str | None = None,
                 cache_dir: str | Path | None = None) -> tuple[int | None, str | None]:
    """``(bytes, source)`` of a checkpoint's weights from safetensors metadata next to its config:
    the index's ``metadata.total_size``, else the summed tensor byte ranges of every
    ``*.safetensors`` header. ``(None, None)`` when neither is readable."""
    index = folder / "model.safetensors.index.json"
    if not index.is_file() and model and model.count("/") == 1 and not custom.is_local_path(model):
        try:
            from .hf_cache import cached_file

            hit = cached_file(model, "model.safetensors.index.json", cache_dir=cache_dir)
            index = Path(hit) if isinstance(hit, str) else index
        except Exception:  # an invalid id: no index
            pass
    if index.is_file():
        try:
            size = json.loads(index.read_text(encoding="utf-8")).get("metadata", {}).get("total_size")
            if isinstance(size, (int, float)) and size > 0:
                return int(size), str(index)
        except (OSError, ValueError):
            pass
    total, files = 0, sorted(folder.glob("*.safetensors"))
    for f in files:
        size = safetensors_payload_bytes(f)
        if size is None:
            return None, None
        total += size
    return (total, str(files[0]) if len(files) == 1 else f"{folder}/*.safetensors") if files else (None, None)


def safetensors_payload_bytes(path: Path) -> int | None:
    """Bytes of the tensors in one safetensors file, from its header only (None when unreadable)."""
    try:
        with open(path, "rb") as fh:
            (n,) = struct.unpack("<Q", fh.read(8))
            if n <= 0 or n > 100_000_000:
                return None
            header = json.loads(fh.read(n))
    except (OSError, ValueError, struct.error):
        return None
    ends = [v["data_offsets"][1] - v["data_offsets"][0] for k, v in header.items()
            if k != "__metadata__" and isinstance(v, dict) and "data_offsets" in v]
    return sum(ends)
