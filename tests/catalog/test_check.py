"""``check_catalog`` / ``vllm-wizard catalog check``: one bad-input fixture per failure kind
(``tests/catalog/fixtures/bad/<kind>.yaml``), each with its exact ``file:line: message``.

Each fixture is a recipe dropped into a throw-away checkout whose taxonomy and strategies are the
snapshot's (symlinked from ``../shared``, never copied into the project).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from vllm_deploy_wizard.catalog.diagnostics import check_catalog, compose, node_line
from vllm_deploy_wizard.cli import main

BAD = Path(__file__).parent / "fixtures" / "bad"


@pytest.fixture
def checkout(tmp_path, shared):
    """A checkout with the snapshot taxonomy/strategies/kv_store and an empty models/fixture/."""
    snap = shared / "recipes-snapshot"
    for name in ("taxonomy.yaml", "strategies", "kv_store"):
        os.symlink(snap / name, tmp_path / name)
    (tmp_path / "models" / "fixture").mkdir(parents=True)
    return tmp_path


def check_fixture(checkout: Path, kind: str):
    """Copy fixture ``kind`` into the checkout; return (report, its path inside the checkout)."""
    target = checkout / "models" / "fixture" / f"{kind}.yaml"
    shutil.copy(BAD / f"{kind}.yaml", target)
    return check_catalog(checkout), target


NO_MODEL_ID = ("`model.model_id` is missing and `variants.default` sets no `model_id` — plan can't name the "
               "checkpoint to serve (e.g. `model:` misspelled, or its `model_id:` line deleted); add "
               "`model_id: <org>/<repo>` under `model:`")

EXPECTED_ERRORS = {
    "bad_yaml_syntax": [":16: invalid YAML: did not find expected ',' or ']' "
                        "(while parsing a flow sequence started at line 15)"],
    "missing_variants": [":1: `variants` is required"],
    "missing_variants_default": [":12: `variants` must contain `default` (found: fp8)"],
    "wrong_type_vram": [":15: `variants.default.vram_minimum_gb`: expected a valid number, got 'lots'"],
    "wrong_type_compatible_strategies": [":16: `compatible_strategies`: expected a valid list, got 'single_node_tp'"],
    "top_level_not_a_mapping": [":1: expected a mapping at the top level, got list"],
    "several_errors_at_once": [
        ":16: `variants.default.tp`: expected a valid integer or a valid dictionary, got 'many'",
        ":19: `variants.fp8.vram_minimum_gb`: expected a valid number, got 'two'",
    ],
    "no_loadable_strategy": [
        ":13: no strategy of this recipe loads (names: single_node_tpp) — plan can't use it; valid strategy "
        "ids: multi_node_dep, multi_node_tep, multi_node_tp, multi_node_tp_dp, multi_node_tp_pp, pd_cluster, "
        "single_node_dep, single_node_tep, single_node_tp"],
    "non_positive_numbers": [
        ":9: `model.context_length` must be 0 or more, got -1",
        ":13: `variants.default.vram_minimum_gb` must be a number > 0, got -3.0",
        ":14: `variants.default.tp` must be a whole number ≥ 1, got 0",
    ],
    "missing_model_id": [f":7: {NO_MODEL_ID}"],
    "misspelled_model_key": [f":1: {NO_MODEL_ID}"],
}

#: Warnings an error fixture also produces (the cause next to the consequence).
WARNINGS_OF_ERROR_FIXTURES = {
    "no_loadable_strategy": [":14: unknown strategy id 'single_node_tpp' in `compatible_strategies` (ignored) "
                             "(did you mean 'single_node_tp'?)"],
    "misspelled_model_key": [":7: unknown key `modell` (ignored) (did you mean 'model'?)"],
}

EXPECTED_WARNINGS = {
    "unknown_strategy_id_warning": [":18: unknown strategy id 'multi_node_tpp' in `compatible_strategies` "
                                    "(ignored) (did you mean 'multi_node_tp'?)"],
    "unknown_key_warning": [":12: unknown key `model.archtecture` (ignored) (did you mean 'architecture'?)"],
    "unknown_hardware_id_warning": [":7: unknown hardware id 'h2000' in `meta.hardware` (ignored) "
                                    "(did you mean 'h200'?)"],
    "unknown_precision_warning": [":11: unknown precision 'bf99' in `variants.default.precision` (no VRAM "
                                  "estimate or hardware rule for it; known: fp32, bf16, fp16, fp8, int8, int4, "
                                  "mxfp4, nvfp4, fp4, int2/4/8)"],
    "unknown_values_warning": [
        ":4: unknown task 'txt' in `meta.tasks` (ignored; valid: embedding, multimodal, omni, text) "
        "(did you mean 'text'?)",
        ":6: unknown status 'verifed' for 'h200' in `meta.hardware` (behaves like absent; valid: verified, "
        "unsupported, supported) (did you mean 'verified'?)",
        ":9: unknown architecture 'densee' in `model.architecture` (plans as dense; valid: dense, moe) "
        "(did you mean 'dense'?)",
    ],
}


def test_every_fixture_kind_is_covered():
    assert {p.stem for p in BAD.glob("*.yaml")} == set(EXPECTED_ERRORS) | set(EXPECTED_WARNINGS)


@pytest.mark.parametrize("kind", sorted(EXPECTED_ERRORS))
def test_error_fixture(checkout, kind):
    report, path = check_fixture(checkout, kind)
    assert report.errors == [f"{path}{tail}" for tail in EXPECTED_ERRORS[kind]]
    assert report.warnings == [f"{path}{tail}" for tail in WARNINGS_OF_ERROR_FIXTURES.get(kind, [])]
    assert not report.ok


@pytest.mark.parametrize("kind", sorted(EXPECTED_WARNINGS))
def test_warning_fixture_is_not_an_error(checkout, kind):
    report, path = check_fixture(checkout, kind)
    assert report.errors == []
    assert report.warnings == [f"{path}{tail}" for tail in EXPECTED_WARNINGS[kind]]
    assert report.ok


def test_all_problems_reported_at_once(checkout):
    for kind in (*EXPECTED_ERRORS, *EXPECTED_WARNINGS):
        shutil.copy(BAD / f"{kind}.yaml", checkout / "models" / "fixture" / f"{kind}.yaml")
    report = check_catalog(checkout)
    assert len(report.errors) == sum(len(v) for v in EXPECTED_ERRORS.values())
    assert len(report.warnings) == sum(len(v) for v in (*EXPECTED_WARNINGS.values(),
                                                         *WARNINGS_OF_ERROR_FIXTURES.values()))


def test_snapshot_checks_clean_with_tolerated_unknown_ids(shared):
    """All snapshot files load; ids outside the taxonomy (a100, h20, mi350x — docs/synthesis.md §1.1) only warn."""
    report = check_catalog(shared / "recipes-snapshot")
    assert report.errors == []
    unknown_hw = sorted({w.split("unknown hardware id ")[1].split()[0] for w in report.warnings if "hardware id" in w})
    assert unknown_hw == ["'a100'", "'h20'", "'mi350x'"]
    assert report.files == 1 + 9 + 2 + 143


def test_bundled_catalog_has_no_errors():
    assert check_catalog().errors == []


def test_missing_taxonomy_is_an_error(tmp_path):
    (tmp_path / "models").mkdir()
    assert check_catalog(tmp_path).errors == [
        f"{tmp_path}/strategies: missing — plan needs at least one strategy "
        "(strategies/<id>.yaml, e.g. strategies/single_node_tp.yaml)",
        f"{tmp_path}/taxonomy.yaml: missing (a recipes checkout needs taxonomy.yaml)"]


def test_node_line_walks_keys_and_indexes():
    root = compose("a:\n  b:\n    - x\n    - y\n  c: 1\n")
    assert node_line(root, ("a", "b", 1)) == 4
    assert node_line(root, ("a", "c"), key=True) == 5
    assert node_line(root, ("a", "missing")) == 2  # falls back to the parent's line


def test_did_you_mean():
    from vllm_deploy_wizard.common.suggest import did_you_mean

    assert did_you_mean("single_node_tpp", ["single_node_tp", "pd_cluster"]) == " (did you mean 'single_node_tp'?)"
    assert did_you_mean("zzz", ["single_node_tp"]) == ""


def test_cli_exit_status_errors_vs_warnings(checkout, capsys):
    shutil.copy(BAD / "unknown_key_warning.yaml", checkout / "models" / "fixture" / "unknown_key_warning.yaml")
    assert main(["catalog", "check", str(checkout)]) == 0
    out = capsys.readouterr().out
    assert f"warning: {checkout}/models/fixture/unknown_key_warning.yaml:12: unknown key `model.archtecture`" in out
    assert "0 error(s), 1 warning(s)" in out
    shutil.copy(BAD / "wrong_type_vram.yaml", checkout / "models" / "fixture" / "wrong_type_vram.yaml")
    assert main(["catalog", "check", str(checkout)]) == 1
    captured = capsys.readouterr()
    assert (f"error: {checkout}/models/fixture/wrong_type_vram.yaml:15: `variants.default.vram_minimum_gb`: "
            "expected a valid number, got 'lots'") in captured.err
    assert "1 error(s), 1 warning(s)" in captured.out


def test_validation_problems_for_loaders():
    """A loader that parsed fast gets file:line lines from the raw bytes only on failure."""
    import yaml
    from pydantic import ValidationError

    from vllm_deploy_wizard.catalog.diagnostics import validation_problems
    from vllm_deploy_wizard.catalog.models import Recipe

    raw = (BAD / "wrong_type_vram.yaml").read_bytes()
    with pytest.raises(ValidationError) as exc:
        Recipe.model_validate(yaml.safe_load(raw))
    assert validation_problems("x.yaml", raw, exc.value) == [
        "x.yaml:15: `variants.default.vram_minimum_gb`: expected a valid number, got 'lots'"]


# ---------------------------------------------------------------------------------------------
# catalogs `plan` can't use are errors; confusing-but-loadable layouts are warnings


def _tiny_taxonomy(path: Path, body: str) -> None:
    path.write_text(body, encoding="utf-8")


def test_misspelled_hardware_profiles_is_one_error_not_a_warning_flood(tmp_path, shared):
    snap = shared / "recipes-snapshot"
    text = (snap / "taxonomy.yaml").read_text(encoding="utf-8")
    assert text.count("\nhardware_profiles:") == 1
    (tmp_path / "taxonomy.yaml").write_text(text.replace("\nhardware_profiles:", "\nhardware_profile:"),
                                            encoding="utf-8")
    for name in ("strategies", "kv_store", "models"):
        os.symlink(snap / name, tmp_path / name)
    report = check_catalog(tmp_path)
    line = text.split("\n").index("hardware_profiles:") + 1
    assert report.errors == [
        f"{tmp_path}/taxonomy.yaml:{line}: `hardware_profile` is not a taxonomy key — did you mean "
        "`hardware_profiles`? Without it the catalog has no hardware profiles and plan can't pick any hardware"]
    assert not [w for w in report.warnings if "unknown hardware id" in w]


def test_taxonomy_without_profiles_is_an_error(tmp_path):
    _tiny_taxonomy(tmp_path / "taxonomy.yaml", "strategies: [single_node_tp]\n")
    report = check_catalog(tmp_path)
    assert report.errors[-1] == (f"{tmp_path}/taxonomy.yaml:1: no hardware profiles — plan needs "
                                "`hardware_profiles:` mapping profile ids (e.g. h100) to {brand, generation, "
                                "gpu_count, vram_gb, …}")


def test_missing_or_empty_strategies_is_an_error(checkout, tmp_path):
    checkout.joinpath("strategies").unlink()
    shutil.copy(BAD / "unknown_key_warning.yaml", checkout / "models" / "fixture" / "ok.yaml")
    report = check_catalog(checkout)
    assert not [w for w in report.warnings if "unknown strategy id" in w]  # the one error, no flood
    assert report.errors == [f"{checkout}/strategies: missing — plan needs at least one strategy "
                             "(strategies/<id>.yaml, e.g. strategies/single_node_tp.yaml)"]
    (checkout / "strategies").mkdir()
    report = check_catalog(checkout)
    assert report.errors == [f"{checkout}/strategies: no strategy loads — plan needs at least one "
                             "(strategies/<id>.yaml with `name` and `deploy_type`, e.g. single_node_tp.yaml)"]


def test_non_positive_hardware_numbers_are_errors(checkout):
    checkout.joinpath("taxonomy.yaml").unlink()
    _tiny_taxonomy(checkout / "taxonomy.yaml", (
        "hardware_profiles:\n"
        "  h100:\n    brand: NVIDIA\n    generation: hopper\n    gpu_count: -8\n    vram_gb: 640\n"
        "  mi300x:\n    brand: AMD\n    generation: cdna3\n    gpu_count: 0\n    vram_gb: -1536\n"))
    report = check_catalog(checkout)
    tax = checkout / "taxonomy.yaml"
    assert report.errors == [
        f"{tax}:5: `hardware_profiles.h100.gpu_count` must be a whole number ≥ 1, got -8",
        f"{tax}:10: `hardware_profiles.mi300x.gpu_count` must be a whole number ≥ 1, got 0",
        f"{tax}:11: `hardware_profiles.mi300x.vram_gb` must be a number > 0, got -1536.0",
    ]


def test_model_file_outside_an_org_folder_warns(checkout):
    shutil.copy(BAD / "unknown_precision_warning.yaml", checkout / "models" / "Tiny.yaml")
    report = check_catalog(checkout)
    assert report.errors == []
    assert report.warnings == [
        f"{checkout}/models/Tiny.yaml: ignored by the loader (not under an <org>/ folder) — recipe files go in "
        "models/<org>/<repo>.yaml, e.g. models/Qwen/Qwen3-8B.yaml"]


def test_recipe_ids_differing_only_in_case_warn_and_name_the_winner(checkout):
    from vllm_deploy_wizard.catalog.loader import load_catalog

    (checkout / "models" / "Fixture").mkdir()
    shutil.copy(BAD / "unknown_strategy_id_warning.yaml", checkout / "models" / "Fixture" / "Tiny.yaml")
    shutil.copy(BAD / "unknown_strategy_id_warning.yaml", checkout / "models" / "fixture" / "tiny.yaml")
    report = check_catalog(checkout)
    dupes = [w for w in report.warnings if "only in case" in w]
    assert dupes == [
        f"{checkout}/models/Fixture/Tiny.yaml:1: recipe id 'Fixture/Tiny' differs from 'fixture/tiny' "
        f"({checkout}/models/fixture/tiny.yaml) only in case; model lookups ignore case, so 'fixture/tiny' wins "
        "and this file can't be selected — rename or remove one of them"]
    assert load_catalog(checkout).recipe("Fixture/Tiny").hf_id == "fixture/tiny"  # the claim holds


def test_bundled_seed_router_docs_keys_are_known():
    """Seed 001's ``pd_cluster.smg.docs`` / ``pd_cluster.dynamo.docs`` are legitimate (§4.7–4.8)."""
    report = check_catalog()
    # the seed files are warning-free; the recipes' own unknown ids (h20, a100, …) are the recipes'
    assert [w for w in report.warnings if "recipes.json" not in w] == []
    assert report.errors == []


