"""The run-time records (catalog/record.py) and their derived pydantic validators (catalog/validation.py).

* The fast path (exactly-typed data, no pydantic) gives exactly what pydantic validation gives, over
  every golden selection, and the plans they make round-trip through the plan's validator unchanged.
* The whole bundled catalog read from its cache equals the catalog validated by pydantic.
* A ``plan`` whose catalog comes from the cache imports neither pydantic nor yaml (nor the launcher).
* Bad values still give pydantic's errors and the same messages.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from vllm_deploy_wizard.catalog import bundled_cache, plan_to_json, synthesize
from vllm_deploy_wizard.catalog.data import DATA_DIR
from vllm_deploy_wizard.catalog.loader import _load_bundled_uncached, load_catalog
from vllm_deploy_wizard.catalog.models import HardwareProfile, Recipe
from vllm_deploy_wizard.catalog.plan import LaunchPlan
from vllm_deploy_wizard.catalog.record import fast_validate
from vllm_deploy_wizard.catalog.selection import KvInstances, PdPool, Selection, selection_from_data
from vllm_deploy_wizard.catalog.validation import pydantic_model, validate
from vllm_deploy_wizard.common.errors import SelectionError


def _cases(shared: Path) -> list[dict]:
    with open(shared / "golden" / "cases.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def test_fast_path_equals_pydantic_on_every_golden_selection(shared):
    cases = _cases(shared)
    fast_count = 0
    for case in cases:
        data = case["selection"]
        slow = validate(Selection, data)
        fast = fast_validate(Selection, data)
        if fast is not None:
            fast_count += 1
            assert fast == slow, case["id"]
            assert fast.model_dump() == slow.model_dump(), case["id"]
    assert fast_count == len(cases)  # golden selections are all exactly typed


def test_plans_round_trip_through_the_plan_validator(shared):
    """A plan the planner built (fast path on construction) equals the same data validated by pydantic."""
    cat = load_catalog(shared / "recipes-snapshot")
    for case in _cases(shared)[::40]:
        plan = synthesize(cat, selection_from_data(case["selection"], case["id"]))
        assert validate(LaunchPlan, plan.model_dump()) == plan, case["id"]
        assert plan_to_json(validate(LaunchPlan, plan.model_dump())) == plan_to_json(plan)


@pytest.mark.parametrize("data", [
    {"model": "m", "nodes": 2, "pd": {"prefill": {"nodes": 0, "mode": "tp"}}, "kv_instances": 2},
    {"model": "m", "features": "none", "feature_modes": None, "advanced_args": None},
    {"model": "m", "gpus": 8, "devices": [0, 1], "companion_args": {"router_port": 30000, "l1": 1.5}},
    {"model": "m", "nodes": True},          # a bool is no int to the fast path: pydantic decides
    {"model": "m", "nodes": 2.0},           # a whole float: pydantic converts it
    {"model": "m", "gpus": "4"},            # a string number: pydantic converts it
])
def test_fast_path_and_pydantic_agree_on_converted_values(data):
    slow = validate(Selection, data)
    fast = fast_validate(Selection, data)
    assert fast is None or fast == slow
    assert Selection.model_validate(data) == slow
    assert Selection(**data) == slow


@pytest.mark.parametrize("data", [
    {"model": "m", "nodes": 0},
    {"model": "m", "pd": {"prefill": {"mode": "x"}}},
    {"model": "m", "hardwre": "h200"},
    {"model": "m", "kv_instances": 0},
    {"nodes": 1},
])
def test_bad_values_take_pydantic_and_its_errors(data):
    assert fast_validate(Selection, data) is None
    with pytest.raises(ValidationError) as exc:
        Selection.model_validate(data)
    assert exc.value.title == "Selection"
    with pytest.raises(SelectionError):
        selection_from_data(data, "sel.yaml")


def test_selection_error_messages_name_the_key_and_the_flag():
    with pytest.raises(SelectionError) as exc:
        selection_from_data({"model": "m", "hardwre": "x"}, "sel.yaml")
    assert str(exc.value).startswith("sel.yaml: unknown key `hardwre` (valid keys: model, variant, hardware,")
    with pytest.raises(SelectionError) as exc:
        selection_from_data({"model": "m", "pd": {"prefill": {"mode": "x"}}}, "flags", {"pd.prefill": "--pd-prefill"})
    assert str(exc.value).startswith("--pd-prefill: mode 'x' is not valid: Input should be 'tp', 'tep' or 'dep'")


def test_nested_records_come_out_as_records():
    sel = Selection(model="m", pd={"decode": {"nodes": 1}}, kv_instances=3)
    assert type(sel.pd.decode) is PdPool and sel.pd.decode.nodes == 1
    assert sel.kv_instances == KvInstances(count=3)
    recipe = Recipe.model_validate({"variants": {"default": {"extra_env": {"A": 0, "B": True}}}, "x_extra": 1})
    assert recipe.variant("default").extra_env == {"A": "0", "B": "true"}
    assert recipe.model_extra == {"x_extra": 1} and recipe.x_extra == 1


def test_catalog_record_api():
    hp = HardwareProfile(brand="NVIDIA", gpu_count=8, vram_gb=None, extra_key="v")
    assert hp.vram_gb is None and hp.gpu_count == 8 and hp.extra_key == "v"  # None dropped, default kept
    copy = hp.model_copy(update={"gpu_count": 4})
    assert (copy.gpu_count, hp.gpu_count) == (4, 8)
    assert hp.model_dump(exclude_defaults=True) == {"brand": "NVIDIA", "gpu_count": 8, "extra_key": "v"}
    assert list(HardwareProfile.model_fields)[:3] == ["brand", "generation", "display_name"]
    assert pydantic_model(HardwareProfile).__name__ == "HardwareProfile"
    with pytest.raises(ValidationError):
        HardwareProfile.model_validate({"gpu_count": "many"})


def test_the_cached_catalog_equals_the_validated_one(tmp_path):
    """Every record of the bundled catalog, read back from a cache entry, equals pydantic's validation."""
    fresh = _load_bundled_uncached(DATA_DIR)
    cached = bundled_cache.load(DATA_DIR, tmp_path, _load_bundled_uncached)  # miss: writes the entry
    cached = bundled_cache.load(DATA_DIR, tmp_path, _load_bundled_uncached)  # hit
    assert isinstance(cached.recipes, bundled_cache.CachedRecipes)
    assert cached.taxonomy == fresh.taxonomy
    assert cached.strategies == fresh.strategies
    assert cached.kv_stores == fresh.kv_stores
    assert list(cached.recipes) == list(fresh.recipes)
    for hf_id in fresh.recipes:
        assert cached.recipes[hf_id] == fresh.recipes[hf_id], hf_id


PLAN_PROBE = r"""
import io, json, sys, contextlib
from vllm_deploy_wizard.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    rc = main(["plan", "--model", "Qwen/Qwen3-8B", "--hardware", "h200"])
print(json.dumps([rc, "pydantic" in sys.modules, "yaml" in sys.modules, "vllm_deploy_wizard.launcher" in sys.modules]))
"""


def test_plan_from_the_cache_imports_neither_pydantic_nor_yaml_nor_the_launcher(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    runs = [subprocess.run([sys.executable, "-c", PLAN_PROBE], capture_output=True, text=True, timeout=120,
                           cwd=tmp_path, env=env) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
    second = json.loads(runs[1].stdout.splitlines()[-1])
    assert second[1:] == [False, False, False]
