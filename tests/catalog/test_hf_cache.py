"""``catalog.hf_cache.cached_file`` answers exactly what ``huggingface_hub.try_to_load_from_cache``
answers, and a model that was never downloaded is answered without importing the hub's download
module (the ~75 ms a ``vllm-wizard plan`` used to pay for it)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from huggingface_hub import try_to_load_from_cache

from vllm_deploy_wizard.catalog.hf_cache import PLAIN_REPO_ID, cached_file

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _cache(tmp_path):
    """A cache with: org/snap (config.json in the main snapshot), org/noexist (config.json known
    missing), org/empty (a repo folder without refs or snapshots)."""
    snap = tmp_path / "models--org--snap"
    (snap / "refs").mkdir(parents=True)
    (snap / "refs" / "main").write_text(COMMIT)
    (snap / "snapshots" / COMMIT).mkdir(parents=True)
    (snap / "snapshots" / COMMIT / "config.json").write_text("{}")
    gone = tmp_path / "models--org--noexist"
    (gone / "refs").mkdir(parents=True)
    (gone / "refs" / "main").write_text(COMMIT)
    (gone / ".no_exist" / COMMIT).mkdir(parents=True)
    (gone / ".no_exist" / COMMIT / "config.json").write_text("")
    (tmp_path / "models--org--empty").mkdir()
    return tmp_path


@pytest.mark.parametrize("repo_id", ["org/snap", "org/noexist", "org/empty", "org/absent", "Org.x/Name_1-2"])
def test_same_answer_as_the_hub(tmp_path, repo_id):
    cache = _cache(tmp_path)
    assert cached_file(repo_id, "config.json", cache_dir=cache) == try_to_load_from_cache(
        repo_id, "config.json", cache_dir=cache)


def test_a_cached_config_is_its_snapshot_path(tmp_path):
    cache = _cache(tmp_path)
    assert cached_file("org/snap", "config.json", cache_dir=cache) == str(
        cache / "models--org--snap" / "snapshots" / COMMIT / "config.json")


@pytest.mark.parametrize("repo_id", ["org/bad--name", "org/name.git", "org/-name", "a/b/c", "org/na me"])
def test_invalid_ids_raise_as_the_hub_does(tmp_path, repo_id):
    with pytest.raises(Exception) as ours:
        cached_file(repo_id, "config.json", cache_dir=tmp_path)
    with pytest.raises(Exception) as hub:
        try_to_load_from_cache(repo_id, "config.json", cache_dir=tmp_path)
    assert type(ours.value) is type(hub.value) and str(ours.value) == str(hub.value)


def test_plain_ids_are_ones_the_hub_accepts():
    assert PLAIN_REPO_ID.fullmatch("Qwen/Qwen3-8B") and PLAIN_REPO_ID.fullmatch("a/b")
    assert not PLAIN_REPO_ID.fullmatch("org/x--y") and not PLAIN_REPO_ID.fullmatch("org/x..y")
    assert not PLAIN_REPO_ID.fullmatch("Qwen3-8B") and not PLAIN_REPO_ID.fullmatch("org/_x")


def test_a_model_never_downloaded_does_not_import_the_hub_download_module(tmp_path):
    probe = ("import json, sys\n"
             "from vllm_deploy_wizard.catalog.hf_cache import cached_file\n"
             f"hit = cached_file('Qwen/Qwen3-8B', 'config.json', cache_dir={str(tmp_path)!r})\n"
             "print(json.dumps([hit, 'huggingface_hub.file_download' in sys.modules]))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1]) == [None, False]
