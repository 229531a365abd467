"""A broken ``taxonomy.yaml`` is reported once, with its own error, and does not cascade into one
"unknown KV offload option" warning per recipe (the checkout is a copy of ``../shared``'s snapshot)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vllm_deploy_wizard.catalog.diagnostics import check_catalog
from vllm_deploy_wizard.catalog.loader import CatalogError, load_recipes_dir
from vllm_deploy_wizard.cli import main


def _broken_copy(tmp_path: Path, shared: Path, old: str, new: str) -> Path:
    root = tmp_path / "recipes"
    shutil.copytree(shared / "recipes-snapshot", root)
    tax = root / "taxonomy.yaml"
    text = tax.read_text(encoding="utf-8")
    assert old in text
    tax.write_text(text.replace(old, new, 1), encoding="utf-8")
    return root


@pytest.fixture
def bad_value(tmp_path, shared) -> Path:
    """The snapshot with the h100 profile's ``gpu_count: 8`` (its first one) as ``eight``."""
    return _broken_copy(tmp_path, shared, "gpu_count: 8", "gpu_count: eight")


@pytest.fixture
def bad_syntax(tmp_path, shared) -> Path:
    """The snapshot with ``hardware_profiles:`` opening a flow sequence it never closes."""
    return _broken_copy(tmp_path, shared, "hardware_profiles:\n", "hardware_profiles: [unclosed\n")


def test_bad_taxonomy_value_is_one_error_and_no_cross_reference_flood(bad_value):
    report = check_catalog(bad_value)
    tax = str(bad_value / "taxonomy.yaml")
    assert report.errors == [f"{tax}:11: `hardware_profiles.h100.gpu_count`: expected a valid integer, got 'eight'"]
    assert not [w for w in report.warnings if "unknown KV offload option" in w or "unknown hardware id" in w]
    assert [w for w in report.warnings if w.startswith(f"{tax}: has errors, so recipes were not checked")]
    assert len(report.warnings) == 1


def test_taxonomy_syntax_error_is_its_only_error(bad_syntax):
    report = check_catalog(bad_syntax)
    assert len(report.errors) == 1 and ": invalid YAML: " in report.errors[0]
    assert not [w for w in report.warnings if "unknown KV offload option" in w]


def test_loader_reports_a_parse_error_without_a_second_top_level_problem(bad_syntax):
    with pytest.raises(CatalogError) as info:
        load_recipes_dir(bad_syntax)
    text = str(info.value)
    assert "taxonomy.yaml:" in text and "invalid YAML" in text
    assert "expected a mapping, got NoneType" not in text


def test_cli_reports_the_taxonomy_error_without_the_flood(bad_value, capfd):
    assert main(["catalog", "check", str(bad_value)]) == 1
    out, err = capfd.readouterr()
    assert "error: " in err and "gpu_count" in err
    assert "unknown KV offload option" not in out
    assert "1 error(s), 1 warning(s)" in out
