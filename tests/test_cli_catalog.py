"""``vllm-wizard catalog models|hardware|show`` on the bundled catalog, through the CLI entry: what
they list is what ``vllm-wizard plan`` accepts and refuses, what the wizard's model screen shows,
and what ``vllm-wizard detect`` preselects; bad flag values exit 2 with a did-you-mean."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_deploy_wizard.cli import main


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _json(capsys, *argv: str) -> list[dict]:
    code, out, err = _run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def detect_fixtures(shared: Path) -> Path:
    return shared / "fixtures" / "detect"


@pytest.fixture(autouse=True)
def bundled(monkeypatch, tmp_path: Path) -> None:
    """No remembered recipes dir: the bundled catalog."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("NO_COLOR", "1")


# ------------------------------------------------------------------ models


def test_every_listed_model_plans_on_the_profiles_it_is_verified_on_as_its_status_says(capsys) -> None:
    from vllm_deploy_wizard.catalog import load_catalog

    models = _json(capsys, "catalog", "models")
    assert sorted(m["hf_id"] for m in models) == sorted(load_catalog().recipes)
    status: dict[str, dict[str, str]] = {}  # profile → {model: status}
    planned = 0
    for m in models:
        if not m["verified_on"]:  # no verified profile: the recipe's landing hardware
            code, out, err = _run(capsys, "plan", "--model", m["hf_id"], "--json")
            assert code == 0, (m["hf_id"], err)
            continue
        for hw in m["verified_on"]:
            if hw not in status:
                status[hw] = {r["hf_id"]: r["status"] for r in _json(capsys, "catalog", "models", "--hardware", hw)}
            code, out, err = _run(capsys, "plan", "--model", m["hf_id"], "--hardware", hw, "--json")
            if status[hw][m["hf_id"]] == "verified":
                assert code == 0, (m["hf_id"], hw, err)
                plan = json.loads(out)
                assert (plan["resolved"]["model"], plan["resolved"]["hardware"]) == (m["hf_id"], hw)
                planned += 1
            else:  # marked verified, yet no variant runs there: listed unsupported, and plan refuses it
                assert status[hw][m["hf_id"]] == "unsupported", (m["hf_id"], hw)
                assert code == 2 and f"--hardware {hw}" in err, (m["hf_id"], hw, err)
    assert planned > 300


def test_without_detection_a_restricted_profile_lists_only_its_recipes_and_plan_agrees(capsys) -> None:
    listed = {m["hf_id"]: m for m in _json(capsys, "catalog", "models", "--hardware", "xeon6")}
    everything = [m["hf_id"] for m in _json(capsys, "catalog", "models")]
    assert listed and all("xeon6" in m["verified_on"] or m["status"] == "unsupported" for m in listed.values())
    left_out = next(h for h in everything if h not in listed)
    code, _, err = _run(capsys, "plan", "--model", left_out, "--hardware", "xeon6", "--json")
    assert code == 2 and "restricted profile this recipe does not list (rule H1)" in err
    code, _, err = _run(capsys, "plan", "--model", left_out, "--hardware", "xeon6", "--allow-unverified", "--json")
    assert code == 0, err
    code, out, _ = _run(capsys, "catalog", "models", "--hardware", "xeon6")
    assert f"{len(everything) - len(listed)} hidden: Xeon 6 is a restricted profile" in out.splitlines()[-1]


def test_on_the_detected_profile_unlisted_models_plan_with_detection(capsys, detect_fixtures: Path) -> None:
    fixture = str(detect_fixtures / "cpu_xeon6_amx.yaml")
    rows = _json(capsys, "catalog", "models", "--replay", fixture)
    assert {r["hardware"] for r in rows} == {"xeon6"}  # --replay defaults --hardware as plan --replay does
    unlisted = [r for r in rows if r["status"] == "unlisted"]
    assert unlisted and all("rule H1" in r["reason"] for r in unlisted)
    for r in unlisted[:3]:
        code, out, err = _run(capsys, "plan", "--model", r["hf_id"], "--replay", fixture, "--json")
        assert code == 0 and json.loads(out)["resolved"]["hardware"] == "xeon6", err


@pytest.mark.parametrize("hw, fixture", [("h200", None), ("xeon6", "cpu_xeon6_amx.yaml"),
                                         ("rtx_5090", "nvidia_rtx5090_1x.yaml"), ("mi300x", None)])
