"""The validated bundled catalog kept in the user's cache folder (catalog/bundled_cache.py): a hit is
the same catalog as a fresh load, any changed data byte is a new key (never stale), bad data is
reported exactly as without a cache, and a recipes checkout is never cached."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vllm_deploy_wizard.catalog import bundled_cache
from vllm_deploy_wizard.catalog.loader import (
    DATA_DIR,
    RECIPES_FILE,
    LazyRecipes,
    _load_bundled_uncached,
    load_bundled,
    load_catalog,
)
from vllm_deploy_wizard.common.errors import CatalogError


@pytest.fixture
def data(tmp_path) -> Path:
    """A copy of the bundled data folder (the tests change it)."""
    return Path(shutil.copytree(DATA_DIR, tmp_path / "data"))


def _counting(calls: list):
    def load(data_dir):
        calls.append(data_dir)
        return _load_bundled_uncached(data_dir)

    return load


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("bundled-*.pickle"))


def test_a_hit_is_the_catalog_a_fresh_load_gives(data, tmp_path):
    cache, calls = tmp_path / "cache", []
    fresh = _load_bundled_uncached(data)
    first = bundled_cache.load(data, cache, _counting(calls))
    second = bundled_cache.load(data, cache, _counting(calls))
    assert calls == [data] and len(_entries(cache)) == 1  # the second load read the entry
    assert second is not first
    assert second.taxonomy == fresh.taxonomy and second.strategies == fresh.strategies
    assert second.kv_stores == fresh.kv_stores and list(second.recipes) == list(fresh.recipes)
    assert all(second.recipes[h] == fresh.recipes[h] for h in fresh.recipes)
    assert (second.source, second.revision, second.recipes_revision) == (
        fresh.source, fresh.revision, fresh.recipes_revision)
    assert second.resolve_model("thinkingmachines/Inkling-NVFP4") == fresh.resolve_model(
        "thinkingmachines/Inkling-NVFP4")


def test_a_changed_data_file_is_a_new_entry_not_a_stale_one(data, tmp_path):
    cache, calls = tmp_path / "cache", []
    before = bundled_cache.load(data, cache, _counting(calls))
    assert before.recipe("Qwen/Qwen3-8B").variants["default"].vram_minimum_gb != 123
    doc = json.loads((data / RECIPES_FILE).read_text(encoding="utf-8"))
    doc["recipes"]["Qwen/Qwen3-8B"]["variants"]["default"]["vram_minimum_gb"] = 123
    (data / RECIPES_FILE).write_text(json.dumps(doc), encoding="utf-8")
    after = bundled_cache.load(data, cache, _counting(calls))
    assert after.recipe("Qwen/Qwen3-8B").variants["default"].vram_minimum_gb == 123
    assert after.revision != before.revision and len(calls) == 2
    assert len(_entries(cache)) == 1  # the old key's entry is gone


def test_an_added_override_file_changes_the_key(data):
    key = bundled_cache.entry_key(data)
    (data / "recipes" / "acme").mkdir(parents=True)
    (data / "recipes" / "acme" / "tiny.yaml").write_text("meta: {title: Tiny}\n", encoding="utf-8")
    assert bundled_cache.entry_key(data) != key


def test_changed_model_code_changes_the_key(data, tmp_path, monkeypatch):
    key = bundled_cache.entry_key(data)
    code = Path(shutil.copytree(Path(bundled_cache.__file__).parent, tmp_path / "catalog"))
    monkeypatch.setattr(bundled_cache, "_CATALOG_ROOT", code)
    assert bundled_cache.entry_key(data) == key
    (code / "models" / "recipe.py").write_text((code / "models" / "recipe.py").read_text() + "\n# changed\n")
    assert bundled_cache.entry_key(data) != key


def test_a_broken_recipe_is_still_named_when_read_after_a_hit(data, tmp_path):
    doc = json.loads((data / RECIPES_FILE).read_text(encoding="utf-8"))
    doc["recipes"]["Qwen/Qwen3-32B"]["variants"]["default"]["vram_minimum_gb"] = "lots"
    (data / RECIPES_FILE).write_text(json.dumps(doc), encoding="utf-8")
    cache, calls = tmp_path / "cache", []
    for _ in range(2):  # a miss (writes the entry), then a hit
        cat = bundled_cache.load(data, cache, _counting(calls))
        assert cat.recipe("Qwen/Qwen3-8B").hf_id == "Qwen/Qwen3-8B"
        with pytest.raises(CatalogError) as exc:
            cat.recipe("Qwen/Qwen3-32B")
        assert "recipes.json" in str(exc.value) and "vram_minimum_gb" in str(exc.value)
    assert len(calls) == 1


def test_bad_data_raises_every_time_and_writes_nothing(data, tmp_path):
    (data / "taxonomy.json").write_text('{"hardware_profiles": "not a map"}', encoding="utf-8")
    cache = tmp_path / "cache"
    for _ in range(2):
        with pytest.raises(CatalogError, match="taxonomy.json"):
            load_bundled(data, cache=cache)
    assert _entries(cache) == []


def test_a_corrupt_entry_is_ignored_and_rewritten(data, tmp_path):
    cache, calls = tmp_path / "cache", []
    bundled_cache.load(data, cache, _counting(calls))
    [entry] = _entries(cache)
    entry.write_bytes(b"not a pickle")
    cat = bundled_cache.load(data, cache, _counting(calls))
    assert cat.recipe("Qwen/Qwen3-8B").hf_id == "Qwen/Qwen3-8B" and len(calls) == 2
    assert bundled_cache.read(cache, bundled_cache.entry_key(data)) is not None


def test_an_unwritable_cache_folder_still_loads_and_validates_no_more_than_without_a_cache(data, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder would be")
    cat = load_bundled(data, cache=blocker / "catalog")
    assert isinstance(cat.recipes, LazyRecipes) and cat.recipes._done == {}  # nothing validated for an entry
    assert cat.recipe("Qwen/Qwen3-8B").hf_id == "Qwen/Qwen3-8B"
    assert sorted(tmp_path.iterdir()) == [data, blocker]


def test_a_recipes_checkout_is_never_cached(tmp_path, shared):
    """--recipes DIR (and a checkout layered over the bundled catalog) is read afresh every time: an
    edit shows at the next load, and the cache folder holds only the bundled entry."""
    root = Path(shutil.copytree(shared / "recipes-snapshot", tmp_path / "co"))
    assert load_catalog(root).recipe("Qwen/Qwen3-8B").meta.title != "Edited"
    assert load_catalog(over_bundled=root).recipe("Qwen/Qwen3-8B").meta.title != "Edited"
    path = root / "models" / "Qwen" / "Qwen3-8B.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("title:", "title: Edited\n  old_title:", 1),
                    encoding="utf-8")
    assert load_catalog(root).recipe("Qwen/Qwen3-8B").meta.title == "Edited"
    assert load_catalog(over_bundled=root).recipe("Qwen/Qwen3-8B").meta.title == "Edited"
    assert [p.name.split("-")[0] for p in bundled_cache.default_folder().iterdir()] == ["bundled"]


PROBE = r"""
import json, sys
from vllm_deploy_wizard.catalog import load_catalog
cat = load_catalog()
recipe = cat.recipe("Qwen/Qwen3-8B")
print(json.dumps([type(recipe).__name__, "pydantic" in sys.modules, "yaml" in sys.modules]))
"""


def test_a_start_with_the_entry_in_place_imports_no_pydantic(tmp_path):
    """The point of the cache: the second process gets its recipe without importing pydantic (the
    records are plain classes, validated when the entry was written) nor the YAML reader."""
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                           env={**os.environ, **env}) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
    first, second = (json.loads(r.stdout.splitlines()[-1]) for r in runs)
    assert first == ["Recipe", True, True]  # the miss parsed and validated (and wrote the entry)
    assert second == ["Recipe", False, False]
