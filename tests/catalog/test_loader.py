"""Loading: the whole recipes snapshot, the seeds (bundled), both strategy formats (docs/synthesis.md §0, §5)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vllm_deploy_wizard.catalog import load_catalog
from vllm_deploy_wizard.catalog.loader import DATA_DIR
from vllm_deploy_wizard.common.errors import CatalogError, SelectionError


@pytest.fixture(scope="module")
def snapshot_dir(shared: Path) -> Path:
    return shared / "recipes-snapshot"


@pytest.fixture(scope="module")
def snap(snapshot_dir: Path):
    return load_catalog(snapshot_dir)


def test_every_snapshot_recipe_loads(snap, snapshot_dir: Path) -> None:
    files = sorted(snapshot_dir.glob("models/*/*.yaml"))
    assert len(files) == 143
    assert sorted(snap.recipes) == sorted(f"{f.parent.name}/{f.stem}" for f in files)
    for recipe in snap.recipes.values():
        assert "default" in recipe.variants, recipe.hf_id


def test_snapshot_strategies_and_kv_stores_are_separate(snap) -> None:
    assert set(snap.strategies) == {
        "single_node_tp", "single_node_tep", "single_node_dep", "multi_node_tp", "multi_node_tep",
        "multi_node_dep", "multi_node_tp_pp", "multi_node_tp_dp", "pd_cluster",
    }
    assert set(snap.kv_stores) == {"kv_store_distributed_mooncake", "kv_store_centralized_mooncake"}
    assert set(snap.strategy_map()) == set(snap.strategies) | set(snap.kv_stores)
    # a recipes checkout replaces the seeds: nothing seed-only leaks in (docs/plan-file.md §1)
    assert "single_node_dpa_tp" not in snap.strategies
    assert snap.taxonomy.frontends == {}
    assert "vr200" not in snap.taxonomy.hardware_profiles
    assert snap.strategies["pd_cluster"].connectors == {}


def test_dates_are_strings_and_env_values_stringified(snap) -> None:
    k3 = snap.recipes["moonshotai/Kimi-K3"]
    assert k3.meta.date_added == "2026-07-27"
    store = snap.kv_stores["kv_store_centralized_mooncake"]
    assert store.vllm.env["PYTHONHASHSEED"] == "0"  # an int in the YAML (§0)
    # JSON configs stay typed (docs/plan-file.md §3.1)
    assert store.mooncake_vllm_config.template["global_segment_size"] == 0


def test_null_keys_mean_absent_but_install_keeps_its_keys(snap) -> None:
    inkling = snap.recipes["thinkingmachines/Inkling"]
    assert inkling.model.install == {"docker": None, "pip": None}


def test_case_insensitive_lookup_and_variant_aliases(snap) -> None:
    assert snap.recipe("MOONSHOTAI/kimi-k3").hf_id == "moonshotai/Kimi-K3"
    recipe, variant = snap.resolve_model("redhatai/kimi-k3-nvfp4")
    assert (recipe.hf_id, variant) == ("moonshotai/Kimi-K3", "nvfp4")
    assert snap.resolve_model("moonshotai/Kimi-K3")[1] is None


def test_unknown_model_suggests_close_ids(snap) -> None:
    with pytest.raises(SelectionError, match=r"\(did you mean 'moonshotai/Kimi-K3'"):
        snap.recipe("moonshotai/Kimi-K33")


def test_bundled_catalog_is_the_seeds() -> None:
    cat = load_catalog()
    seed_tax = json.loads((DATA_DIR / "taxonomy.json").read_text())
    seed_strat = json.loads((DATA_DIR / "strategies.json").read_text())
    assert set(cat.taxonomy.hardware_profiles) == set(seed_tax["hardware_profiles"])
    assert set(cat.strategies) == set(seed_strat)
    assert cat.source == "bundled"
    h200 = cat.taxonomy.hardware_profiles["h200"]
    assert (h200.brand, h200.gen, h200.compute_arch, h200.gpu_count) == ("NVIDIA", "hopper", "sm90", 8)
    assert cat.taxonomy.frontends["rust"].env == {"VLLM_USE_RUST_FRONTEND": "1"}
    iaxl = cat.taxonomy.kv_offload["iaxl"]
    assert iaxl.docker is False and iaxl.setup and iaxl.env == {"TP_SIZE": "{tp_size}"}
    assert [s.note != "" for s in iaxl.hardware_overrides["cpu"].install] == [True] * 3
    pd = cat.strategies["pd_cluster"]
    assert set(pd.connectors) == {"nixl", "mooncake", "moriio"}
    assert pd.connectors["nixl"].default and pd.dynamo.launcher == "python3 -m dynamo.vllm"
    dpa = cat.strategies["single_node_dpa_tp"]
    assert dpa.remove_args == ["--enable-expert-parallel"] and dpa.kv_offload is False
    assert cat.strategies["single_node_dep"].companion.start == "after"


def test_seed_strategies_load_in_yaml_checkout_format(tmp_path: Path, snapshot_dir: Path) -> None:
    """Both formats: the seed map written as per-file YAML loads to the same strategies."""
    import yaml

    root = tmp_path / "recipes"
    shutil.copytree(snapshot_dir, root, ignore=shutil.ignore_patterns("models"))
    (root / "models").mkdir()
    seed = json.loads((DATA_DIR / "strategies.json").read_text())
    for name, body in seed.items():
        (root / "strategies" / f"{name}.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
    cat = load_catalog(root)
    bundled = load_catalog()
    assert cat.strategies["single_node_dpa_tp"] == bundled.strategies["single_node_dpa_tp"]
    assert cat.strategies["pd_cluster"] == bundled.strategies["pd_cluster"]


def test_every_problem_is_reported_with_file_and_line(tmp_path: Path, snapshot_dir: Path) -> None:
    root = tmp_path / "recipes"
    shutil.copytree(snapshot_dir, root, ignore=shutil.ignore_patterns("models"))
    (root / "models" / "acme").mkdir(parents=True)
    (root / "models" / "acme" / "broken.yaml").write_text("meta:\n  title: [unclosed\n")
    (root / "models" / "acme" / "novariants.yaml").write_text("meta: {title: x}\nmodel: {model_id: acme/x}\n")
    (root / "models" / "acme" / "badtype.yaml").write_text(
        "meta: {title: x}\nmodel:\n  model_id: acme/x\nvariants:\n  default:\n    precision: bf16\n"
        "    vram_minimum_gb: lots\n")
    with pytest.raises(CatalogError) as info:
        load_catalog(root)
    problems = info.value.problems
    assert len(problems) == 3  # every problem at once
    assert any("broken.yaml:3: invalid YAML" in p for p in problems), problems
    assert any(p.endswith("novariants.yaml:1: `variants` is required") for p in problems), problems
    assert any(p.endswith("badtype.yaml:7: `variants.default.vram_minimum_gb`: expected a valid number, got 'lots'")
               for p in problems), problems


def test_missing_directory_is_a_catalog_error(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="does not exist"):
        load_catalog(tmp_path / "nope")


def test_every_variants_hugging_face_id_resolves_to_its_recipe_and_variant(snap) -> None:
    """The id in the recipe's own ``model.model_id`` names the variant that serves it (``default``
    has no model_id of its own), as does every variant's ``model_id``; the recipe id stays itself."""
    recipe, variant = snap.resolve_model("thinkingmachines/Inkling-NVFP4")
    assert (recipe.hf_id, variant) == ("thinkingmachines/Inkling", "default")
    assert recipe.model.model_id == "thinkingmachines/Inkling-NVFP4"
    assert snap.resolve_model("lightseekorg/inkling-mxfp4")[1] == "mxfp4"
    assert snap.resolve_model("thinkingmachines/Inkling")[1] is None
    for hf_id in list(snap.recipes)[:40]:  # each variant's id (own or inherited) comes back to it
        r = snap.recipe(hf_id)
        for key, v in r.variants.items():
            mid = v.model_id or r.model.model_id
            if mid and mid.lower() != hf_id.lower():
                got_recipe, got_variant = snap.resolve_model(mid)
                assert got_recipe.hf_id == hf_id and r.variants[got_variant].model_id in (None, mid), (hf_id, key)