def test_status_and_order_are_the_model_screens(capsys, detect_fixtures: Path, hw: str, fixture: str | None) -> None:
    from vllm_deploy_wizard.catalog import load_catalog
    from vllm_deploy_wizard.catalog.constraints import hardware_listing
    from vllm_deploy_wizard.tui.catalog_view import recipe_rows
    from vllm_deploy_wizard.tui.screen_model import status_mark

    replay = ("--replay", str(detect_fixtures / fixture)) if fixture else ()
    cli = [(r["hf_id"], r["status"]) for r in _json(capsys, "catalog", "models", "--hardware", hw, *replay)]
    cat = load_catalog()
    detected = hw if fixture else None
    screen = recipe_rows(cat.recipes, cat.taxonomy.hardware_profiles[hw], hw,
                         listing=lambda rec: hardware_listing(cat, rec, hw, detected))
    marks = {"✓ verified": "verified", "": "available", "⚠ unlisted": "unlisted", "✗ unsupported": "unsupported"}
    assert cli == [(r.hf_id, marks[status_mark(r)]) for r in screen]
    assert len({s for _, s in cli}) > 1


def test_filters_and_the_text_table(capsys) -> None:
    moe_text = _json(capsys, "catalog", "models", "--task", "TEXT", "--arch", "moe", "--search", "qwen")
    assert moe_text and all("text" in m["tasks"] and m["architecture"] == "moe" and "qwen" in m["hf_id"].lower()
                            for m in moe_text)
    flags = ("--task", "text", "--arch", "moe", "--search", "qwen", "--hardware", "h200")
    on_h200 = _json(capsys, "catalog", "models", *flags)
    assert sorted(m["hf_id"] for m in on_h200) == sorted(m["hf_id"] for m in moe_text)
    code, out, _ = _run(capsys, "catalog", "models", *flags)
    lines = out.splitlines()
    assert code == 0 and lines[0].split()[:3] == ["HF", "ID", "STATUS"]
    assert [ln.split()[:2] for ln in lines[1:-1]] == [[m["hf_id"], m["status"]] for m in on_h200]
    assert lines[-1].startswith(f"{len(on_h200)} of ") and "models on H200" in lines[-1]
    code, out, err = _run(capsys, "catalog", "models", "--search", "no such model anywhere")
    assert code == 0 and out == "" and "no model matches" in err


# ------------------------------------------------------------------ hardware


def test_hardware_lists_every_profile_and_marks_what_detect_preselects(capsys, detect_fixtures: Path) -> None:
    from vllm_deploy_wizard.catalog import load_catalog

    profiles = load_catalog().taxonomy.hardware_profiles
    for name in ("nvidia_hgx_8x_h200.yaml", "nvidia_rtx5090_1x.yaml", "cpu_xeon6_amx.yaml"):
        fixture = str(detect_fixtures / name)
        rows = _json(capsys, "catalog", "hardware", "--replay", fixture)
        assert [r["id"] for r in rows] == list(profiles)
        code, out, _ = _run(capsys, "detect", "--replay", fixture, "--json")
        detect = json.loads(out)
        pre = [r for r in rows if r["detected"] == "preselected"]
        assert [(r["id"], r["match"]) for r in pre] == [(detect["profile"], detect["match"])]
        for r in rows:  # a restricted profile is selectable for any model only where it is detected
            assert r["selectable"] == (not profiles[r["id"]].restricted or r["id"] == detect["profile"])
            assert r["memory_per_device_gb"] == profiles[r["id"]].vram_per_device_gb
    # the model count is what `catalog models` offers there (detected: the unlisted ones count too)
    fixture = str(detect_fixtures / "nvidia_rtx5090_1x.yaml")
    rtx = next(r for r in _json(capsys, "catalog", "hardware", "--replay", fixture) if r["id"] == "rtx_5090")
    offered = [m for m in _json(capsys, "catalog", "models", "--hardware", "rtx_5090", "--replay", fixture)
               if m["status"] != "unsupported"]
    assert rtx["models"] == len(offered) and rtx["verified_models"] == sum(m["status"] == "verified" for m in offered)
    code, out, _ = _run(capsys, "catalog", "hardware", "--replay", fixture)
    line = next(ln for ln in out.splitlines() if ln.startswith("rtx_5090 "))
    assert "yes (detected)" in line and "★ preselected (exact)" in line


