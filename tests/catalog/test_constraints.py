"""``options(catalog, selection)``: every constraint rule of docs/constraints.md §3 (plus the §3.2
decisions and the seed gates of §4), each pinned with a recipe that triggers it and its reason text.

Snapshot rules use real recipes from ``../shared/recipes-snapshot``; where no snapshot recipe carries
the field (K2 ``unsupported``, M4 ``kv_cache_strategy_hardware``, F2 feature companions, V1) the test
says so and derives a recipe from a real one with ``model_copy``. Seed rules use the bundled catalog.
"""

from __future__ import annotations

import pytest

from vllm_deploy_wizard.catalog.constraints import AVAILABLE, DISABLED, HIDDEN, options, visible
from vllm_deploy_wizard.catalog.defaults import (
    default_nodes,
    default_pool_nodes,
    pick_default_hardware,
    recommend_strategy,
)
from vllm_deploy_wizard.catalog.loader import load_catalog
from vllm_deploy_wizard.catalog.models import Companion, Recipe
from vllm_deploy_wizard.catalog.selection import Selection
from vllm_deploy_wizard.common.errors import SelectionError

LLAMA = "meta-llama/Llama-3.3-70B-Instruct"
KIMI = "moonshotai/Kimi-K3"
DSV4 = "deepseek-ai/DeepSeek-V4-Flash"
MUSE = "meta-models/Muse-Glimmer-30B"


@pytest.fixture(scope="module")
def snap(shared):
    return load_catalog(shared / "recipes-snapshot")


@pytest.fixture(scope="module")
def bundled():
    return load_catalog()


def state(choice):
    return (choice.state, choice.reason)


def with_recipe(cat, recipe: Recipe):
    """A shallow copy of ``cat`` whose recipe map also holds ``recipe`` (same index rules)."""
    from vllm_deploy_wizard.catalog.loader import Catalog

    recipes = {**cat.recipes, recipe.hf_id: recipe}
    return Catalog(cat.taxonomy, cat.strategies, cat.kv_stores, recipes, source=cat.source)


# ----------------------------------------------------------------------------------- hardware


def test_h1_restricted_profile_hidden_unless_declared(snap):
    opts = options(snap, {"model": LLAMA})
    assert opts.choice("hardware", "trillium").state == AVAILABLE  # restricted, listed in meta.hardware
    assert opts.choice("hardware", "ironwood").state == HIDDEN  # restricted, not listed


def test_h1_detected_profile_is_always_offered(snap):
    opts = options(snap, {"model": LLAMA}, detected_profile="ironwood")
    assert opts.choice("hardware", "ironwood").state != HIDDEN
    assert opts.resolved["hardware"] == "ironwood"  # detection lands on the detected profile
    via_selection = options(snap, {"model": LLAMA, "detected_profile": "rtx_pro_6000"})
    assert via_selection.choice("hardware", "rtx_pro_6000").state != HIDDEN


def test_h2_unsupported_hardware_disabled_with_reason(snap):
    c = options(snap, {"model": DSV4}).choice("hardware", "mi300x")
    assert state(c) == (DISABLED, "Not yet supported on MI300X — this model doesn't run here today, "
                                  "may be enabled in a future release")


def test_h3_no_variant_runs_on_hardware(snap):
    # RTX 5090: 32 GB, not scalable; Llama 70B needs 170/84/42 GB in its three variants.
    c = options(snap, {"model": LLAMA}, detected_profile="rtx_5090").choice("hardware", "rtx_5090")
    assert state(c) == (DISABLED, "No variant of this model currently runs on RTX 5090")


def test_h4_hardware_that_switches_the_variant(snap):
    # nvfp4 can't run on H200 (P1); BF16 (170 GB) is the largest-VRAM variant that can.
    c = options(snap, {"model": LLAMA, "variant": "nvfp4", "hardware": "b200"}).choice("hardware", "h200")
    desc = snap.taxonomy.hardware_profiles["h200"].description
    assert c.state == AVAILABLE
    assert c.warning == f"{desc}\n\nSelecting H200 also switches Variant to BF16."


def test_h5_omni_variant_allowlist_and_precision(snap):
    ltx = "Lightricks/LTX-2.5-Diffusers"
    c = options(snap, {"model": ltx, "variant": "fp8", "hardware": "h200"}).choice("hardware", "mi300x")
    assert c.state == DISABLED
    assert c.reason.startswith("FP8 is only supported on H100, H200, B200")
    opts = options(snap, {"model": ltx, "variant": "fp8", "hardware": "h200"})
    assert opts.strategy == [] and opts.features == []  # omni: no strategy/feature rows (§2.12)


def test_p1_precision_constraint_drives_default_hardware(snap):
    llama = snap.recipe(LLAMA)
    assert pick_default_hardware(snap, llama, "default") == "h200"
    assert pick_default_hardware(snap, llama, "nvfp4") == "b200"  # Blackwell-only precision
    inkling = snap.recipe("thinkingmachines/Inkling")
    assert pick_default_hardware(snap, inkling, "mxfp4") == "mi300x"  # precision_hardware brand AMD


# ----------------------------------------------------------------------------------- variants