@pytest.mark.parametrize("kind", ["missing_model_id", "misspelled_model_key"])
def test_plan_refuses_a_recipe_without_a_model_id_naming_file_and_field(checkout, kind, capsys):
    """The reference builder renders ``vllm serve unknown`` (docs/synthesis.md §2); plan exits 2 instead."""
    shutil.copy(BAD / f"{kind}.yaml", checkout / "models" / "fixture" / f"{kind}.yaml")
    rc = main(["plan", "--recipes", str(checkout), "--model", f"fixture/{kind}", "--hardware", "h200"])
    err = capsys.readouterr().err
    assert rc == 2
    assert f"{checkout / 'models' / 'fixture' / kind}.yaml: recipe fixture/{kind} has no `model.model_id`" in err
    assert "unknown" not in err


def test_plan_is_unchanged_by_unknown_values(checkout, capsys):
    """Values outside their sets only warn: the plan serves the model as for valid values."""
    shutil.copy(BAD / "unknown_values_warning.yaml", checkout / "models" / "fixture" / "odd.yaml")
    shutil.copy(BAD / "unknown_values_warning.yaml", checkout / "models" / "fixture" / "ok.yaml")
    ok = checkout / "models" / "fixture" / "ok.yaml"
    ok.write_text(ok.read_text().replace("densee", "dense").replace("[txt]", "[text]").replace("verifed", "verified"))
    outs = []
    for name in ("odd", "ok"):
        assert main(["plan", "--recipes", str(checkout), "--model", f"fixture/{name}", "--hardware", "h200"]) == 0
        outs.append(capsys.readouterr().out.replace(f"fixture/{name}", "fixture/X"))
    assert "vllm serve fixture/tiny" in outs[1]
    assert outs[0] == outs[1]
