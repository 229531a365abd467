"""``catalog models --hardware P`` on a restricted profile whose recipes all leave it out (rule H1)
explains what is hidden and how to see it, as it does when some are shown; ``catalog hardware``
counts apart the models a detected restricted profile offers only because it is detected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_deploy_wizard.cli import main


@pytest.fixture(autouse=True)
def bundled(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("NO_COLOR", "1")


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _fully_hidden_profiles() -> list[str]:
    """Restricted profiles of the bundled catalog that no recipe lists (every model hidden there)."""
    from vllm_deploy_wizard.catalog import load_catalog
    from vllm_deploy_wizard.catalog.listing import hardware_status

    cat = load_catalog()
    return [hw for hw, p in cat.taxonomy.hardware_profiles.items() if p.restricted
            and all(hardware_status(cat, r, hw)[0] == "hidden" for r in cat.recipes.values())]


def test_a_profile_that_hides_every_model_says_so_and_how_to_list_them(capsys) -> None:
    hidden_everywhere = _fully_hidden_profiles()
    assert "xeon5" in hidden_everywhere
    for hw in hidden_everywhere[:3]:
        code, out, err = _run(capsys, "catalog", "models", "--hardware", hw)
        assert code == 0 and "no model matches" not in err
        total = len(json.loads(_run(capsys, "catalog", "models", "--json")[1]))
        assert f"0 of {total} models" in out and f"{total} hidden" in out
        assert "rule H1" in out and "--detect" in out and "--allow-unverified" in out


def test_a_search_that_matches_nothing_still_says_no_model_matches(capsys) -> None:
    code, out, err = _run(capsys, "catalog", "models", "--hardware", "xeon5", "--search", "zzzz-no-such-model")
    assert code == 0 and out == "" and "no model matches --search 'zzzz-no-such-model'" in err


def test_hardware_counts_the_unlisted_models_of_the_detected_profile_apart(capsys, shared: Path) -> None:
    fixture = str(shared / "fixtures" / "detect" / "cpu_xeon6_amx.yaml")
    rows = json.loads(_run(capsys, "catalog", "hardware", "--replay", fixture, "--json")[1])
    models = json.loads(_run(capsys, "catalog", "models", "--hardware", "xeon6", "--replay", fixture, "--json")[1])
    xeon6 = next(r for r in rows if r["id"] == "xeon6")
    assert xeon6["detected"] == "preselected"
    unlisted = sum(m["status"] == "unlisted" for m in models)
    assert unlisted and xeon6["unlisted_models"] == unlisted
    # a restricted profile that is not the detected one offers no unlisted model
    assert all(r["unlisted_models"] == 0 for r in rows if r["id"] != "xeon6")
    out = _run(capsys, "catalog", "hardware", "--replay", fixture)[1]
    line = next(ln for ln in out.splitlines() if ln.startswith("xeon6 "))
    assert f"{unlisted} unlisted" in line and "--detect" in out.splitlines()[-1]