def test_v1_variant_no_hardware_can_run(snap):
    # No snapshot variant is unrunnable everywhere: restrict Llama's nvfp4 to an AMD profile.
    llama = snap.recipe(LLAMA)
    nv = llama.variants["nvfp4"].model_copy(update={"supported_hardware": ["mi300x"]})
    fake = llama.model_copy(update={"hf_id": "fixture/Llama-v1", "hf_org": "fixture", "hf_repo": "Llama-v1",
                                    "variants": {**llama.variants, "nvfp4": nv}})
    c = options(with_recipe(snap, fake), {"model": "fixture/Llama-v1"}).choice("variant", "nvfp4")
    assert state(c) == (DISABLED, "No currently supported hardware can run NVFP4")


def test_v2_variant_that_switches_hardware(snap):
    c = options(snap, {"model": LLAMA, "hardware": "h200"}).choice("variant", "nvfp4")
    assert c.state == AVAILABLE
    assert c.warning == ("NVIDIA NVFP4 quantized weights for Blackwell GPUs\n\nSelecting this variant also "
                         "switches Hardware to B200.\n\nMin 42 GB to load — add KV cache for serving. "
                         "Scale out via multi-node if needed.")


def test_v3_variant_too_big_for_unscalable_hardware(snap):
    opts = options(snap, {"model": MUSE, "hardware": "rtx_5090"})
    assert state(opts.choice("variant", "default")) == (DISABLED, "Unavailable on the selected hardware.")
    assert opts.choice("variant", "nvfp4").state == AVAILABLE


# ----------------------------------------------------------------------------------- strategies


def test_s1_kv_store_never_on_strategy_row(snap):
    ids = {c.id for c in options(snap, {"model": LLAMA}).strategy}
    assert not ids & set(snap.kv_stores)


def test_s2_node_count_hides_single_or_multi(snap):
    one = options(snap, {"model": DSV4, "hardware": "b200", "nodes": 1})
    two = options(snap, {"model": DSV4, "hardware": "b200", "nodes": 2})
    assert one.choice("strategy", "multi_node_dep").state == HIDDEN
    assert one.choice("strategy", "single_node_tep").state == AVAILABLE
    assert two.choice("strategy", "single_node_tep").state == HIDDEN
    assert two.choice("strategy", "multi_node_dep").state == AVAILABLE
    assert one.choice("strategy", "pd_cluster").state == two.choice("strategy", "pd_cluster").state == AVAILABLE


def test_s3_strategy_not_listed_is_hidden(snap):
    # Llama lists single_node_tp / multi_node_tp / multi_node_tp_pp only.
    opts = options(snap, {"model": LLAMA, "nodes": 2})
    assert opts.choice("strategy", "multi_node_tp_dp").state == HIDDEN
    assert opts.choice("strategy", "pd_cluster").state == HIDDEN


def test_s4_unreachable_under_strategy_min_gpus(snap):
    # Kimi-K3: h100 floor 32 GPUs → single_node_tp (8 GPUs, no scale-out) unreachable.
    opts = options(snap, {"model": KIMI, "hardware": "h100"})
    assert opts.choice("strategy", "single_node_tp").state == HIDDEN
    assert options(snap, {"model": KIMI, "hardware": "b300"}).choice("strategy", "single_node_tp").state == AVAILABLE


def test_s5_strategy_hardware_unsupported_and_opt_in(snap):
    h100 = options(snap, {"model": KIMI, "hardware": "h100", "nodes": 2})
    assert state(h100.choice("strategy", "multi_node_dep")) == (
        DISABLED, "Multi-Node Data + Expert Parallel isn't supported on H100 for this model.")
    # multi_node_tp_dp is not listed but granted `supported` on h200 only
    assert h100.choice("strategy", "multi_node_tp_dp").state == DISABLED
    h200 = options(snap, {"model": KIMI, "hardware": "h200", "nodes": 2})
    assert h200.choice("strategy", "multi_node_tp_dp").state == AVAILABLE


def test_s6_dense_model_gets_no_expert_parallel_strategies(snap):
    # §3.2 decision: hardware_match.architecture moe is enforced and shown with a reason.
    opts = options(snap, {"model": LLAMA})
    assert state(opts.choice("strategy", "single_node_dep")) == (DISABLED, "Data + Expert Parallel needs an MoE model")
    assert state(opts.choice("strategy", "single_node_tep")) == (
        DISABLED, "Tensor + Expert Parallel needs an MoE model")


def test_hardware_match_min_gpus_disables_tep_dep(snap):
    opts = options(snap, {"model": DSV4, "hardware": "h200", "gpus": 1, "nodes": 1})
    assert state(opts.choice("strategy", "single_node_dep")) == (
        DISABLED, "Data + Expert Parallel needs at least 2 GPUs; H200 has 1")
    assert opts.choice("strategy", "single_node_tp").state == AVAILABLE


def test_hardware_match_max_gpus_is_a_warning(snap):
    opts = options(snap, {"model": LLAMA, "hardware": "h200", "gpus": 16, "strategy": "single_node_tp"})
    c = opts.choice("strategy", "single_node_tp")
    assert c.state == AVAILABLE
    assert c.warning == "Tensor Parallel is declared for at most 8 GPUs per node; H200 has 16."
    assert c.warning in opts.warnings


def test_dpa_tp_needs_moe_in_seed_catalog(bundled):
    opts = options(bundled, {"model": "Qwen/Qwen3-32B", "hardware": "h200"})
    assert state(opts.choice("strategy", "single_node_dpa_tp")) == (DISABLED, "DPA+TP needs an MoE model")
    assert state(opts.choice("strategy", "single_node_dep")) == (DISABLED, "DEP needs an MoE model")