def test_recipes_dir_lists_exactly_that_checkout(capsys, shared: Path) -> None:
    from vllm_deploy_wizard.catalog import load_catalog

    snapshot = shared / "recipes-snapshot"
    cat = load_catalog(snapshot)
    models = _json(capsys, "catalog", "models", "--recipes", str(snapshot))
    assert sorted(m["hf_id"] for m in models) == sorted(cat.recipes)
    hardware = _json(capsys, "catalog", "hardware", "--recipes", str(snapshot))
    assert [h["id"] for h in hardware] == list(cat.taxonomy.hardware_profiles)
    assert "ascend_910c" not in [h["id"] for h in hardware]  # a seed system the checkout lacks


# ------------------------------------------------------------------ show


def test_show_rows_are_what_plan_accepts_and_refuses(capsys) -> None:
    model = "Qwen/Qwen3-32B"
    for nodes in ("1", "2"):
        rows = _json(capsys, "catalog", "show", model, "--hardware", "h200", "--nodes", nodes)
        strategies = [r for r in rows if r["axis"] == "strategy"]
        assert strategies and all(r["model"] == model and r["hardware"] == "h200" for r in rows)
        for r in strategies:
            code, _, err = _run(capsys, "plan", "--model", model, "--hardware", "h200", "--nodes", nodes,
                                "--strategy", r["id"], "--json")
            if r["state"] == "available":
                assert code == 0, (r, err)
            else:
                assert code == 2 and r["reason"] in err, (r, err)
    dep = next(r for r in _json(capsys, "catalog", "show", model, "--hardware", "h200")
               if r["axis"] == "strategy" and r["id"] == "single_node_dep")
    assert dep["state"] == "disabled" and dep["reason"] == "DEP needs an MoE model"
    rows = _json(capsys, "catalog", "show", model, "--hardware", "h200")
    kv = [r for r in rows if r["axis"] == "kv_offload"]
    assert {"offloading", "mooncake"} <= {r["id"] for r in rows if r["axis"] == "kv_offload_group"}
    assert {"none", "offloading_cpu", "offloading_fs", "kv_store_distributed_mooncake"} <= {r["id"] for r in kv}
    for r in kv:  # every kv_offload id is a value plan takes (or refuses with the same reason)
        code, _, err = _run(capsys, "plan", "--model", model, "--hardware", "h200", "--kv-offload", r["id"], "--json")
        assert (code == 0) == (r["state"] == "available"), (r, err)
        if r["state"] != "available":
            assert r["reason"] in err


def test_show_text_names_the_resolved_values_and_the_reasons(capsys) -> None:
    code, out, _ = _run(capsys, "catalog", "show", "qwen/qwen3-32b", "--hardware", "H200")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("Qwen/Qwen3-32B: ")
    assert lines[1].startswith("hardware: h200 (H200) — ")
    assert "strategy single_node_tp, 1 node(s) of 8 device(s)" in lines[2]
    dep = next(ln for ln in lines if ln.split()[:2] == ["strategy", "single_node_dep"])
    assert dep.split()[2] == "disabled" and dep.endswith("DEP needs an MoE model")
    code, out, _ = _run(capsys, "catalog", "show", "Qwen/Qwen3-32B", "--hardware", "xeon6")
    assert "hardware: xeon6 (Xeon 6) — hidden: Xeon 6 is a restricted profile this recipe does not list" in out


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("argv, message", [
    (["catalog", "models", "--hardware", "h2000"], "--hardware 'h2000': unknown hardware profile in the bundled "
                                                    "catalog (did you mean 'h200'"),
    (["catalog", "models", "--task", "txt"],
     "--task 'txt': unknown task in the bundled catalog (did you mean 'text'?)"),
    (["catalog", "show", "Qwen/Qwen3-32x"], "MODEL 'Qwen/Qwen3-32x': no recipe in the bundled catalog has that id "
                                            "(did you mean 'Qwen/Qwen3-32B'"),
    (["catalog", "show", "Qwen/Qwen3-32B", "--hardware", "mi300"], "--hardware 'mi300': unknown hardware profile"),
    (["catalog", "show", "Qwen/Qwen3-32B", "--nodes", "17"], "--nodes 17: expected a node count 1..16"),
    (["catalog", "hardware", "--scenario", "x"], "--scenario needs --replay FILE"),
])
def test_unknown_values_exit_2_naming_the_flag(capsys, argv: list[str], message: str) -> None:
    code, out, err = _run(capsys, *argv)
    assert code == 2 and out == "" and message in err and "Traceback" not in err