# ----------------------------------------------------------------------------------- nodes


def test_n1_no_multi_node_strategy(snap):
    c = options(snap, {"model": MUSE, "hardware": "h200"}).choice("nodes", "2")
    assert state(c) == (DISABLED, "This recipe does not declare a multi-node strategy. Fits in a single node.")


def test_n2_unscalable_hardware(snap):
    c = options(snap, {"model": LLAMA}, detected_profile="rtx_pro_6000").choice("nodes", "2")
    assert state(c) == (DISABLED,
                        "RTX Pro 6000 is a single-GPU workstation and can't be clustered into multiple nodes.")


def test_n3_intel_xpu(snap):
    c = options(snap, {"model": LLAMA}, detected_profile="arc_pro_b60").choice("nodes", "2")
    assert state(c) == (DISABLED, "Multi-node clustering isn't validated on Intel XPU — serve single-node with the "
                                  "Docker image.")


def test_n4_and_n5_variant_too_big_for_one_node(snap):
    opts = options(snap, {"model": KIMI, "hardware": "h100", "strategy": "multi_node_tp", "nodes": 1})
    assert state(opts.choice("nodes", "1")) == (
        DISABLED, "Single-node can't fit this variant on H100 (1680GB > 640GB) — use multi-node")
    assert [c.id for c in opts.nodes] == ["1", "2", "4"]  # 1, 2 and the floor 32/8 = 4 (§2.14)
    assert ("Insufficient VRAM for single-node: H100 provides 8×80G = 640GB, but this variant needs at least "
            "1680GB for weights alone (KV cache requires more). Switch to a higher-memory GPU, use multi-node TP, "
            "or lower --max-model-len to shrink the KV cache footprint.") in opts.warnings


def test_n5_on_a_cpu_profile_speaks_of_ram_not_vram(snap):
    """A CPU node's "devices" are NUMA nodes and its memory is host RAM (issue #20): the N5 banner and
    the plan's N5 note say RAM and a machine with more of it, not VRAM and a higher-memory GPU."""
    from vllm_deploy_wizard.catalog import Selection, synthesize

    sel = {"model": "Qwen/Qwen3-Coder-480B-A35B-Instruct", "hardware": "xeon6", "strategy": "single_node_tp"}
    assert ("Insufficient RAM for single-node: Xeon 6 provides 4×256G = 1024GB of RAM, but this variant needs at "
            "least 1152GB for weights alone (KV cache requires more). Switch to a machine with more RAM, use "
            "multi-node TP, or lower --max-model-len to shrink the KV cache footprint.") in options(snap, sel).warnings
    notes = synthesize(snap, Selection(**sel)).notes
    assert ("warning: Insufficient RAM for single-node: Xeon 6 (xeon6) provides 4×256G = 1024GB of RAM, but this "
            "variant needs at least 1152GB for weights alone (rule N5)") in notes
    assert not any("VRAM" in n or "GPU" in n for n in [*notes, *options(snap, sel).warnings] if "Insufficient" in n)


def test_n5_not_raised_for_multi_node(snap):
    opts = options(snap, {"model": KIMI, "hardware": "h100", "nodes": 4, "strategy": "multi_node_tp"})
    assert not any(w.startswith("Insufficient VRAM") for w in opts.warnings)


def test_gpus_override_scales_node_vram(snap):
    # 2 × H200 (141 GB each) = 282 GB node: Llama BF16 (170 GB) still fits; 1 device doesn't.
    assert options(snap, {"model": LLAMA, "hardware": "h200", "gpus": 2}).choice("nodes", "1").state == AVAILABLE
    assert state(options(snap, {"model": LLAMA, "hardware": "h200", "gpus": 1}).choice("nodes", "1")) == (
        DISABLED, "Single-node can't fit this variant on H200 (170GB > 141GB) — use multi-node")


def test_tp_hint_when_recipe_uses_part_of_the_node(snap):
    opts = options(snap, {"model": LLAMA, "variant": "fp8", "hardware": "h200"})
    assert ("This recipe runs on 1 of 8 GPUs on the selected node — add --tensor-parallel-size N via Advanced to "
            "scale up.") in opts.warnings
    full = options(snap, {"model": LLAMA, "variant": "default", "hardware": "h100"})
    assert not any(w.startswith("This recipe runs on") for w in full.warnings)


def test_tp_hint_only_below_the_device_count_and_warning_above_it_on_cpu(snap):
    # Llama-3.3-70B on Xeon 6: the recipe's TP 8 on 4 NUMA nodes (CPU TP is not clamped, §2.2)
    over = options(snap, {"model": LLAMA, "hardware": "xeon6"})
    assert not any(w.startswith("This recipe runs on") for w in over.warnings)
    assert any(w.startswith("TP 8 exceeds the 4 device(s) per node of Xeon 6") for w in over.warnings)
    one = options(snap, {"model": LLAMA, "hardware": "xeon6", "gpus": 1})
    assert not any(w.startswith("This recipe runs on 1 of 1") for w in one.warnings)
    assert any(w.startswith("TP 8 exceeds the 1 device(s) per node of Xeon 6") for w in one.warnings)
    under = options(snap, {"model": "meta-llama/Llama-3.1-8B-Instruct", "hardware": "xeon6"})
    assert ("This recipe runs on 2 of 4 CPU NUMA node(s) on the selected node — add --tensor-parallel-size N "
            "via Advanced to scale up.") in under.warnings
    assert not any(w.startswith("TP ") for w in under.warnings)


# ----------------------------------------------------------------------------------- PD


def test_pd1_pool_modes_from_strategies_and_tips(snap):
    opts = options(snap, {"model": DSV4, "hardware": "gb200", "strategy": "pd_cluster"})
    assert [(c.id, c.state) for c in opts.pd_modes["prefill"]] == [("tp", AVAILABLE), ("tep", AVAILABLE),
                                                                    ("dep", AVAILABLE)]
    assert opts.pd_modes["decode"][0].description.startswith("Tensor parallel — one engine sharded")
    assert opts.kv_instances_visible is False  # M5


def test_pd1_single_pool_mode_hides_the_pills(snap):
    opts = options(snap, {"model": "thinkingmachines/Inkling", "hardware": "b200", "strategy": "pd_cluster"})
    assert all(c.state == HIDDEN for c in opts.pd_modes["prefill"])  # pool_modes: [dep] only


def test_pd_default_pool_nodes(snap):
    llama, p = snap.recipe(DSV4), snap.taxonomy.hardware_profiles["gb200"]
    need = llama.variants["default"].vram_minimum_gb
    expected = max(1, -(-int(need) // int(p.vram_gb)))
    assert default_pool_nodes(llama, "prefill", "default", "gb200", p) >= expected


# ----------------------------------------------------------------------------------- KV offload


def test_k1_and_m1_intel_xpu(snap):
    opts = options(snap, {"model": LLAMA}, detected_profile="arc_pro_b60")
    assert state(opts.choice("kv_offload", "simple")) == (
        DISABLED, "Simple (CPU offload) isn't validated on Intel XPU — serve directly with the Docker image.")
    assert state(opts.choice("kv_offload", "mooncake")) == (
        DISABLED, "Mooncake isn't validated on Intel XPU — serve directly with the Docker image.")


def test_k2_marked_unsupported(snap):
    # No snapshot recipe marks an option unsupported (all 46 say verified): flip Llama's entry.
    llama = snap.recipe(LLAMA)
    fake = llama.model_copy(update={"hf_id": "fixture/Llama-k2", "hf_org": "fixture", "hf_repo": "Llama-k2",
                                    "kv_offload_support": {"offloading_cpu": "verified", "simple": "unsupported"}})
    opts = options(with_recipe(snap, fake), {"model": "fixture/Llama-k2", "hardware": "h200"})
    c = opts.choice("kv_offload", "simple")
    assert state(c) == (DISABLED, "Simple (CPU offload) is marked unsupported for this recipe.")


def test_k3_requires_opt_in_and_k7_group_pill(snap):
    opts = options(snap, {"model": KIMI, "hardware": "b300"})
    reason = ("CPU DRAM only is not enabled for this recipe yet. It stays off until the recipe records a verified "
              "run under kv_offload_support.")
    assert state(opts.kv_offload_members["offloading"][0]) == (DISABLED, reason)
    assert state(opts.choice("kv_offload", "offloading")) == (DISABLED, reason)  # K7: first member's reason
    llama = options(snap, {"model": LLAMA, "hardware": "h200"})
    assert llama.choice("kv_offload", "offloading").state == AVAILABLE


def test_k4_brand_and_m2_mooncake_brand(snap):
    opts = options(snap, {"model": LLAMA, "hardware": "trillium"})
    assert state(opts.kv_offload_members["offloading"][0]) == (
        DISABLED,
        "CPU DRAM only needs a CUDA, ROCm or XPU device — not available on Google TPU v6e (Trillium) backends.")
    assert state(opts.choice("kv_offload", "mooncake")) == (
        DISABLED, "Mooncake's transfer engine ships CUDA and ROCm builds only — not available on Google TPU v6e "
                  "(Trillium) backends.")


def test_k5_pd_owns_kv_transfer_config(snap):
    opts = options(snap, {"model": DSV4, "hardware": "gb200", "strategy": "pd_cluster"})
    assert state(opts.choice("kv_offload", "lmcache")) == (
        DISABLED, "LMCache can't compose with PD cluster, which owns --kv-transfer-config. "
                  "(Mooncake composes with PD instead.)")
    assert opts.choice("kv_offload", "mooncake").state == AVAILABLE


def test_k6_strategy_allowlist_and_dropped_option_warning(snap):
    opts = options(snap, {"model": KIMI, "hardware": "b300", "nodes": 2, "strategy": "multi_node_tp",
                          "kv_offload": "lmcache"})
    reason = "LMCache works with: Tensor Parallel, Tensor + Expert Parallel, Data + Expert Parallel."
    assert state(opts.choice("kv_offload", "lmcache")) == (DISABLED, reason)
    assert f"KV offload LMCache is off: {reason}" in opts.warnings


def test_kv_row_order(snap):
    ids = [c.id for c in options(snap, {"model": LLAMA}).kv_offload]
    assert ids == ["none", "simple", "offloading", "mooncake", "lmcache"]  # §2.9 row order


def test_m3_unscalable_hardware(snap):
    opts = options(snap, {"model": MUSE, "hardware": "rtx_5090"})
    assert state(opts.choice("kv_offload", "mooncake")) == (
        DISABLED, "RTX 5090 is a single-GPU workstation and can't run a multi-node KV-store deployment.")


def test_m4_kv_cache_strategy_hardware(snap):
    # No snapshot recipe carries kv_cache_strategy_hardware (0 of 173): opt Llama out on H200.
    llama = snap.recipe(LLAMA)
    one = llama.model_copy(update={"hf_id": "fixture/m4a", "hf_org": "fixture", "hf_repo": "m4a",
                                   "kv_cache_strategy_hardware": {
                                       "kv_store_centralized_mooncake": {"h200": "unsupported"}}})
    both = llama.model_copy(update={"hf_id": "fixture/m4b", "hf_org": "fixture", "hf_repo": "m4b",
                                    "kv_cache_strategy_hardware": {k: {"h200": "unsupported"} for k in snap.kv_stores}})
    cat = with_recipe(with_recipe(snap, one), both)
    partly = options(cat, {"model": "fixture/m4a", "hardware": "h200"})
    assert partly.choice("kv_offload", "mooncake").state == AVAILABLE
    assert state(partly.choice("mooncake_topology", "kv_store_centralized_mooncake")) == (
        DISABLED, "Centralized KV Store (Mooncake) is not supported on H200.")
    fully = options(cat, {"model": "fixture/m4b", "hardware": "h200"})
    assert state(fully.choice("kv_offload", "mooncake")) == (DISABLED, "Mooncake KV store is not supported on H200.")


# ----------------------------------------------------------------------------------- features


def test_f1_feature_strategy_allowlist(snap):
    opts = options(snap, {"model": KIMI, "hardware": "b300", "nodes": 2, "strategy": "multi_node_tp"})
    assert state(opts.choice("features", "decode_context_parallelism")) == (DISABLED,
                                                                            "Not available with this strategy")
    assert opts.choice("features", "spec_decoding").state == AVAILABLE


def test_f2_companion_feature_under_mooncake(snap):
    # No snapshot feature has a companion (0 in corpus): give Llama-like one.
    muse = snap.recipe(MUSE)
    feat = muse.features["tool_calling"].model_copy(update={"companion": Companion(label="Sidecar", command="sidecar")})
    fake = muse.model_copy(update={"hf_id": "fixture/f2", "hf_org": "fixture", "hf_repo": "f2",
                                   "features": {**muse.features, "tool_calling": feat}})
    opts = options(with_recipe(snap, fake), {"model": "fixture/f2", "hardware": "h200",
                                             "kv_offload": "kv_store_distributed_mooncake"})
    assert state(opts.choice("features", "tool_calling")) == (
        DISABLED, "Needs its companion process, which isn't rendered inside a Mooncake deployment — set KV Offload "
                  "to Off to use it.")


def test_f3_f4_mode_gates(snap):
    # DeepSeek-V4-Flash spec_decoding: mtp only on fp8/nvfp4, dspark only on default/dspark (F4) — so
    # each variant keeps one mode and the mode row is hidden (needs >= 2).
    default = options(snap, {"model": DSV4, "hardware": "b200", "variant": "default"})
    assert [(c.id, c.state) for c in default.feature_modes["spec_decoding"]] == [("mtp", HIDDEN), ("dspark", HIDDEN)]
    # F3 (mtp unsupported on rtx_pro_6000_8x) shows once both modes are offered: open dspark to fp8.
    recipe = snap.recipe(DSV4)
    feat = recipe.features["spec_decoding"]
    dspark = feat.modes["dspark"].model_copy(update={"variants": None})
    fake = recipe.model_copy(update={"hf_id": "fixture/f3", "hf_org": "fixture", "hf_repo": "f3", "features": {
        **recipe.features, "spec_decoding": feat.model_copy(update={"modes": {**feat.modes, "dspark": dspark}})}})
    opts = options(with_recipe(snap, fake), {"model": "fixture/f3", "variant": "fp8"},
                   detected_profile="rtx_pro_6000_8x")
    modes = {c.id: state(c) for c in opts.feature_modes["spec_decoding"]}
    assert modes == {"mtp": (DISABLED, "Not supported on this hardware"), "dspark": (AVAILABLE, None)}


def test_feature_level_hardware_gate(snap):
    c = options(snap, {"model": MUSE, "hardware": "rtx_5090"}).choice("features", "spec_decoding")
    assert state(c) == (DISABLED, "Not supported on this hardware")  # §3.2: honoured like a mode gate


# ----------------------------------------------------------------------------------- install / advanced / badge


def test_i1_install_tabs(snap):
    assert [c.id for c in visible(options(snap, {"model": MUSE, "hardware": "h200"}).install_mode)] == ["docker"]
    assert [c.id for c in visible(options(snap, {"model": LLAMA, "hardware": "trillium"}).install_mode)] == ["docker"]
    ltx = options(snap, {"model": "Lightricks/LTX-2.5-Diffusers", "hardware": "h200"})
    assert [c.id for c in visible(ltx.install_mode)] == ["pip"]


def test_a1_advanced_presets(snap):
    dsv4 = {c.id: c for c in options(snap, {"model": DSV4, "hardware": "b200", "strategy": "single_node_tep"}).advanced}
    assert dsv4["no-enable-flashinfer-autotune"].state == AVAILABLE  # model.flashinfer_autotune
    assert dsv4["enable-ep-weight-filter"].state == AVAILABLE  # strategy ends in tep
    assert dsv4["decode-context-parallel-size"].state == HIDDEN
    assert dsv4["max-num-seqs"].args == ("--max-num-seqs", "256")
    k25 = {c.id: c for c in options(snap, {"model": "moonshotai/Kimi-K2.5", "hardware": "b200"}).advanced}
    assert k25["decode-context-parallel-size"].state == AVAILABLE  # supports_dcp
    llama = {c.id: c for c in options(snap, {"model": LLAMA}).advanced}
    assert llama["enable-ep-weight-filter"].state == HIDDEN


def test_b1_verified_badge(snap):
    assert options(snap, {"model": LLAMA, "hardware": "h200"}).badge == "Verified on NVIDIA H200"
    assert options(snap, {"model": LLAMA, "hardware": "h200", "kv_offload": "simple"}).badge is None
    assert options(snap, {"model": LLAMA, "hardware": "rtx_pro_6000_8x"},
                   detected_profile="rtx_pro_6000_8x").badge is None


# ----------------------------------------------------------------------------------- seed gates (bundled catalog)


PD_MOE = "Qwen/Qwen3-235B-A22B-Instruct-2507"


def test_seed_connector_brands(bundled):
    h200 = options(bundled, {"model": PD_MOE, "hardware": "h200", "strategy": "pd_cluster"})
    assert state(h200.choice("pd_connector", "moriio")) == (
        DISABLED, "MoRI-IO needs AMD hardware — not available on NVIDIA H200.")
    assert h200.choice("pd_connector", "mooncake").state == AVAILABLE
    mi = options(bundled, {"model": PD_MOE, "hardware": "mi300x", "strategy": "pd_cluster"})
    assert state(mi.choice("pd_connector", "mooncake")) == (
        DISABLED, "Mooncake needs NVIDIA hardware — not available on AMD MI300X.")
    assert state(mi.choice("pd_router", "dynamo")) == (
        DISABLED, "Dynamo needs NVIDIA hardware — not available on AMD MI300X.")


def test_seed_connector_routers(bundled):
    opts = options(bundled, {"model": PD_MOE, "hardware": "h200", "strategy": "pd_cluster", "router": "dynamo"})
    assert state(opts.choice("pd_connector", "mooncake")) == (DISABLED, "Mooncake works with: vLLM Router.")
    assert opts.choice("pd_connector", "nixl").state == AVAILABLE
    mc = options(bundled, {"model": PD_MOE, "hardware": "h200", "strategy": "pd_cluster", "connector": "mooncake"})
    assert state(mc.choice("pd_router", "smg")) == (DISABLED, "Mooncake works with: vLLM Router.")


def test_seed_smg_disables_dep_pools_and_kv(bundled):
    opts = options(bundled, {"model": PD_MOE, "hardware": "h200", "strategy": "pd_cluster", "router": "smg"})
    assert opts.choice("pd_router", "smg").state == AVAILABLE
    dep = [c for c in opts.pd_modes["prefill"] if c.id == "dep"][0]
    assert dep.state == DISABLED and dep.reason.startswith("SMG serves TP/TEP pools only")
    assert state(opts.choice("kv_offload", "mooncake")) == (
        DISABLED, "Mooncake can't compose with the SMG router, which runs PD without KV offload.")
    assert state(opts.choice("kv_offload", "simple")) == (
        DISABLED, "Simple (CPU offload) can't compose with the SMG router, which runs PD without KV offload.")


def test_seed_simple_composes_with_pd_roles(bundled):
    opts = options(bundled, {"model": PD_MOE, "hardware": "h200", "strategy": "pd_cluster"})
    assert opts.choice("kv_offload", "simple").state == AVAILABLE  # seed pd.roles overrides K5
    assert opts.choice("kv_offload", "lmcache").state == DISABLED


def test_seed_iaxl_gates(bundled):
    qwen = "Qwen/Qwen3-Next-80B-A3B-Instruct"  # bundled recipe without iaxl verification
    gb = options(bundled, {"model": qwen, "hardware": "gb200"})
    assert state(gb.choice("kv_offload", "iaxl")) == (DISABLED, "IAXL KVShrink is not supported on GB200 NVL4.")
    h200 = options(bundled, {"model": qwen, "hardware": "h200"})
    assert h200.choice("kv_offload", "iaxl").reason.startswith("IAXL KVShrink is not enabled for this recipe yet.")
    recipe = bundled.recipe(qwen)
    verified = recipe.model_copy(update={"hf_id": "fixture/iaxl", "hf_org": "fixture", "hf_repo": "iaxl",
                                         "kv_offload_support": {"iaxl": "verified"}})
    cat = with_recipe(bundled, verified)
    assert options(cat, {"model": "fixture/iaxl", "hardware": "h200"}).choice("kv_offload", "iaxl").state == AVAILABLE
    docker = options(cat, {"model": "fixture/iaxl", "hardware": "h200", "install_mode": "docker"})
    assert state(docker.choice("kv_offload", "iaxl")) == (
        DISABLED, "IAXL KVShrink can't run inside the Docker image — switch the install mode to pip.")


def test_seed_dpa_tp_takes_no_kv_option(bundled):
    recipe = bundled.recipe(PD_MOE)
    fake = recipe.model_copy(update={"hf_id": "fixture/dpa", "hf_org": "fixture", "hf_repo": "dpa",
                                     "compatible_strategies": [*recipe.compatible_strategies, "single_node_dpa_tp"]})
    opts = options(with_recipe(bundled, fake), {"model": "fixture/dpa", "hardware": "h200",
                                                "strategy": "single_node_dpa_tp"})
    assert opts.choice("strategy", "single_node_dpa_tp").state == AVAILABLE
    assert state(opts.choice("kv_offload", "simple")) == (
        DISABLED, "Simple (CPU offload) can't compose with DPA+TP, which takes no KV offload option.")
    assert state(opts.choice("kv_offload", "mooncake")) == (
        DISABLED, "Mooncake can't compose with DPA+TP, which takes no KV offload option.")


def test_seed_frontends_offered(bundled, snap):
    assert [c.id for c in options(bundled, {"model": "Qwen/Qwen3-32B"}).frontend] == ["rust", "python"]
    assert options(snap, {"model": LLAMA}).frontend == []  # a recipes checkout has no frontends


# ----------------------------------------------------------------------------------- defaults / API shape


def test_recommend_strategy_and_default_nodes(snap):
    dsv4, kimi = snap.recipe(DSV4), snap.recipe(KIMI)
    assert recommend_strategy(snap, dsv4, "b200", 1) == "single_node_tep"  # default_strategy
    # at 2 nodes the reference picks multi_node_tp (granted on dgx_spark_gb10 only); on B200 that is
    # unsupported (S5), so the wizard falls back to the first usable listed strategy
    assert recommend_strategy(snap, dsv4, "b200", 2) == "multi_node_dep"
    assert recommend_strategy(snap, dsv4, "dgx_spark_gb10", 2) == "multi_node_tp"
    assert recommend_strategy(snap, kimi, "b300", 1) == "single_node_tp"
    assert default_nodes(snap, kimi, "default", "h100") == 2  # 1680 GB > 640 GB and multi-node offered
    assert default_nodes(snap, snap.recipe(LLAMA), "default", "h200") == 1


def test_accepts_selection_model(snap):
    opts = options(snap, Selection(model=LLAMA.lower(), hardware="h100"))
    assert opts.resolved["model"] == LLAMA  # case-insensitive lookup, canonical id back


def test_unknown_hardware_names_close_ids(snap):
    with pytest.raises(SelectionError, match="did you mean 'h200'"):
        options(snap, {"model": LLAMA, "hardware": "h2000"})


def test_custom_model_gets_options(tmp_path, bundled):
    (tmp_path / "config.json").write_text(
        '{"architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "intermediate_size": 8192, '
        '"num_attention_heads": 16, "num_hidden_layers": 16, "vocab_size": 32000, "torch_dtype": "bfloat16"}')
    opts = options(bundled, {"model": str(tmp_path), "hardware": "h200"})
    assert opts.choice("strategy", "single_node_tp").state == AVAILABLE
    assert opts.choice("strategy", "single_node_tep").reason == "TEP needs an MoE model"


def test_every_snapshot_recipe_on_every_visible_profile(snap):
    """No combination raises, and every disabled choice carries a reason."""
    for hf_id in snap.recipes:
        base = options(snap, {"model": hf_id})
        for hw in visible(base.hardware):
            opts = options(snap, {"model": hf_id, "hardware": hw.id})
            for axis in ("hardware", "variant", "strategy", "nodes", "kv_offload", "features", "mooncake_topology"):
                for c in opts.axis(axis):
                    assert c.state in (AVAILABLE, DISABLED, HIDDEN)
                    assert (c.state == DISABLED) == bool(c.reason) or c.state == HIDDEN, (hf_id, hw.id, axis, c)


def test_text_only_and_encoder_parallel_exclusive(snap):
    both = options(snap, {"model": "moonshotai/Kimi-K2.5", "hardware": "b200",
                          "features": ["text_only", "encoder_parallel"]})
    assert "text_only and encoder_parallel are mutually exclusive — enabling one clears the other." in both.warnings
    one = options(snap, {"model": "moonshotai/Kimi-K2.5", "hardware": "b200", "features": ["text_only"]})
    assert not any("mutually exclusive" in w for w in one.warnings)


# ----------------------------------------------------------------------------- resolved modes


def _synthesis_ctx(cat, sel: Selection):
    """Synthesis' own resolution of ``sel`` (its context: the reference the TUI must match)."""
    from vllm_deploy_wizard.catalog import resolution

    return resolution.resolve(cat, sel)


def test_resolved_pd_modes_match_synthesis_defaults_requests_and_snaps(snap):
    """``resolved["pd_modes"]`` = the pool mode synthesis runs each role with (§2.6, §2.14): the
    default, a request, and a request outside the allowed modes snapped to the first allowed one."""
    cases = 0
    for hf_id, recipe in sorted(snap.recipes.items()):
        if "pd_cluster" not in recipe.compatible_strategies:
            continue
        for pd in (None, {"prefill": {"mode": "dep"}, "decode": {"mode": "tp"}},
                   {"prefill": {"mode": "tep"}, "decode": {"mode": "dep"}}):
            sel = Selection(model=hf_id, strategy="pd_cluster", nodes=2, pd=pd)
            ctx = _synthesis_ctx(snap, sel)
            opts = options(snap, sel)
            assert opts.resolved["pd_modes"] == {r: ctx.pools[r].mode for r in ("prefill", "decode")}, (hf_id, pd)
            cases += 1
    assert cases >= 9
    snapped = [hf for hf, r in snap.recipes.items() if "pd_cluster" in r.compatible_strategies
               and options(snap, Selection(model=hf, strategy="pd_cluster", nodes=2,
                                           pd={"prefill": {"mode": "dep"}})).resolved["pd_modes"]["prefill"] != "dep"]
    assert snapped, "some pd recipe must snap a DEP request (dense model) — otherwise the snap is untested"


def test_resolved_pd_modes_empty_without_pd(snap):
    assert options(snap, {"model": LLAMA, "hardware": "h200"}).resolved["pd_modes"] == {}


def test_resolved_feature_modes_match_synthesis(snap):
    """``resolved["feature_modes"]`` = ``resolveModeKey`` (§2.8) as synthesis runs it: default,
    variant ``default_modes``, a requested mode, and a request for a mode that is not open here."""
    checked = 0
    for hf_id, recipe in sorted(snap.recipes.items()):
        moded = {k: f for k, f in recipe.features.items() if f.modes}
        if not moded or recipe.is_omni:
            continue
        for variant in recipe.variants:
            requests = [{}, {k: list(f.modes)[-1] for k, f in moded.items()}, {k: "no-such-mode" for k in moded}]
            for req in requests:
                sel = Selection(model=hf_id, variant=variant, features=list(moded), feature_modes=req)
                ctx = _synthesis_ctx(snap, sel)
                got = options(snap, sel).resolved["feature_modes"]
                want = {k: m for k, f in moded.items() if (m := ctx.effective_mode(k, f)) is not None}
                assert got == want, (hf_id, variant, req)
                checked += 1
    assert checked >= 10


def test_preset_and_typed_advanced_arg_for_the_same_flag_warn_which_wins(snap):
    base = {"model": "meta-llama/Llama-3.1-8B-Instruct", "hardware": "h200"}
    typed_then_preset = options(snap, {**base, "advanced_args": ["--max-model-len", "256", "--max-model-len", "auto"]})
    assert ("--max-model-len is set by the preset max-model-len auto and typed in Advanced args "
            "(--max-model-len 256) — the last one wins: --max-model-len auto") in typed_then_preset.warnings
    preset_then_typed = options(snap, {**base, "advanced_args": ["--max-model-len", "auto", "--max-model-len=256"]})
    assert any(w.endswith("the last one wins: --max-model-len 256") for w in preset_then_typed.warnings)
    alone = options(snap, {**base, "advanced_args": ["--max-model-len", "auto", "--max-num-seqs", "8"]})
    assert not any("the last one wins" in w for w in alone.warnings)


@pytest.mark.parametrize("hardware, gpus", [("xeon6", 1), ("xeon6", None), ("h200", 1), ("h100", None)])
def test_resolved_strategy_is_never_a_disabled_choice_when_a_usable_one_exists(snap, hardware, gpus):
    # a 1-NUMA-node CPU box landed on TEP, disabled "TEP needs at least 2 GPUs; Xeon 6 has 1"
    for hf_id, recipe in snap.recipes.items():
        if recipe.is_omni:
            continue
        try:
            opts = options(snap, {"model": hf_id, "hardware": hardware, "gpus": gpus})
        except Exception:  # noqa: BLE001 — a recipe that cannot run there at all
            continue
        states = {c.id: c.state for c in opts.strategy}
        if any(s == AVAILABLE for s in states.values()):
            assert states.get(opts.resolved["strategy"]) == AVAILABLE, (hf_id, opts.resolved["strategy"], states)


def test_dpa_tp_is_offered_unverified_to_moe_models_within_its_hardware_match(bundled):
    """No recipe lists DPA+TP; its hardware_match (MoE, 2–8 GPUs, one node) offers it to every MoE
    model, gated only by the missing verified run: --allow-unverified plans it and marks it."""
    from vllm_deploy_wizard.catalog.planner import plan_selection

    sel = {"model": PD_MOE, "hardware": "h200", "nodes": 1}
    row = options(bundled, sel).choice("strategy", "single_node_dpa_tp")
    assert row.state == DISABLED and row.unverified and "does not list it" in row.reason
    lifted = options(bundled, {**sel, "allow_unverified": True}).choice("strategy", "single_node_dpa_tp")
    assert lifted.state == AVAILABLE and lifted.unverified
    planned = plan_selection(bundled, Selection(model=PD_MOE, hardware="h200", nodes=1,
                                                strategy="single_node_dpa_tp", allow_unverified=True))
    assert any("single_node_dpa_tp" in line and "rule S3" in line for line in planned.plan.unverified)
    assert not any("does not offer strategy" in n for n in planned.plan.notes)  # unverified, not a gate warning
    # outside the match: 16 GPUs on one node (max_gpus 8), a dense model, two nodes
    assert options(bundled, {**sel, "gpus": 16}).choice("strategy", "single_node_dpa_tp").state == HIDDEN
    assert options(bundled, {"model": "Qwen/Qwen3-32B", "hardware": "h200"}).choice(
        "strategy", "single_node_dpa_tp").state == DISABLED
    assert not options(bundled, {"model": "Qwen/Qwen3-32B", "hardware": "h200"}).choice(
        "strategy", "single_node_dpa_tp").unverified
